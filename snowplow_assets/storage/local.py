"""The lake on a local disk, or on a shared mount.

**Conditional writes.** `write_text_if_unchanged` is a compare-and-swap for writers on one machine, or on
machines that share a mount whose locks they share. A file's token is the SHA-256 of its bytes as read: equal
bytes are the same version for every purpose of a compare-and-swap (a writer whose file was changed and changed
back decides on what is there), where an inode number is reused once a replace frees it and a modification
time has the file system's granularity, so two writes in one tick would look alike. The writer holds an
exclusive `flock` on a lock file beside the target, `.<name>.lock`, while it hashes the current file, compares
and replaces it whole (`write_text`: a temporary file and `os.replace`), so no other conditional writer of the
file can come between its comparison and its write. `flock` belongs to an open file, not to a process, and
every write opens the lock file anew, so threads of one process exclude each other too. The lock file stays
in place: one deleted while a writer waited on it would let the next writer lock a new file of the same name
beside it. Its dot keeps it out of every reader's data files. A lock is released when its holder exits, a
crash included. On NFS, Linux emulates `flock` with POSIX locks that the server arbitrates between machines;
a mount whose locks stay on each machine (some FUSE and SMB mounts) serialises the writers of one machine
only: run the writers on one machine, or keep the lake on S3. A refusal here comes before any write, in the
same process, with no retry, so unlike on S3 (s3.py) a refused write can never have been this writer's own,
and nothing is read back.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import shutil
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO

from snowplow_assets.storage.base import FileChangedSinceRead, FileEntry, LakeFileSystem, is_data_file, listing_order


class LocalFileSystem(LakeFileSystem):
    def list_dir(self, uri: str, start_after: str | None = None, prefix: str = "") -> list[FileEntry]:
        try:
            entries = [e for e in os.scandir(uri) if e.name.startswith(prefix)]
        except (FileNotFoundError, NotADirectoryError):
            return []
        listed = sorted((entry for e in entries if (entry := _entry(e)) is not None), key=listing_order)
        if start_after is None:
            return listed
        after = start_after + "/\U0010ffff"
        return [e for e in listed if listing_order(e) > after]

    def list_files(self, uri: str) -> list[FileEntry]:
        """Every file below `uri`, through links to folders too, as Hadoop's local file system and `find -L`
        see them: a run folder assembled from links is read whole (os.walk's default passed over a linked
        sub-folder, and the run then marked its folder Processed without those files, until 2026-11-28).
        A folder reached twice, by a link back up the tree or by two links, is listed once, by the first
        path in name order, so that no file's lines are read twice."""
        found: list[FileEntry] = []
        listed: set[str] = set()
        for directory, dirs, files in os.walk(uri, onerror=_unless_gone, followlinks=True):
            real = os.path.realpath(directory)
            if real in listed:
                dirs.clear()
                continue
            listed.add(real)
            dirs.sort()  # the walk's order decides which path of a folder linked twice is listed
            found += [e for name in files if (e := _file_entry(os.path.join(directory, name), name)) is not None]
        return sorted(found, key=lambda e: e.uri)

    def exists(self, uri: str) -> bool:
        return os.path.exists(uri)

    def read_text(self, uri: str) -> str:
        return Path(uri).read_text(encoding="utf-8")

    def open_binary(self, uri: str) -> BinaryIO:
        return open(uri, "rb")

    def read_head(self, uri: str, size: int) -> bytes:
        with open(uri, "rb") as file:
            return file.read(size)

    def write_text(self, uri: str, text: str) -> None:
        directory = os.path.dirname(uri)
        os.makedirs(directory, exist_ok=True)
        # Created with os.open's 0o666, so the umask gives it the mode any new file gets, as Spark's part files
        # beside it have (tempfile's 0o600 made markers and indexes unreadable to other users). The hidden
        # name keeps it out of every reader's data files until the rename.
        temporary = os.path.join(directory, f".tmp-{uuid.uuid4().hex}")
        try:
            with open(os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666), "w", encoding="utf-8") as f:
                f.write(text)
            os.replace(temporary, uri)
        except BaseException:
            with contextlib.suppress(FileNotFoundError):
                os.remove(temporary)
            raise

    def read_text_with_token(self, uri: str) -> tuple[str | None, str | None]:
        try:
            data = Path(uri).read_bytes()
        except FileNotFoundError:
            return None, None
        return data.decode("utf-8"), _token(data)

    def write_text_if_unchanged(self, uri: str, text: str, token: str | None) -> None:
        directory, name = os.path.split(uri)
        os.makedirs(directory, exist_ok=True)
        with _locked(os.path.join(directory, f".{name}.lock")):
            try:
                current = _token(Path(uri).read_bytes())
            except FileNotFoundError:
                current = None
            if current != token:
                raise FileChangedSinceRead(uri)
            self.write_text(uri, text)

    def delete(self, uri: str) -> None:
        """As the contract says: a path gone meanwhile is no error, and anything else left in place is raised
        (until 2026-11-28 `rmtree` ignored every error, and a web-model day that could not be removed was
        reported dropped). A tree's own markers go first, as on S3, so that a tree left part-way never looks
        complete. Links are removed, never followed."""
        if not (os.path.isdir(uri) and not os.path.islink(uri)):
            with contextlib.suppress(FileNotFoundError):
                os.remove(uri)
            return
        with contextlib.suppress(FileNotFoundError):
            for marker in os.scandir(uri):
                if not is_data_file(marker.name) and not marker.is_dir(follow_symlinks=False):
                    with contextlib.suppress(FileNotFoundError):
                        os.remove(marker.path)
            shutil.rmtree(uri, onerror=_unless_gone_on_delete)

    def move(self, source: str, target: str) -> None:
        if os.path.lexists(target):
            raise FileExistsError(target)
        os.makedirs(os.path.dirname(target), exist_ok=True)
        os.rename(source, target)

    def make_dirs(self, uri: str) -> None:
        os.makedirs(uri, exist_ok=True)

    def spark_path(self, uri: str) -> str:
        # Hadoop wants the path unescaped: as_uri() would turn run= into run%3D.
        return "file://" + str(Path(uri).absolute())


def _token(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


@contextlib.contextmanager
def _locked(lock_file: str) -> Iterator[None]:
    """An exclusive `flock` on `lock_file`, created if need be (with the mode any new file gets, as
    `write_text`'s), held until the block ends."""
    with open(os.open(lock_file, os.O_RDWR | os.O_CREAT, 0o666), "r+b") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield


# A listing reads names first and their sizes and times after: a file renamed or removed in between (a writer
# moving its output into place, as Spark's committer does) is not listed, as a listing a moment later would
# not list it, instead of failing the whole listing (and with it a sensor's tick).
def _entry(e: os.DirEntry) -> FileEntry | None:
    try:
        is_dir = e.is_dir()
        stat = e.stat()
    except FileNotFoundError:
        return None
    return FileEntry(e.path, e.name, is_dir, 0 if is_dir else stat.st_size, stat.st_mtime, stat.st_ctime)


def _unless_gone(error: OSError) -> None:
    """os.walk's error handler: a folder gone (or a file where it was) holds nothing to list; any other error
    is raised. os.walk's default passes over a sub-folder it cannot read, and a run would then process its
    folder without that sub-folder's files, and mark it Processed (until 2026-11-28)."""
    if not isinstance(error, (FileNotFoundError, NotADirectoryError)):
        raise error


def _unless_gone_on_delete(function: object, path: str, exc_info: tuple) -> None:
    """rmtree's error handler: a file or folder gone meanwhile is no error, anything else is."""
    if not isinstance(exc_info[1], FileNotFoundError):
        raise exc_info[1]


def _file_entry(path: str, name: str) -> FileEntry | None:
    try:
        stat = os.stat(path)
    except FileNotFoundError:
        return None
    return FileEntry(path, name, False, stat.st_size, stat.st_mtime, stat.st_ctime)
