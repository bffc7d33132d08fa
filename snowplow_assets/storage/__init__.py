"""File operations on the lake, the same for a local folder and for S3.

Spark reads and writes the data; this interface covers what Spark does not: listing folders for sensors,
small JSON files such as the completion marker, and publishing a staged folder in place of an old one.
"""

from __future__ import annotations

from snowplow_assets.storage.base import FileEntry, LakeFileSystem, is_data_file
from snowplow_assets.storage.local import LocalFileSystem


def filesystem_for(root: str) -> LakeFileSystem:
    if root.startswith("s3://"):
        raise ValueError(f"S3 lake roots are not supported yet: {root}")
    return LocalFileSystem()


__all__ = ["FileEntry", "LakeFileSystem", "LocalFileSystem", "filesystem_for", "is_data_file"]
