"""Finding enriched run folders that are new and ready to shred. Pure listing, no Spark: sensors call it.

Readiness rule: a run folder is ready when it holds a `_SUCCESS` marker (written last by the job that
fills it), or when it holds at least one data file and nothing in it has changed for
`ready_after_seconds`. A folder still being copied in without a marker is therefore picked up only after
it has been quiet for that long; one without any data file is never ready.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from snowplow_assets.lake import RUN_FOLDER
from snowplow_assets.storage import FileEntry, LakeFileSystem, is_data_file

SUCCESS_MARKER = "_SUCCESS"


@dataclass(frozen=True)
class NewRunFolders:
    ready: list[str]  # sorted, at most `limit`
    waiting: list[str]  # new but not ready yet
    ignored: list[str]  # folders whose names are not run=YYYY-MM-DD-hh-mm-ss
    more: bool  # ready folders beyond `limit` remain for the next call


def readiness(files: Iterable[FileEntry], now: float, ready_after_seconds: float) -> tuple[bool, str]:
    files = list(files)
    if any(f.name == SUCCESS_MARKER for f in files):
        return True, f"{SUCCESS_MARKER} marker present"
    data = [f for f in files if is_data_file(f.name)]
    if not data:
        return False, "no data files yet"
    quiet_for = now - max(f.modified for f in files)
    if quiet_for >= ready_after_seconds:
        return True, f"unchanged for {quiet_for:.0f}s"
    return False, f"changed {quiet_for:.0f}s ago, waiting for {ready_after_seconds}s of quiet"


def find_new_run_folders(
    fs: LakeFileSystem,
    enriched_uri: str,
    known: set[str],
    now: float,
    ready_after_seconds: float,
    limit: int,
) -> NewRunFolders:
    ready: list[str] = []
    waiting: list[str] = []
    ignored: list[str] = []
    for entry in fs.list_dir(enriched_uri):
        if not entry.is_dir or entry.name in known:
            continue
        if not RUN_FOLDER.match(entry.name):
            ignored.append(entry.name)
            continue
        if len(ready) > limit:
            break
        is_ready, _ = readiness(fs.list_files(entry.uri), now, ready_after_seconds)
        (ready if is_ready else waiting).append(entry.name)
    return NewRunFolders(ready=ready[:limit], waiting=waiting, ignored=ignored, more=len(ready) > limit)
