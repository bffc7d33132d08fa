"""File operations on the lake, the same for a local folder and for S3.

Spark reads and writes the data; this interface covers what Spark does not: listing folders for sensors,
small JSON files such as the completion marker, and publishing a staged folder in place of an old one.
"""

from __future__ import annotations

from typing import Any

from snowplow_assets.storage.base import (
    FileChangedSinceRead,
    FileEntry,
    LakeFileSystem,
    data_files,
    failed_on_a_gone_file,
    is_data_file,
    listing_order,
    path_below,
    publishing_order,
    retired_copy_of,
)
from snowplow_assets.storage.local import LocalFileSystem
from snowplow_assets.storage.s3 import DeleteError, S3FileSystem, parse_s3_uri


def filesystem_for(root: str, s3_client: Any = None, s3_scheme: str | None = None) -> LakeFileSystem:
    """The file system of a lake root. For `s3://` roots, `s3_client` (a boto3 S3 client, as Dagster's
    S3Resource gives) and `s3_scheme` default to what the SNOWPLOW_S3_* settings describe."""
    if root.startswith("s3://"):
        parse_s3_uri(root)
        if s3_client is None or s3_scheme is None:
            from snowplow_assets.settings import Settings  # settings imports this package

            settings = Settings()
            s3_scheme = s3_scheme or settings.s3_scheme
            if s3_client is None:
                import boto3

                s3_client = boto3.client("s3", region_name=settings.s3_region, endpoint_url=settings.s3_endpoint_url)
        return S3FileSystem(s3_client, s3_scheme)
    if "://" in root:
        raise ValueError(f"unsupported lake root {root!r}: a local folder or an s3:// URI")
    return LocalFileSystem()


__all__ = [
    "DeleteError",
    "FileChangedSinceRead",
    "FileEntry",
    "LakeFileSystem",
    "LocalFileSystem",
    "S3FileSystem",
    "data_files",
    "failed_on_a_gone_file",
    "filesystem_for",
    "is_data_file",
    "listing_order",
    "path_below",
    "publishing_order",
    "retired_copy_of",
]
