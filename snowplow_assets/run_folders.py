"""Finding input folders that are new and ready to process. Pure listing, no Spark: sensors call it.

One mechanism for every kind of input folder: enriched run folders (`enriched/run=…`) and CDC landing
folders (`cdc/landing/<folder>`) differ only in the pattern their names must match.

Readiness rule: a folder is ready when it holds at least one data file and either a `_SUCCESS` marker at
its top that no file in it is newer than (the marker was written last, as the job that fills it writes it),
or nothing in it has changed for `ready_after_seconds`. A folder still being copied in without a marker is
therefore picked up only after it has been quiet for that long; one without any data file is never ready,
a marker alone included. What is a data file is decided by `storage.data_files`, the rule the jobs read
their folders by: a file in a writer's staging folder (`_temporary/…`) is not one, so a folder is never
ready on files its job would not read.

A copy in key order (`aws s3 cp --recursive`, `aws s3 sync`, rclone) writes `_SUCCESS` first, since `_`
sorts before every lower-case letter: until 2026-11-27 such a marker made the folder ready at once, and a
tick between the marker and the last part file registered a folder with part of its data (or none), which
was shredded so and marked Processed. A file newer than the marker now sends the folder to the quiet rule
(hidden and marker files beside the marker aside, such as Hadoop's `._SUCCESS.crc`, which a local disk's
writer closes just after it). The limit: S3 lists times to the second, so a part file copied in the
marker's second does not count as newer, and a tick in that very second may still see part of the copy.

A folder with a write under way that its listing does not show is not ready either, marker or not: on S3, a
multipart upload below it not completed nor aborted (`LakeFileSystem.uploads_in_progress`). S3 lists an
object only once its upload completes, and dates an object uploaded in parts from the upload's start, so
until 2026-11-27 a copy that had sent one part file and spent longer than the ready time uploading the next
(`aws s3 cp` sends files of 8 MB and more in parts) left a folder that looked quiet, and it was shredded
without that file. An upload abandoned without an abort (a copy killed) keeps the folder waiting, and the
cursor behind it, until it is aborted (`aws s3api abort-multipart-upload`, or a bucket lifecycle rule
`AbortIncompleteMultipartUpload`) or the folder is skipped: a file that never arrived is no complete folder.
Such an upload also keeps a folder without data files waiting rather than empty, which the cursor would pass,
and so does an S3 folder without any file (the console's "Create folder" writes a key `run=…/` alone), which
has no time of its own: until 2026-11-27 it passed as empty and quiet, and the files uploaded into it a moment
later waited for the next whole listing. Left unfilled, it holds the cursor (the ticks list from before it)
and is logged as not ready until it is filled or removed.

Quiet time is the storage's own clock (`LakeFileSystem.clock`) less those times: on S3 the `Date` its responses
carry, since S3 stamps `LastModified` by that clock. Until 2026-11-28 it was the host's clock, and a host
running ahead of S3's took a folder still being copied for quiet.

Times are each file's last change (`FileEntry.last_change`): on a local disk the later of its modification
time and its status change time (ctime). A copy may set the first, never the second: `aws s3 sync` and
`aws s3 cp` to a disk give each file its object's time, `cp -p` and `rsync -a` keep the source's. Until
2026-11-27 a folder copied so looked quiet from its first file on, and its `_SUCCESS`, copied first in key
order but dated last at the source, vouched for it: it was registered with part of its data. The limit:
the kernel's change times tick every few milliseconds, so a file copied in the marker's tick is not newer.

Sensors scan with a cursor (`scan_folders`): folder names sort by time for run folders, and a tick lists
only what sorts after the last folder it handled. See `scan_folders` for what the cursor passes over and
how late folders are found.
"""

from __future__ import annotations

import re
from collections.abc import Container, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

from snowplow_assets.lake import join_uri
from snowplow_assets.shown import shown
from snowplow_assets.storage import FileEntry, LakeFileSystem, data_files, is_data_file, path_below

SUCCESS_MARKER = "_SUCCESS"
LISTING_THREADS = 8


@dataclass(frozen=True)
class NewRunFolders:
    ready: list[str]  # sorted, at most `limit`
    waiting: list[str]  # new but not ready yet
    ignored: list[str]  # folders whose names do not match the pattern (run=YYYY-MM-DD-hh-mm-ss for run folders)
    more: bool  # ready folders beyond `limit` remain for the next call
    unreadable: dict[str, str]  # new folders whose listing failed (a sub-folder's permissions): name -> error
    empty_named: bool  # objects lie below a folder with an empty name, which no scan can take (FolderScan)


def readiness(folder: str, files: Iterable[FileEntry], now: float, ready_after_seconds: float) -> tuple[bool, str]:
    """Whether `folder` is ready, and why, from `files`, its listing (`list_files`)."""
    files = list(files)
    if not data_files(folder, files):
        return False, "no data files yet"
    marker = next((f for f in files if path_below(folder, f) == SUCCESS_MARKER), None)
    if marker is not None and all(f.last_change <= marker.last_change for f in _content(folder, files)):
        return True, f"{SUCCESS_MARKER} marker present"
    # Every file counts here, staged ones too: a writer still busy in `_temporary/` keeps the folder waiting.
    quiet_for = now - max(f.last_change for f in files)
    if quiet_for >= ready_after_seconds:
        return True, f"unchanged for {quiet_for:.0f}s"
    return False, f"changed {quiet_for:.0f}s ago, waiting for {ready_after_seconds}s of quiet"


def still_being_written(fs: LakeFileSystem, folder: str, now: float, ready_after_seconds: float) -> str | None:
    """Why the folder `folder` is not ready now although it holds data files or an upload under way, or None.

    For a run about to read a folder that a sensor found ready earlier: the run may start hours later, and
    by then the folder may be written again (deleted and landed again under its name, or a copy under way
    that a tick took for complete); and for `process --run` and `--ingest`, which name a folder. A folder
    without data files, uploads or staged files is not this function's business (None): its job reads it as
    empty, and says so. One whose only files are a writer's staged ones (`_temporary/…`) is a folder being
    written: read as empty, it was marked Processed and its data, once moved into place, never read (until
    2026-11-28)."""
    uploads = fs.uploads_in_progress(folder)
    if uploads:
        return f"{len(uploads)} file(s) still being uploaded: {shown([path_below(folder, u) for u in uploads])}"
    files = fs.list_files(folder)
    if not data_files(folder, files):
        staged = [path_below(folder, f) for f in files if "/" in path_below(folder, f)]
        return f"no data files yet, only a writer's staged files: {shown(staged)}" if staged else None
    ready, why = readiness(folder, files, now, ready_after_seconds)
    return None if ready else why


def registered_not_ready(
    fs: LakeFileSystem, parent_uri: str, names: Iterable[str], now: float, ready_after_seconds: float
) -> dict[str, str]:
    """Of registered folders about to get a run (a Resolved item, one registered and never run), those not
    ready now, with why (still_being_written); one that cannot be listed is not ready either. An operator who
    resolves an item right after sending its files again would otherwise see its run refuse the folder and
    leave the item Failed once more (until 2026-11-28). `now` is by the storage's clock (LakeFileSystem.clock)."""
    waiting = {}
    for name in names:
        try:
            why = still_being_written(fs, join_uri(parent_uri, name), now, ready_after_seconds)
        except OSError as error:
            why = f"cannot be listed: {error}"
        if why:
            waiting[name] = why
    return waiting


def _content(folder: str, files: list[FileEntry]) -> list[FileEntry]:
    """What a `_SUCCESS` marker vouches for: every file but the hidden and marker files beside it at the
    folder's top (Hadoop's `._SUCCESS.crc`, written just after the marker on a local disk). Staged files in a
    writer's sub-folder (`_temporary/…`) count: a writer still busy there makes the marker premature."""
    return [f for f in files if "/" in path_below(folder, f) or is_data_file(path_below(folder, f))]


def empty_named_warning(parent_uri: str) -> str:
    return (
        f"ignoring the objects below {parent_uri.rstrip('/')}//, a folder with an empty name (a doubled slash in "
        f"the copy's target), which no item can have: move them to {parent_uri.rstrip('/')}/"
    )


def find_new_folders(
    fs: LakeFileSystem,
    parent_uri: str,
    known: set[str],
    now: float,
    ready_after_seconds: float,
    limit: int,
    pattern: re.Pattern[str],
) -> NewRunFolders:
    """Sub-folders of `parent_uri` not in `known` whose names match `pattern`, split into ready and waiting
    (folders without data files wait too): one whole scan, as `snowplow-assets process` makes it."""
    scan = scan_folders(fs, parent_uri, known, now, ready_after_seconds, limit, pattern)
    return NewRunFolders(
        scan.ready, scan.waiting + scan.empty, scan.ignored, scan.more, scan.unreadable, scan.empty_named
    )


@dataclass(frozen=True)
class FolderScan:
    ready: list[str]  # unregistered folders ready to process, in listing order, at most `limit`
    waiting: list[str]  # unregistered folders not ready yet
    ignored: list[str]  # folders whose names do not match the pattern
    empty: list[str]  # unregistered folders with no data file that have been quiet for the ready time
    more: bool  # the scan stopped at `limit` ready folders; more may follow
    handled_through: str | None  # the cursor: every folder up to this name needs nothing more
    listed: int  # folders the listing returned
    registered: int = 0  # of them, folders registered already (not opened)
    unexamined: int = 0  # of them, unregistered folders after where `limit` stopped the scan, left for later
    unreadable: dict[str, str] = field(default_factory=dict)  # of them, folders whose listing failed: name -> error
    # Objects below a folder with an empty name (`enriched//run=…/part-0`, from a doubled slash), which S3 allows
    # and no listing shows as a folder: said apart, since no item can be named so (until 2026-11-28, not at all).
    empty_named: bool = False

    def summary(self) -> str:
        """Where every listed folder went, in counts that add up to `listed`."""
        return (
            f"{self.listed} folders: {len(self.ready)} new and ready, {len(self.waiting)} not ready yet, "
            f"{len(self.empty)} without data files, {len(self.unreadable)} unreadable, "
            f"{len(self.ignored)} whose names do not fit, {self.registered} registered already, "
            f"{self.unexamined} left for the next ticks"
        )


def scan_folders(
    fs: LakeFileSystem,
    parent_uri: str,
    registered: Container[str],
    now: float,
    ready_after_seconds: float,
    limit: int,
    pattern: re.Pattern[str],
    start_after: str | None = None,
    examine_at_most: int | None = None,
) -> FolderScan:
    """Sub-folders of `parent_uri` sorting after `start_after`: the ready ones not yet `registered`, and a cursor.

    Only unregistered folders are opened (one listing each, `LISTING_THREADS` at a time, since on S3 each
    is a round trip) to judge readiness. The cursor, `handled_through`, moves over every folder whose name
    fits `pattern` and that is registered, empty or ready now, and stops before the first folder that is
    still waiting (so the next scan looks at it again) or where `limit` cut the scan short. It never rests
    on a name that does not fit: run folder names sort by time, and one such as `tmp` or `~old` sorts after
    every run folder still to come, which scans after it would not see (until 2026-11-27 they waited for
    the next whole listing). Names that do not fit after the cursor are listed, and logged, again.

    A folder that appears later with a name sorting before the cursor, or an empty folder that is filled
    later, is not seen by scans that start after the cursor: callers rescan from the start
    (`start_after=None`) now and then, which costs one listing page per 1,000 folders plus one listing per
    unregistered folder.

    `examine_at_most` bounds the unregistered folders opened, in name order, as `limit` bounds the ready
    ones: folders after the bound are left for later scans like those after `limit`. A sensor's tick must end
    within Dagster's timeout whatever was copied in; see folder_discovery.FOLDERS_EXAMINED_PER_TICK.

    A folder whose listing fails with an OSError (a sub-folder its owner's permissions keep from this user) is
    `unreadable`, with the error: it holds the cursor back like a waiting one, and the other folders go on
    (until 2026-11-28 it failed the whole scan, and so every sensor tick, until someone mended it).

    A whole scan (no `start_after`) also asks whether objects lie below a folder with an empty name, which
    the listing leaves out (`empty_named`; one more request on S3).
    """
    entries = [e for e in fs.list_dir(parent_uri, start_after=start_after) if e.is_dir]
    todo = [e for e in entries if pattern.fullmatch(e.name) and e.name not in registered]
    verdicts: dict[str, str] = {}  # name -> ready | waiting | empty | unreadable, for the unregistered examined
    unreadable: dict[str, str] = {}
    ready_count, position = 0, 0
    examinable = todo if examine_at_most is None else todo[:examine_at_most]
    with ThreadPoolExecutor(LISTING_THREADS) as pool:
        while position < len(examinable) and ready_count < limit:
            window = examinable[position : position + limit - ready_count]
            position += len(window)
            for entry, verdict in zip(window, pool.map(lambda e: _judged(fs, e, now, ready_after_seconds), window)):
                if isinstance(verdict, OSError):
                    unreadable[entry.name], verdict = str(verdict), "unreadable"
                verdicts[entry.name] = verdict
                ready_count += verdict == "ready"

    ready: list[str] = []
    waiting: list[str] = []
    ignored: list[str] = []
    empty: list[str] = []
    handled_through = start_after
    blocked = False  # a waiting folder, or the first one beyond the limit, holds the cursor back
    known = unexamined = 0
    for entry in entries:
        name = entry.name
        if not pattern.fullmatch(name):
            # Never the cursor: a name that does not fit may sort after every run folder to come (`tmp`).
            ignored.append(name)
            continue
        if name in registered:
            known += 1
        else:
            verdict = verdicts.get(name)
            if verdict is None:  # beyond `limit` or `examine_at_most`: not examined this time
                unexamined += 1
                blocked = True
                continue
            if verdict != "unreadable":
                {"ready": ready, "waiting": waiting, "empty": empty}[verdict].append(name)
            blocked = blocked or verdict in ("waiting", "unreadable")
        if not blocked:
            handled_through = name
    more = position < len(todo)
    return FolderScan(
        ready,
        waiting,
        ignored,
        empty,
        more,
        handled_through,
        len(entries),
        known,
        unexamined,
        unreadable,
        empty_named=start_after is None and fs.holds_empty_named_folder(parent_uri),
    )


def _judged(fs: LakeFileSystem, folder: FileEntry, now: float, ready_after_seconds: float) -> str | OSError:
    try:
        return _verdict(fs, folder, now, ready_after_seconds)
    except OSError as error:
        return error


def _verdict(fs: LakeFileSystem, folder: FileEntry, now: float, ready_after_seconds: float) -> str:
    files = fs.list_files(folder.uri)
    if readiness(folder.uri, files, now, ready_after_seconds)[0]:
        # Asked only of a folder that looks ready: on S3, one request more (`uploads_in_progress`).
        return "waiting" if fs.uploads_in_progress(folder.uri) else "ready"
    if not files and not folder.last_change:
        # No file, and no time of its own (a prefix on S3: the console's "Create folder" key `run=…/` alone):
        # waiting for its files, not empty since 1970, which the cursor would pass.
        return "waiting"
    quiet_for = now - max([folder.last_change, *(f.last_change for f in files)])
    if not data_files(folder.uri, files) and quiet_for >= ready_after_seconds:
        # Not if its first file is still being uploaded: "empty" lets the cursor pass the folder.
        return "waiting" if fs.uploads_in_progress(folder.uri) else "empty"
    return "waiting"
