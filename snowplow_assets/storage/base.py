from __future__ import annotations

import abc
import re
import time
import uuid
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import BinaryIO


@dataclass(frozen=True)
class FileEntry:
    uri: str
    name: str
    is_dir: bool
    size: int = 0
    modified: float = 0.0  # epoch seconds; for a folder listed without its files, 0
    # Epoch seconds of the last change of the file or its metadata where the storage keeps one apart from
    # `modified`, which a writer can set (a local disk's ctime: `cp -p`, `rsync -a` and `aws s3 sync` copy
    # files with their source's times); else None. See `last_change`.
    changed: float | None = None

    @property
    def last_change(self) -> float:
        """When the entry last changed, as far as its storage can tell: the later of `modified` and `changed`."""
        return self.modified if self.changed is None else max(self.modified, self.changed)


def listing_order(entry: FileEntry) -> str:
    """The sort key of a listing: S3's key order, in which a folder is `name/`."""
    return entry.name + "/" if entry.is_dir else entry.name


def is_data_file(name: str) -> bool:
    """Hidden files (.crc, .DS_Store) and markers (_SUCCESS, _committed_*) are not data."""
    return not name.startswith((".", "_"))


def path_below(folder: str, entry: FileEntry) -> str:
    """The path of `entry`, from a listing of `folder` (`list_files`), relative to that folder."""
    return entry.uri[len(folder.rstrip("/")) + 1 :]


def data_files(folder: str, files: Iterable[FileEntry]) -> list[FileEntry]:
    """The data files of an input folder among `files`, a listing of it: those with no hidden (`.…`) or marker
    (`_…`) file or folder anywhere in their path below the folder.

    The one rule for what an input job reads and for what makes its folder ready (run_folders.py): writers
    stage their files in such folders (Hadoop's and Spark's `_temporary/`, a copy tool's `.tmp/`) and move
    them into place when done, so a part file there is not data yet. Only the path below the folder is
    judged: the lake itself may be under a hidden folder.
    """
    return [f for f in files if all(is_data_file(part) for part in path_below(folder, f).split("/"))]


def publishing_order(path: str) -> tuple[tuple[bool, str], ...]:
    """The sort key of the order in which a tree's files are copied where a move copies file by file (S3),
    by their `path` below the tree: every folder's markers (`_…` and `.…` names: `_batch.json`,
    `_latest.json`, `_SUCCESS`) after everything else in that folder, its sub-folders included; otherwise
    key order.

    Readers take a folder with its marker as complete (cdc/batches.list_batches by `_batch.json`, the
    readiness of input folders by `_SUCCESS`), so a copy that stops part-way must not have written the
    marker yet. In plain key order `_` sorts before every lower-case letter, so `_batch.json` would be
    copied before `deleted/` and `rows/`, and `_latest.json` before the `part-*` files beside it. One rule
    for every folder, at any depth, covers every tree published by `move` or `replace_tree`, whichever
    marker it carries and wherever it sits.
    """
    *folders, name = path.split("/")
    return (*((False, folder) for folder in folders), (not is_data_file(name), name))


# The name `replace_tree` gives the old folder while it swaps a new one in: `.<name>.replaced-<hex>`. The dot
# hides an old copy that a swap cut short leaves behind from whatever looks for the lake's folders by name:
# Hadoop's readers skip hidden paths (a `model=x.replaced-…` folder would be read as a partition), and a loader
# that takes every `run=*` folder under shredded/good would load an old copy, marker and all, as a run of its
# own. Copies named before 2026-11-27 have no dot and are still recognised.
_RETIRED = re.compile(r"^\.?(.+)\.replaced-[0-9a-f]+$")
_RETIRED_PREFIXES = (".{name}.replaced-", "{name}.replaced-")


def retired_copy_of(name: str) -> str | None:
    """The folder name whose old copy `name` is, when `name` is one that `replace_tree` left behind (a swap cut
    short), else None."""
    match = _RETIRED.fullmatch(name)
    return match.group(1) if match else None


# What Hadoop expands in a path Spark reads (FileSystem.globStatus), even in a file's own name: a listed
# `x*.txt` would also read `xy.txt`, and `b[1].txt` would match only `b1.txt`. A backslash escapes them.
_HADOOP_GLOB = re.compile(r"([\\*?\[\]{}])")
# The suffixes by which Hadoop's text input decodes a file, other than gzip's `.gz` (the codecs Hadoop 3 finds
# by itself: bzip2, deflate, LZ4, Snappy, Zstandard).
_HADOOP_CODEC_SUFFIXES = (".bz2", ".deflate", ".lz4", ".snappy", ".zst")
_GZIP_MAGIC = b"\x1f\x8b"
_HEAD_READS = 8


def failed_on_a_gone_file(error: BaseException) -> bool:
    """Whether `error` is a read of a file that is gone since it was listed, from Python or from Spark (classic
    or Connect, whose errors carry the JVM's): a writer replaced or removed it meanwhile. Reading the lake
    again as it is now is then the remedy, unless the file is gone for good (cdc.history.LostHistory, a
    FileNotFoundError too, says so when it stays)."""
    text = str(error)
    return isinstance(error, FileNotFoundError) or "FILE_NOT_EXIST" in text or "FileNotFoundException" in text


class FileChangedSinceRead(Exception):
    """`write_text_if_unchanged` found the file changed, created or deleted since its token was read, and
    wrote nothing: another writer got there first. Not an OSError: nothing failed, and a retry of the same
    write would fail again; the caller has to read the file anew and decide again."""

    def __init__(self, uri: str) -> None:
        super().__init__(f"{uri} changed since it was read; nothing was written")
        self.uri = uri


class LakeFileSystem(abc.ABC):
    @abc.abstractmethod
    def list_dir(self, uri: str, start_after: str | None = None, prefix: str = "") -> list[FileEntry]:
        """Immediate children of a folder, sorted by name; empty when the folder does not exist.

        Names compare as S3 orders keys: a folder as `name/`. With `start_after`, only the children that
        sort after the folder of that name (and after everything inside it) are listed; with `prefix`, only
        those whose names start with it.
        """

    @abc.abstractmethod
    def list_files(self, uri: str) -> list[FileEntry]:
        """Every file below a folder, recursively, sorted by URI."""

    def clock(self, uri: str) -> float:
        """Now, in epoch seconds, by the clock that stamps the times of the files at `uri` (`last_change`). The
        readiness rule (run_folders.py) subtracts those times from it: by the host's clock instead, a host
        running ahead of its storage would take a folder still being copied for quiet. A local disk's times
        are the host's own."""
        return time.time()

    def holds_empty_named_folder(self, uri: str) -> bool:
        """Whether objects lie below a child of `uri` whose name is empty (`<uri>//run=…/part-0`, from a doubled
        slash in a copy's target), which `list_dir` leaves out: only an object store allows one."""
        return False

    def uploads_in_progress(self, uri: str) -> list[FileEntry]:
        """Files below a folder that are being written but that `list_files` does not show yet, each with the
        time its write began as `modified`. None on a local disk, where a file is listed (and its time moves)
        while it is written; on S3, the multipart uploads not yet completed or aborted (s3.py)."""
        return []

    @abc.abstractmethod
    def exists(self, uri: str) -> bool: ...

    @abc.abstractmethod
    def read_text(self, uri: str) -> str: ...

    @abc.abstractmethod
    def open_binary(self, uri: str) -> BinaryIO:
        """A file's bytes as a stream, for files too large to read whole (missing: FileNotFoundError)."""

    @abc.abstractmethod
    def read_head(self, uri: str, size: int) -> bytes:
        """A file's first `size` bytes, fewer for a shorter file (missing: FileNotFoundError)."""

    @abc.abstractmethod
    def write_text(self, uri: str, text: str) -> None:
        """Write a whole file so that a reader sees either no file, the old one, or all of the new one."""

    @abc.abstractmethod
    def read_text_with_token(self, uri: str) -> tuple[str | None, str | None]:
        """A file's text and a token that names this version of it, for `write_text_if_unchanged`; `(None, None)`
        when there is no file. The token is opaque, to be handed back, never compared by the caller."""

    @abc.abstractmethod
    def write_text_if_unchanged(self, uri: str, text: str, token: str | None) -> None:
        """`write_text`, only if the file is still the version `token` names (`read_text_with_token`), or still
        absent for `None`: a compare-and-swap. Else nothing is written and `FileChangedSinceRead` is raised.

        Of writers that read the same version, at most one succeeds. The comparison and the write are one step
        against other conditional writes only: a plain `write_text` of the same file may still land between
        them, so a file written this way is written this way everywhere.

        A write that was applied but whose answer was lost, and that the storage's client then sent again (S3),
        is not refused by its own success: when the file then holds exactly `text`, the write has succeeded
        (s3.py). Writers that want the refusal of a same-text write to tell them apart put something of their
        own in their text.
        """

    @abc.abstractmethod
    def delete(self, uri: str) -> None:
        """Remove a file or a folder tree; a missing path is not an error, a file left in place is
        (OSError naming it). Where files go one by one (S3), in the reverse of `publishing_order`: a
        folder's markers first."""

    @abc.abstractmethod
    def move(self, source: str, target: str) -> None:
        """Move a file or folder tree to a target that does not exist yet. Where files are copied one by
        one (S3), in `publishing_order`: a folder's markers last."""

    @abc.abstractmethod
    def make_dirs(self, uri: str) -> None:
        """Create a folder and its parents; nothing to do where folders are implied by keys."""

    @abc.abstractmethod
    def spark_path(self, uri: str) -> str:
        """The path Spark's Hadoop filesystem layer understands for a lake URI."""

    def spark_read_path(self, uri: str) -> str:
        """The path to hand Spark to read exactly the file or folder `uri`: `spark_path` with Hadoop's glob
        characters escaped (`_HADOOP_GLOB`). Spark expands a path it reads as a glob, the lake's own part
        included, so a lake under a folder such as `checkout [old]` failed every read of a folder the job had
        just written (until 2026-11-28). A path Spark writes is never expanded: writes take `spark_path`.
        Reading one such folder, Spark logs a warning with a stack trace, `FileStreamSink: Assume no metadata
        directory`, as it looks for a streaming sink's log under the escaped path taken literally; the read is
        right (storage/test_base.py)."""
        return _HADOOP_GLOB.sub(r"\\\1", self.spark_path(uri))

    def spark_file_path(self, uri: str) -> str:
        """The path to hand Spark to read exactly the file `uri`, one that a listing found.

        Hadoop's glob characters in it are escaped (`spark_read_path`), so the file is read whatever its name.
        A colon in the file's name is refused here, naming the file, before Spark starts: Hadoop makes a
        path of a name relative to its folder (the local file system's `.<name>.crc` checksum file, a glob's
        matches) and takes `a:` as a URI scheme, so such a file fails the read (URISyntaxException). A colon
        in a folder above it does no harm. The file is an error rather than skipped: a reader that passed
        over it would count its lines nowhere.
        """
        name = uri.rstrip("/").rsplit("/", 1)[-1]
        if ":" in name:
            raise ValueError(
                f"cannot read {uri!r}: Spark's Hadoop file system cannot read a file whose name holds a ':' "
                "(it takes the part before it as a URI scheme); rename the file without one"
            )
        return self.spark_read_path(uri)

    def spark_text_file_path(self, uri: str) -> str:
        """`spark_file_path` for a file whose lines Spark reads as text, refusing one that Hadoop would decode
        by its name with another codec than gzip (`_HADOOP_CODEC_SUFFIXES`), naming the file, before Spark
        starts. Lake folders hold plain or `.gz` files; a plain file named `x.bz2` or `x.snappy` was read as
        no line at all, without an error, so its lines were counted nowhere."""
        name = uri.rstrip("/").rsplit("/", 1)[-1]
        if suffix := next((s for s in _HADOOP_CODEC_SUFFIXES if name.endswith(s)), None):
            raise ValueError(
                f"cannot read {uri!r}: Spark decodes a file whose name ends in {suffix} by that codec, and lake "
                "folders hold plain or gzip (.gz) files; decompress it (or gzip it) and rename it"
            )
        return self.spark_file_path(uri)

    def spark_text_file_paths(self, uris: list[str]) -> list[str]:
        """`spark_text_file_path` of each file, refusing, all named, the files that hold gzip data under a name
        without `.gz` (their first bytes are gzip's magic number; a few bytes read of each, `_HEAD_READS` at a
        time, since on S3 each is a request). Hadoop picks the codec by the name alone, and read such a file's
        compressed bytes as lines: every event in it became bad rows and the run succeeded (until 2026-11-28).
        Writers that compress without naming it so exist (Kinesis Firehose before its file extension option)."""
        paths = [self.spark_text_file_path(uri) for uri in uris]
        unnamed = [uri for uri in uris if not uri.endswith(".gz")]
        with ThreadPoolExecutor(_HEAD_READS) as pool:
            heads = list(pool.map(lambda uri: self.read_head(uri, len(_GZIP_MAGIC)), unnamed))
        if misnamed := [uri for uri, head in zip(unnamed, heads, strict=True) if head == _GZIP_MAGIC]:
            raise ValueError(
                f"cannot read {len(misnamed)} file(s) that hold gzip data under a name without .gz, which Spark "
                f"would read as text, every line a bad row: {', '.join(misnamed)}; rename them with .gz"
            )
        return paths

    def replace_tree(self, source: str, target: str) -> None:
        """Put the `source` folder in place of `target`. Atomic where a folder rename is; elsewhere (S3)
        `target` is incomplete for a while, and `move` copies its markers last (`publishing_order`).

        Then the old copies of `target` that earlier swaps cut short left beside it go: the new folder
        supersedes them. (A reader that repairs from them, web/upsert.py's, has done so before it writes.)
        """
        target = target.rstrip("/")
        parent, name = target.rsplit("/", 1)
        if self.exists(target):
            retired = f"{parent}/.{name}.replaced-{uuid.uuid4().hex[:12]}"  # retired_copy_of names it back
            self.move(target, retired)
            self.move(source, target)
            self.delete(retired)
        else:
            self.move(source, target)
        for copy in self.retired_copies(target):
            self.delete(copy.uri)

    def retired_copies(self, target: str) -> list[FileEntry]:
        """The old copies of the folder `target` that swaps cut short left beside it (`retired_copy_of`)."""
        parent, name = target.rstrip("/").rsplit("/", 1)
        return [
            entry
            for prefix in _RETIRED_PREFIXES
            for entry in self.list_dir(parent, prefix=prefix.format(name=name))
            if entry.is_dir and retired_copy_of(entry.name) == name
        ]
