from __future__ import annotations

import abc
import uuid
from collections.abc import Iterable
from dataclasses import dataclass
from typing import BinaryIO


@dataclass(frozen=True)
class FileEntry:
    uri: str
    name: str
    is_dir: bool
    size: int = 0
    modified: float = 0.0  # epoch seconds; for a folder listed without its files, 0


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


class LakeFileSystem(abc.ABC):
    @abc.abstractmethod
    def list_dir(self, uri: str, start_after: str | None = None) -> list[FileEntry]:
        """Immediate children of a folder, sorted by name; empty when the folder does not exist.

        Names compare as S3 orders keys: a folder as `name/`. With `start_after`, only the children that
        sort after the folder of that name (and after everything inside it) are listed.
        """

    @abc.abstractmethod
    def list_files(self, uri: str) -> list[FileEntry]:
        """Every file below a folder, recursively, sorted by URI."""

    @abc.abstractmethod
    def exists(self, uri: str) -> bool: ...

    @abc.abstractmethod
    def read_text(self, uri: str) -> str: ...

    @abc.abstractmethod
    def open_binary(self, uri: str) -> BinaryIO:
        """A file's bytes as a stream, for files too large to read whole (missing: FileNotFoundError)."""

    @abc.abstractmethod
    def write_text(self, uri: str, text: str) -> None:
        """Write a whole file so that a reader sees either no file, the old one, or all of the new one."""

    @abc.abstractmethod
    def delete(self, uri: str) -> None:
        """Remove a file or a folder tree; a missing path is not an error."""

    @abc.abstractmethod
    def move(self, source: str, target: str) -> None:
        """Move a file or folder tree to a target that does not exist yet."""

    @abc.abstractmethod
    def make_dirs(self, uri: str) -> None:
        """Create a folder and its parents; nothing to do where folders are implied by keys."""

    @abc.abstractmethod
    def spark_path(self, uri: str) -> str:
        """The path Spark's Hadoop filesystem layer understands for a lake URI."""

    def replace_tree(self, source: str, target: str) -> None:
        """Put the `source` folder in place of `target`. Atomic where a folder rename is."""
        if self.exists(target):
            retired = f"{target.rstrip('/')}.replaced-{uuid.uuid4().hex[:12]}"
            self.move(target, retired)
            self.move(source, target)
            self.delete(retired)
        else:
            self.move(source, target)
