"""The lake on S3: `s3://bucket/prefix` URIs, file operations with boto3, and what Spark needs to reach it.

Listing is what sensors pay for, so it is done the way S3 is cheap: one `ListObjectsV2` page per 1,000
children of a folder, with `Delimiter='/'` so that a folder's contents are never walked to find its
sub-folders, and `StartAfter` so that a sensor with a cursor lists only what sorts after it. A folder that
looks ready costs one `ListMultipartUploads` more (`uploads_in_progress`): a file still being uploaded in
parts is in no listing of objects, and the one it will be dates from the upload's start.

S3 has no rename: `move` copies every object and then deletes the originals, so it is not atomic, and
`replace_tree` on S3 leaves a moment in which the target is incomplete. Readers rely on markers instead:
`shredding_complete.json`, written last, as the Snowplow loaders do, and the markers at the root of the trees
that are moved into place (a CDC batch's `_batch.json`, the latest view's `_latest.json`). So `move` copies a
folder's markers after everything else in it (`publishing_order`), and `delete` removes them first, in a
request of their own: a copy or a removal that stops part-way leaves a tree without its marker, never a marked
tree with files missing. A key DeleteObjects could not remove is an error, not a leftover: it answers HTTP 200
with the keys it failed in `Errors`. An object of 8 MB or more (the managed copy's threshold) is copied in parts by
boto3's managed copy: a single `CopyObject` is refused above 5 GB, and one task's part file of a large
unsplittable input (a gzipped file of a few GB) can pass that. Until 2026-11-28 every object was one
`CopyObject`, and such a run could never publish.

**Conditional writes.** `write_text_if_unchanged` is S3's own: a PUT with `If-Match: <ETag read>` replaces
the object only if it is still that version, and with `If-None-Match: *` creates it only if there is none.
S3 answers a lost race with 412 PreconditionFailed, with 409 ConditionalRequestConflict while another
conditional write of the key is under way (the other writer may well win), and with 404 NoSuchKey when the
object read is gone: each is `FileChangedSinceRead`. The token is the ETag of the object as read.

A PUT that S3 applied but whose answer was lost (a connection dropped, a 5xx after the write) is sent again by
the client's own retries, and that retry fails its own condition: the object is no longer the version read,
because it is ours. So a lost condition on a PUT the client retried is checked by reading the object back: if
it holds exactly the bytes written, the write is taken as done. Those bytes are ours, or another writer's that
are the same to the byte, which leaves the object as this write would have: either way, what the caller
publishes is there. A PUT refused at its first attempt was not applied, and is refused without a read, so
writers of the same version are still one winner and the rest refused, even with the same text. The limit:
another writer that replaced our write between the attempt S3 applied and the retry leaves its own bytes,
and the write is reported lost although it was applied, and superseded; that is safe, since the caller reads
again and decides again on what is there. A read back that fails is raised as the error it is: the outcome is
then unknown, and no refusal is claimed.

**Spark.** A lake URI is handed to Spark with the scheme of the cluster's S3 filesystem: `s3a://` (Hadoop's
S3A connector, from the hadoop-aws jar) by default, or `s3://` where the cluster provides it (EMRFS on
EMR). `spark_s3_config` sets the S3A options this project can know: the endpoint, path-style access and
the region of a local stack such as LocalStack or MinIO. The jars are the cluster's business (README).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from email.utils import parsedate_to_datetime
from typing import Any, BinaryIO

from boto3.s3.transfer import TransferConfig

from snowplow_assets.storage.base import (
    FileChangedSinceRead,
    FileEntry,
    LakeFileSystem,
    is_data_file,
    listing_order,
    publishing_order,
)

SPARK_SCHEMES = ("s3a", "s3")
# Sorts after every key below a folder (UTF-8 orders U+10FFFF last), so StartAfter skips the whole folder.
_AFTER_FOLDER = "/\U0010ffff"
_DELETE_BATCH = 1000  # DeleteObjects takes at most 1,000 keys
_ERRORS_SHOWN = 10  # keys a DeleteError names in its message (all are in its `uris`)
# S3's answers to a conditional write that lost: the object is not the version named, another conditional
# write of it was under way, the object named is gone.
_LOST_CONDITIONAL_WRITE = ("PreconditionFailed", "ConditionalRequestConflict", "NoSuchKey")


@dataclass(frozen=True)
class S3Location:
    bucket: str
    key: str  # without a leading or trailing slash; "" for the bucket root

    @property
    def folder_prefix(self) -> str:
        return f"{self.key}/" if self.key else ""

    def uri(self, key: str) -> str:
        return f"s3://{self.bucket}/{key}"


def parse_s3_uri(uri: str) -> S3Location:
    if not uri.startswith("s3://"):
        raise ValueError(f"not an s3:// URI: {uri!r}")
    bucket, _, key = uri[len("s3://") :].partition("/")
    if not bucket:
        raise ValueError(f"an s3:// URI needs a bucket: {uri!r}")
    return S3Location(bucket, key.strip("/"))


def spark_s3_uri(uri: str, scheme: str) -> str:
    """`s3://bucket/key` as Spark should see it: the same URI with the cluster's S3 filesystem scheme."""
    if scheme not in SPARK_SCHEMES:
        raise ValueError(f"unknown Spark S3 scheme {scheme!r}; expected one of {', '.join(SPARK_SCHEMES)}")
    location = parse_s3_uri(uri)
    if location.key and {"", ".", ".."} & set(location.key.split("/")):
        # Hadoop's Path drops empty, `.` and `..` segments, so Spark would read another key than the one listed:
        # `run=x//part-0` as `run=x/part-0` (read twice when both exist, the listed one never), `a/../b` as `b`.
        raise ValueError(
            f"cannot hand {uri!r} to Spark: its key has an empty, '.' or '..' segment, which Spark's Hadoop "
            "file system drops, so it would read another object; copy the object to a key without one"
        )
    return f"{scheme}://{location.bucket}/{location.key}" if location.key else f"{scheme}://{location.bucket}/"


def spark_s3_config(scheme: str, endpoint_url: str | None, region: str | None) -> dict[str, str]:
    """Spark settings for an S3 lake. Only S3A is configured here; EMRFS (`s3`) is set up by EMR itself."""
    if scheme not in SPARK_SCHEMES:
        raise ValueError(f"unknown Spark S3 scheme {scheme!r}; expected one of {', '.join(SPARK_SCHEMES)}")
    if scheme != "s3a":
        return {}
    config: dict[str, str] = {}
    if region:
        config["spark.hadoop.fs.s3a.endpoint.region"] = region
    if endpoint_url:
        # A local stack serves every bucket under one host name, takes the credentials of the environment
        # (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN) and may speak plain HTTP.
        config["spark.hadoop.fs.s3a.endpoint"] = endpoint_url
        config["spark.hadoop.fs.s3a.path.style.access"] = "true"
        config["spark.hadoop.fs.s3a.connection.ssl.enabled"] = str(endpoint_url.startswith("https://")).lower()
        config["spark.hadoop.fs.s3a.aws.credentials.provider"] = (
            "software.amazon.awssdk.auth.credentials.EnvironmentVariableCredentialsProvider"
        )
    return config


class S3FileSystem(LakeFileSystem):
    def __init__(self, client: Any, spark_scheme: str = "s3a", copy_config: TransferConfig | None = None) -> None:
        if spark_scheme not in SPARK_SCHEMES:
            raise ValueError(f"unknown Spark S3 scheme {spark_scheme!r}; expected one of {', '.join(SPARK_SCHEMES)}")
        self.client = client
        self.spark_scheme = spark_scheme
        self.copy_config = copy_config or TransferConfig()

    def _pages(self, bucket: str, **kwargs: Any) -> Iterator[dict[str, Any]]:
        yield from self.client.get_paginator("list_objects_v2").paginate(Bucket=bucket, **kwargs)

    def list_dir(self, uri: str, start_after: str | None = None, prefix: str = "") -> list[FileEntry]:
        location = parse_s3_uri(uri)
        folder = location.folder_prefix
        kwargs: dict[str, Any] = {"Prefix": folder + prefix, "Delimiter": "/"}
        if start_after is not None:
            kwargs["StartAfter"] = folder + start_after + _AFTER_FOLDER
        entries: list[FileEntry] = []
        for page in self._pages(location.bucket, **kwargs):
            for common in page.get("CommonPrefixes", []):
                name = common["Prefix"][len(folder) :].rstrip("/")
                if name:
                    entries.append(FileEntry(location.uri(common["Prefix"].rstrip("/")), name, True))
            for obj in page.get("Contents", []):
                name = obj["Key"][len(folder) :]
                if name:  # the folder's own marker object ("prefix/") is not a child
                    entries.append(_file(location.bucket, obj, name))
        return sorted(entries, key=listing_order)

    def list_files(self, uri: str) -> list[FileEntry]:
        location = parse_s3_uri(uri)
        found = [
            _file(location.bucket, obj, obj["Key"].rsplit("/", 1)[-1])
            for page in self._pages(location.bucket, Prefix=location.folder_prefix)
            for obj in page.get("Contents", [])
            if not obj["Key"].endswith("/")
        ]
        return sorted(found, key=lambda e: e.uri)

    def holds_empty_named_folder(self, uri: str) -> bool:
        location = parse_s3_uri(uri)
        page = self.client.list_objects_v2(Bucket=location.bucket, Prefix=location.folder_prefix + "/", MaxKeys=1)
        return page.get("KeyCount", 0) > 0

    def uploads_in_progress(self, uri: str) -> list[FileEntry]:
        # S3 lists an object only once its upload completes, and dates an object uploaded in parts from the
        # upload's start, so a folder whose copy is still sending a large file looks finished, and quiet.
        location = parse_s3_uri(uri)
        pages = self.client.get_paginator("list_multipart_uploads").paginate(
            Bucket=location.bucket, Prefix=location.folder_prefix
        )
        return sorted(
            (
                FileEntry(
                    location.uri(upload["Key"]),
                    upload["Key"].rsplit("/", 1)[-1],
                    False,
                    0,
                    upload["Initiated"].timestamp(),
                )
                for page in pages
                for upload in page.get("Uploads", [])
            ),
            key=lambda e: e.uri,
        )

    def clock(self, uri: str) -> float:
        # S3 stamps LastModified by its own clock, and says its time in every response's Date header (to the
        # second, as listings give LastModified): a one-key listing of the folder asks for it. A store that
        # sends no Date (HTTP requires one of a server with a clock) is taken to share the host's clock.
        location = parse_s3_uri(uri)
        page = self.client.list_objects_v2(Bucket=location.bucket, Prefix=location.folder_prefix, MaxKeys=1)
        date = page.get("ResponseMetadata", {}).get("HTTPHeaders", {}).get("date")
        return parsedate_to_datetime(date).timestamp() if date else super().clock(uri)

    def exists(self, uri: str) -> bool:
        location = parse_s3_uri(uri)
        if location.key and self._object_exists(location):
            return True
        page = self.client.list_objects_v2(Bucket=location.bucket, Prefix=location.folder_prefix, MaxKeys=1)
        return page.get("KeyCount", 0) > 0

    def _object_exists(self, location: S3Location) -> bool:
        try:
            self.client.head_object(Bucket=location.bucket, Key=location.key)
        except self.client.exceptions.ClientError as error:
            if error.response.get("Error", {}).get("Code") in ("404", "NoSuchKey", "NotFound"):
                return False
            raise
        return True

    def read_text(self, uri: str) -> str:
        with self.open_binary(uri) as body:
            return body.read().decode("utf-8")

    def open_binary(self, uri: str) -> BinaryIO:
        location = parse_s3_uri(uri)
        try:
            # botocore's StreamingBody is a readable io.IOBase: read(n) fetches as it goes.
            return self.client.get_object(Bucket=location.bucket, Key=location.key)["Body"]
        except self.client.exceptions.NoSuchKey:
            raise FileNotFoundError(uri) from None

    def read_head(self, uri: str, size: int) -> bytes:
        location = parse_s3_uri(uri)
        try:
            response = self.client.get_object(Bucket=location.bucket, Key=location.key, Range=f"bytes=0-{size - 1}")
        except self.client.exceptions.NoSuchKey:
            raise FileNotFoundError(uri) from None
        except self.client.exceptions.ClientError as error:
            if error.response.get("Error", {}).get("Code") == "InvalidRange":  # an empty object has no byte 0
                return b""
            raise
        return response["Body"].read()

    def write_text(self, uri: str, text: str) -> None:
        # A PUT is atomic: readers see the old object or the new one, never part of it.
        location = parse_s3_uri(uri)
        self.client.put_object(Bucket=location.bucket, Key=location.key, Body=text.encode("utf-8"))

    def read_text_with_token(self, uri: str) -> tuple[str | None, str | None]:
        location = parse_s3_uri(uri)
        try:
            response = self.client.get_object(Bucket=location.bucket, Key=location.key)
        except self.client.exceptions.NoSuchKey:
            return None, None
        with response["Body"] as body:
            return body.read().decode("utf-8"), response["ETag"]

    def write_text_if_unchanged(self, uri: str, text: str, token: str | None) -> None:
        location = parse_s3_uri(uri)
        condition = {"IfNoneMatch": "*"} if token is None else {"IfMatch": token}
        data = text.encode("utf-8")
        try:
            self.client.put_object(Bucket=location.bucket, Key=location.key, Body=data, **condition)
        except self.client.exceptions.ClientError as error:
            if error.response.get("Error", {}).get("Code") not in _LOST_CONDITIONAL_WRITE:
                raise
            # Only a retried PUT can have been applied by an earlier attempt whose answer was lost.
            retried = error.response.get("ResponseMetadata", {}).get("RetryAttempts", 0) > 0
            if retried and self._holds(location, data):
                return
            raise FileChangedSinceRead(uri) from error

    def _holds(self, location: S3Location, data: bytes) -> bool:
        """Whether the object is there and its bytes are exactly `data`."""
        try:
            response = self.client.get_object(Bucket=location.bucket, Key=location.key)
        except self.client.exceptions.NoSuchKey:
            return False
        with response["Body"] as body:
            return body.read() == data

    def delete(self, uri: str) -> None:
        location = parse_s3_uri(uri)
        prefix = location.folder_prefix
        below = sorted(
            (obj["Key"] for page in self._pages(location.bucket, Prefix=prefix) for obj in page.get("Contents", [])),
            key=lambda key: publishing_order(key[len(prefix) :]),
            reverse=True,
        )

        # The tree's own markers go first, in a request of their own: were one of them left while the files
        # it vouches for went in the same request, the tree would still look complete.
        def root_marker(key: str) -> bool:
            path = key[len(prefix) :]
            return "/" not in path and not is_data_file(path)

        markers = [key for key in below if root_marker(key)]
        others = ([location.key] if location.key else []) + [key for key in below if not root_marker(key)]
        requests = [markers] if markers else []
        requests += [others[start : start + _DELETE_BATCH] for start in range(0, len(others), _DELETE_BATCH)]
        for keys in requests:
            # One request after another, stopping at the first that fails, so that what a failure leaves
            # is what the order above protects.
            response = self.client.delete_objects(
                Bucket=location.bucket, Delete={"Objects": [{"Key": key} for key in keys], "Quiet": True}
            )
            if response.get("Errors"):
                raise DeleteError(location.bucket, response["Errors"])

    def move(self, source: str, target: str) -> None:
        if self.exists(target):
            raise FileExistsError(target)
        src, dst = parse_s3_uri(source), parse_s3_uri(target)
        if self._object_exists(src):
            moves = [(src.key, dst.key, None)]
        else:
            below = {
                obj["Key"][len(src.folder_prefix) :]: obj["Size"]
                for page in self._pages(src.bucket, Prefix=src.folder_prefix)
                for obj in page.get("Contents", [])
            }
            if not below:
                raise FileNotFoundError(source)
            moves = [
                (src.folder_prefix + path, dst.folder_prefix + path, below[path])
                for path in sorted(below, key=publishing_order)
            ]
        for old, new, size in moves:
            self._copy(src.bucket, old, dst.bucket, new, size)
        self.delete(source)

    def _copy(self, source_bucket: str, source_key: str, bucket: str, key: str, size: int | None) -> None:
        """One `CopyObject` for an object the listing says is small, the usual part file; otherwise boto3's
        managed copy, which asks the size itself and copies in parts above the threshold."""
        source = {"Bucket": source_bucket, "Key": source_key}
        if size is not None and size < self.copy_config.multipart_threshold:
            self.client.copy_object(Bucket=bucket, Key=key, CopySource=source)
        else:
            self.client.copy(source, bucket, key, Config=self.copy_config)

    def make_dirs(self, uri: str) -> None:
        """A folder marker, an empty object named `prefix/` (as S3's console and Hadoop's S3A make them): a
        folder made for an output without rows (a batch without bad lines, a landing without deletes) then
        exists, is moved and published like any other, and lists no file. Until 2026-11-28 nothing was made,
        since keys imply their folders, and publishing such a folder found nothing to move and failed the run."""
        location = parse_s3_uri(uri)
        if location.key and not self.exists(uri):
            self.client.put_object(Bucket=location.bucket, Key=location.folder_prefix, Body=b"")

    def spark_path(self, uri: str) -> str:
        return spark_s3_uri(uri, self.spark_scheme)


class DeleteError(OSError):
    """Objects that DeleteObjects left in place: `uris`, and S3's code and message for each."""

    def __init__(self, bucket: str, errors: list[dict[str, str]]) -> None:
        self.uris = [f"s3://{bucket}/{error['Key']}" for error in errors]
        shown = "; ".join(
            f"{uri} ({error.get('Code', '?')}: {error.get('Message', '')})"
            for uri, error in zip(self.uris[:_ERRORS_SHOWN], errors)
        )
        more = f"; and {len(errors) - _ERRORS_SHOWN} more" if len(errors) > _ERRORS_SHOWN else ""
        super().__init__(f"S3 could not delete {len(errors)} object(s): {shown}{more}")


def _file(bucket: str, obj: dict[str, Any], name: str) -> FileEntry:
    return FileEntry(f"s3://{bucket}/{obj['Key']}", name, False, obj["Size"], obj["LastModified"].timestamp())
