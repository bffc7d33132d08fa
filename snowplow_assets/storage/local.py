from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path
from typing import BinaryIO

from snowplow_assets.storage.base import FileEntry, LakeFileSystem, listing_order


class LocalFileSystem(LakeFileSystem):
    def list_dir(self, uri: str, start_after: str | None = None) -> list[FileEntry]:
        try:
            entries = list(os.scandir(uri))
        except (FileNotFoundError, NotADirectoryError):
            return []
        listed = sorted((_entry(e) for e in entries), key=listing_order)
        if start_after is None:
            return listed
        after = start_after + "/\U0010ffff"
        return [e for e in listed if listing_order(e) > after]

    def list_files(self, uri: str) -> list[FileEntry]:
        found: list[FileEntry] = []
        for directory, _dirs, files in os.walk(uri):
            for name in files:
                path = os.path.join(directory, name)
                stat = os.stat(path)
                found.append(FileEntry(path, name, False, stat.st_size, stat.st_mtime))
        return sorted(found, key=lambda e: e.uri)

    def exists(self, uri: str) -> bool:
        return os.path.exists(uri)

    def read_text(self, uri: str) -> str:
        return Path(uri).read_text(encoding="utf-8")

    def open_binary(self, uri: str) -> BinaryIO:
        return open(uri, "rb")

    def write_text(self, uri: str, text: str) -> None:
        directory = os.path.dirname(uri)
        os.makedirs(directory, exist_ok=True)
        with tempfile.NamedTemporaryFile("w", encoding="utf-8", dir=directory, prefix=".tmp-", delete=False) as f:
            f.write(text)
            temporary = f.name
        os.replace(temporary, uri)

    def delete(self, uri: str) -> None:
        if os.path.isdir(uri) and not os.path.islink(uri):
            shutil.rmtree(uri, ignore_errors=True)
        elif os.path.lexists(uri):
            os.remove(uri)

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


def _entry(e: os.DirEntry) -> FileEntry:
    stat = e.stat()
    return FileEntry(e.path, e.name, e.is_dir(), 0 if e.is_dir() else stat.st_size, stat.st_mtime)
