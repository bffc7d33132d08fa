import json
import os
import re
import time
import uuid

import boto3
import pytest
from boto3.s3.transfer import TransferConfig
from botocore.exceptions import ClientError

from snowplow_assets.cdc.batches import BatchManifest, list_batches
from snowplow_assets.cdc.history import move_partition
from snowplow_assets.lake import RUN_FOLDER, Lake
from snowplow_assets.run_folders import empty_named_warning, find_new_folders, scan_folders
from snowplow_assets.storage import (
    DeleteError,
    FileChangedSinceRead,
    LocalFileSystem,
    S3FileSystem,
    filesystem_for,
    path_below,
)
from snowplow_assets.storage.s3 import parse_s3_uri, spark_s3_config, spark_s3_uri
from snowplow_assets_tests.storage.answer_lost import AnswerLostAfterApplying
from snowplow_assets_tests.storage.conditional_writes import (
    a_create_succeeds_once_and_a_file_deleted_since_it_was_read_has_changed,
    only_the_first_of_two_writers_writes,
)


@pytest.fixture
def bucket(moto_server) -> str:
    name = f"lake-{uuid.uuid4().hex[:12]}"
    boto3.client("s3", endpoint_url=moto_server, region_name="us-east-1").create_bucket(Bucket=name)
    return name


@pytest.fixture
def s3(moto_server, bucket) -> S3FileSystem:
    return S3FileSystem(boto3.client("s3", endpoint_url=moto_server, region_name="us-east-1"))


def put(fs: S3FileSystem, uri: str, text: str = "x") -> None:
    fs.write_text(uri, text)


def test_listing_is_by_folder_paginated_and_resumes_after_a_name(s3, bucket):
    root = f"s3://{bucket}/lake/enriched"
    names = [f"run=2026-01-01-00-{m:02d}-00" for m in range(30)]
    for name in names:
        put(s3, f"{root}/{name}/part-0")
    put(s3, f"{root}/notes.txt")
    put(s3, f"{root}/run=2026-01-01-00-05-00-retry/part-0")  # sorts before run=…-05-00/ in S3's key order
    s3.client.put_object(Bucket=bucket, Key="lake/enriched/", Body=b"")  # a console-made folder marker

    paged = S3FileSystem(s3.client)
    paged._pages = lambda b, **kw: s3.client.get_paginator("list_objects_v2").paginate(
        Bucket=b, PaginationConfig={"PageSize": 7}, **kw
    )
    listed = paged.list_dir(root)
    assert [e.name for e in listed if e.is_dir] == sorted(
        [*names, "run=2026-01-01-00-05-00-retry"], key=lambda n: n + "/"
    )
    assert [(e.name, e.size) for e in listed if not e.is_dir] == [("notes.txt", 1)]
    assert all(e.uri == f"{root}/{e.name}" for e in listed)

    after = [e.name for e in paged.list_dir(root, start_after=names[5]) if e.is_dir]
    assert after == names[6:], "nothing inside or before the cursor folder, and the -retry folder sorts before it"
    begun = [e.name for e in paged.list_dir(root, prefix="run=2026-01-01-00-05-00")]
    assert begun == ["run=2026-01-01-00-05-00-retry", "run=2026-01-01-00-05-00"]
    assert [e.uri for e in paged.list_dir(root, prefix="n")] == [f"{root}/notes.txt"]
    assert s3.list_dir(f"s3://{bucket}/missing") == []


def test_list_files_exists_read_and_delete(s3, bucket):
    folder = f"s3://{bucket}/lake/enriched/run=2026-01-01-00-00-00"
    before = time.time() - 5
    put(s3, f"{folder}/part-1", "abc")
    put(s3, f"{folder}/sub/part-2")
    put(s3, f"{folder}/_SUCCESS", "")
    files = s3.list_files(folder)
    assert [(f.name, f.size) for f in files] == [("_SUCCESS", 0), ("part-1", 3), ("part-2", 1)]
    assert all(f.modified >= before for f in files)
    assert s3.exists(folder) and s3.exists(f"{folder}/part-1") and not s3.exists(f"{folder}/part-9")
    assert s3.read_text(f"{folder}/part-1") == "abc"
    with pytest.raises(FileNotFoundError):
        s3.read_text(f"{folder}/part-9")
    with s3.open_binary(f"{folder}/part-1") as stream:
        assert stream.read(2) == b"ab" and stream.read() == b"c"
    with pytest.raises(FileNotFoundError):
        s3.open_binary(f"{folder}/part-9")
    assert (s3.read_head(f"{folder}/part-1", 2), s3.read_head(f"{folder}/part-1", 9)) == (b"ab", b"abc")
    assert s3.read_head(f"{folder}/_SUCCESS", 2) == b"", "an empty object: no byte 0 to range over"
    with pytest.raises(FileNotFoundError):
        s3.read_head(f"{folder}/part-9", 2)
    s3.delete(f"{folder}/sub")
    assert [f.name for f in s3.list_files(folder)] == ["_SUCCESS", "part-1"]
    s3.delete(folder)
    assert not s3.exists(folder)


def test_the_s3_server_honours_conditional_puts(s3, bucket):
    """What `write_text_if_unchanged` relies on, asked of the server directly: If-None-Match creates only,
    If-Match replaces only the version named, and a lost condition is 412 PreconditionFailed."""

    def refused(**condition: str) -> tuple[str, int]:
        with pytest.raises(ClientError) as raised:
            s3.client.put_object(Bucket=bucket, Key="index.json", Body=b"refused", **condition)
        return raised.value.response["Error"]["Code"], raised.value.response["ResponseMetadata"]["HTTPStatusCode"]

    created = s3.client.put_object(Bucket=bucket, Key="index.json", Body=b"created", IfNoneMatch="*")
    assert refused(IfNoneMatch="*") == ("PreconditionFailed", 412)
    assert refused(IfMatch='"0123456789abcdef0123456789abcdef"') == ("PreconditionFailed", 412)
    replaced = s3.client.put_object(Bucket=bucket, Key="index.json", Body=b"replaced", IfMatch=created["ETag"])
    assert refused(IfMatch=created["ETag"]) == ("PreconditionFailed", 412)
    assert s3.client.get_object(Bucket=bucket, Key="index.json")["Body"].read() == b"replaced"
    s3.client.delete_object(Bucket=bucket, Key="index.json")
    assert refused(IfMatch=replaced["ETag"]) == ("NoSuchKey", 404)


def test_of_two_writers_that_read_the_same_version_only_the_first_writes(s3, bucket):
    only_the_first_of_two_writers_writes(s3, f"s3://{bucket}/lake/event-manifest/batches.json")


def test_a_conditional_create_succeeds_once_and_an_object_deleted_since_it_was_read_has_changed(s3, bucket):
    a_create_succeeds_once_and_a_file_deleted_since_it_was_read_has_changed(
        s3, f"s3://{bucket}/lake/event-manifest/batches.json"
    )


def test_a_conditional_put_applied_but_whose_answer_was_lost_has_written(s3, bucket):
    """The retry of a PUT S3 applied fails its own condition (412): the object holds exactly the text written,
    so the write succeeded, and is not reported as another writer's."""
    index = f"s3://{bucket}/lake/event-manifest/batches.json"
    s3.write_text(index, "read")
    _, token = s3.read_text_with_token(index)
    lost = AnswerLostAfterApplying()
    lost.register(s3.client)

    s3.write_text_if_unchanged(index, "ours", token)
    assert lost.attempts == ["answer lost", 412], "botocore retried the PUT, which failed its own condition"
    assert s3.read_text(index) == "ours"


def test_a_conditional_create_applied_but_whose_answer_was_lost_has_written(s3, bucket):
    index = f"s3://{bucket}/lake/event-manifest/batches.json"
    lost = AnswerLostAfterApplying()
    lost.register(s3.client)

    s3.write_text_if_unchanged(index, "ours", None)
    assert lost.attempts == ["answer lost", 412]
    assert s3.read_text(index) == "ours"


def test_a_conditional_put_overwritten_before_its_retry_is_reported_changed(s3, bucket):
    """Another writer replaces the object between the PUT S3 applied and its retry: what is stored is not what
    was written, so the write is reported lost. It was applied, and then superseded: a caller that reads again
    and decides again loses nothing."""
    index = f"s3://{bucket}/lake/event-manifest/batches.json"
    s3.write_text(index, "read")
    _, token = s3.read_text_with_token(index)
    another = S3FileSystem(boto3.client("s3", endpoint_url=s3.client.meta.endpoint_url, region_name="us-east-1"))
    lost = AnswerLostAfterApplying(meanwhile=lambda: another.write_text(index, "theirs"))
    lost.register(s3.client)

    with pytest.raises(FileChangedSinceRead):
        s3.write_text_if_unchanged(index, "ours", token)
    assert lost.attempts == ["answer lost", 412]
    assert s3.read_text(index) == "theirs"


def test_a_conditional_put_refused_at_its_first_attempt_lost_even_to_the_same_text(s3, bucket):
    """Only a retried PUT may have been applied by an earlier attempt: one refused at once was not, and two
    writers of the same version, even with the same text, are one winner and one refused."""
    index = f"s3://{bucket}/lake/event-manifest/batches.json"
    s3.write_text(index, "read")
    _, token = s3.read_text_with_token(index)
    s3.write_text_if_unchanged(index, "the same", token)
    with pytest.raises(FileChangedSinceRead):
        s3.write_text_if_unchanged(index, "the same", token)


def test_move_and_replace_tree(s3, bucket):
    base = f"s3://{bucket}/lake/shredded"
    put(s3, f"{base}/good/run=a/part-old", "old")
    put(s3, f"{base}/.staging/run=a.1/part-new", "new")
    put(s3, f"{base}/.staging/run=a.1/sub/part-deep", "deep")
    with pytest.raises(FileExistsError):
        s3.move(f"{base}/.staging/run=a.1", f"{base}/good/run=a")
    s3.replace_tree(f"{base}/.staging/run=a.1", f"{base}/good/run=a")
    assert [f.name for f in s3.list_files(f"{base}/good/run=a")] == ["part-new", "part-deep"]
    assert not s3.exists(f"{base}/.staging/run=a.1")
    assert [e.name for e in s3.list_dir(f"{base}/good")] == ["run=a"], "the retired copy is removed"
    with pytest.raises(FileNotFoundError):
        s3.move(f"{base}/nothing", f"{base}/elsewhere")


def test_an_empty_folder_is_made_moved_and_published_as_on_a_disk(s3, bucket):
    """An output without rows (a batch without bad lines, a landing without deletes) is an empty folder that
    the run publishes: until 2026-11-28 making one on S3 did nothing, and its publish failed the run."""
    base = f"s3://{bucket}/lake"
    staged_bad, staged_deletes = f"{base}/.staging/x/bad", f"{base}/.staging/x/deletes"
    s3.make_dirs(staged_bad)
    move_partition(s3, f"{base}/.staging/x/write/output=deletes", staged_deletes)  # Spark wrote no such partition
    assert s3.exists(staged_bad) and s3.list_files(staged_bad) == []
    put(s3, f"{base}/bad/run=a/part-old", "a rerun's old bad rows")
    s3.replace_tree(staged_bad, f"{base}/bad/run=a")
    s3.replace_tree(staged_deletes, f"{base}/deletes/landing=x")
    for published in (f"{base}/bad/run=a", f"{base}/deletes/landing=x"):
        assert s3.exists(published) and s3.list_files(published) == []
    assert [e.name for e in s3.list_dir(f"{base}/bad")] == ["run=a"]
    assert s3.list_dir(f"{base}/bad/run=a") == []
    assert not s3.exists(f"{base}/.staging/x")


def test_an_object_above_the_copy_threshold_is_moved_in_parts(moto_server, bucket):
    """A single CopyObject is refused above 5 GB, which one task's part file of a large gzipped input can
    pass: until 2026-11-28 such a run could never publish. Here the threshold is lowered to S3's smallest part."""
    mib = 1024 * 1024
    fs = S3FileSystem(
        boto3.client("s3", endpoint_url=moto_server, region_name="us-east-1"),
        copy_config=TransferConfig(multipart_threshold=5 * mib, multipart_chunksize=5 * mib),
    )
    calls = []
    fs.client.meta.events.register("before-call.s3", lambda model, **_: calls.append(model.name))
    body = os.urandom(11 * mib)
    base = f"s3://{bucket}/lake"
    fs.client.put_object(Bucket=bucket, Key="lake/.staging/r/part-00000.txt", Body=body)
    put(fs, f"{base}/.staging/r/part-00001.txt", "small")
    calls.clear()
    fs.move(f"{base}/.staging/r", f"{base}/good/run=a")
    moved = fs.client.get_object(Bucket=bucket, Key="lake/good/run=a/part-00000.txt")
    assert moved["ETag"].strip('"').endswith("-3"), "copied in three parts, not by one CopyObject"
    assert moved["Body"].read() == body
    assert fs.read_text(f"{base}/good/run=a/part-00001.txt") == "small"
    assert not fs.exists(f"{base}/.staging/r")
    assert calls.count("UploadPartCopy") == 3 and calls.count("CopyObject") == 1, "the small file in one request"

    fs.move(f"{base}/good/run=a/part-00000.txt", f"{base}/good/run=b.txt")
    assert fs.client.get_object(Bucket=bucket, Key="lake/good/run=b.txt")["Body"].read() == body


def test_a_swap_cut_short_leaves_a_hidden_old_copy_that_the_next_swap_removes(s3, bucket):
    good = f"s3://{bucket}/lake/shredded/good"
    put(s3, f"{good}/run=1/part-0", "old")
    put(s3, f"{good}/run=1/shredding_complete.json", "{}")
    put(s3, f"{good}/run=10.replaced-0123456789ab/part-0")  # another folder's, named before the dot
    put(s3, f"{good}/run=1.replaced-abcdef012345/part-0")
    staged = f"s3://{bucket}/lake/shredded/.staging/a/good"
    put(s3, f"{staged}/part-0", "new")
    archive(s3, f"{staged}/part-1")  # the copy into place fails here, the old folder moved aside
    with pytest.raises(ClientError, match="ObjectNotInActiveTierError"):
        s3.replace_tree(staged, f"{good}/run=1")
    [hidden] = [e for e in s3.list_dir(good) if e.name.startswith(".")]
    assert hidden.name.startswith(".run=1.replaced-") and below(s3, hidden.uri) == ["part-0", "shredding_complete.json"]

    put(s3, f"{staged}/part-1", "new")
    s3.replace_tree(staged, f"{good}/run=1")
    assert [e.name for e in s3.list_dir(good)] == ["run=1", "run=10.replaced-0123456789ab"]
    assert below(s3, f"{good}/run=1") == ["part-0", "part-1"]


def test_delete_removes_more_than_one_batch(s3, bucket, monkeypatch):
    """DeleteObjects takes at most 1,000 keys; here batches of 10, so that 25 files, and the folder's own key (a
    console folder, if there is one), take three requests."""
    monkeypatch.setattr("snowplow_assets.storage.s3._DELETE_BATCH", 10)
    folder = f"s3://{bucket}/many"
    for i in range(25):
        s3.client.put_object(Bucket=bucket, Key=f"many/part-{i:04d}", Body=b"")
    batches: list[int] = []
    s3.client.meta.events.register(
        "before-parameter-build.s3.DeleteObjects", lambda params, **_: batches.append(len(params["Delete"]["Objects"]))
    )
    s3.delete(folder)
    assert s3.list_files(folder) == []
    assert batches == [10, 10, 6]


def test_spark_paths_and_configuration():
    assert spark_s3_uri("s3://bucket/lake/run=a", "s3a") == "s3a://bucket/lake/run=a"
    assert spark_s3_uri("s3://bucket", "s3") == "s3://bucket/"
    assert S3FileSystem(client=None, spark_scheme="s3").spark_path("s3://b/k") == "s3://b/k"
    with pytest.raises(ValueError, match="unknown Spark S3 scheme"):
        spark_s3_uri("s3://b/k", "gs")
    with pytest.raises(ValueError, match="needs a bucket"):
        parse_s3_uri("s3:///key")
    # A key a listing found that Hadoop would turn into another: each is refused by name.
    for key in ("lake/run=a//part-0", "lake/run=a/./part-0", "lake/x/../run=a/part-0", "./part-0"):
        with pytest.raises(ValueError, match=re.escape(f"cannot hand 's3://b/{key}' to Spark")):
            spark_s3_uri(f"s3://b/{key}", "s3a")

    local_stack = spark_s3_config("s3a", "http://localhost:4566", "eu-west-1")
    assert local_stack == {
        "spark.hadoop.fs.s3a.endpoint.region": "eu-west-1",
        "spark.hadoop.fs.s3a.endpoint": "http://localhost:4566",
        "spark.hadoop.fs.s3a.path.style.access": "true",
        "spark.hadoop.fs.s3a.connection.ssl.enabled": "false",
        "spark.hadoop.fs.s3a.aws.credentials.provider": "software.amazon.awssdk.auth.credentials.EnvironmentVariableCredentialsProvider",
    }
    assert spark_s3_config("s3a", None, None) == {}
    assert spark_s3_config("s3", "http://localhost:4566", "eu-west-1") == {}, "EMRFS is configured by EMR"


def test_filesystem_for_builds_a_client_from_the_settings(monkeypatch, moto_server, bucket):
    monkeypatch.setenv("SNOWPLOW_S3_ENDPOINT_URL", moto_server)
    monkeypatch.setenv("SNOWPLOW_S3_REGION", "us-east-1")
    monkeypatch.setenv("SNOWPLOW_S3_SCHEME", "s3")
    fs = filesystem_for(f"s3://{bucket}/lake")
    fs.write_text(f"s3://{bucket}/lake/x.json", "{}")
    assert fs.read_text(f"s3://{bucket}/lake/x.json") == "{}"
    assert fs.spark_path(f"s3://{bucket}/lake/x.json") == f"s3://{bucket}/lake/x.json"
    with pytest.raises(ValueError, match="unsupported lake root"):
        filesystem_for("gs://bucket/lake")


def archive(s3: S3FileSystem, uri: str, text: str = "x") -> None:
    """An object in S3's archive tier: CopyObject refuses it (ObjectNotInActiveTierError) until it is
    restored, which makes a real copy fail part-way through a tree."""
    location = parse_s3_uri(uri)
    s3.client.put_object(Bucket=location.bucket, Key=location.key, Body=text.encode(), StorageClass="GLACIER")


def below(s3: S3FileSystem, folder: str) -> list[str]:
    return [path_below(folder, f) for f in s3.list_files(folder)]


def test_a_copy_that_stops_part_way_leaves_no_marker(s3, bucket):
    """In key order `_batch.json` and `_latest.json` sort before the files they vouch for and were copied
    first: an interrupted batch was then listed as complete, with rows missing."""
    lake = Lake(f"s3://{bucket}/lake")
    manifest = BatchManifest(
        model="customers", boundary_ms=1000, previous_boundary_ms=None, mode="full", reason="first", cut_at_ms=1,
        spec="s", landings={"L1": "t"}, columns={}, previous_columns=None, skipped_columns={}, rows=5,
        tombstones=1, records_read=6, files_read=1, landings_read=1,
    )  # fmt: skip
    staged = f"{lake.cdc_staging('batches', '0123abcd')}/customers"
    put(s3, f"{staged}/_batch.json", manifest.to_json())
    put(s3, f"{staged}/deleted/part-00000.parquet")
    for i in range(5):
        (archive if i == 2 else put)(s3, f"{staged}/rows/part-{i:05d}.parquet")
    batch = lake.cdc_batch("customers", 1000)
    with pytest.raises(ClientError, match="ObjectNotInActiveTierError"):
        s3.replace_tree(staged, batch)
    assert below(s3, batch) == ["deleted/part-00000.parquet", "rows/part-00000.parquet", "rows/part-00001.parquet"]
    assert list_batches(s3, lake, "customers") == [], "a batch without its _batch.json is not complete"

    # Once the object can be read, publishing again replaces the unmarked copy with the whole batch.
    put(s3, f"{staged}/rows/part-00002.parquet")
    s3.replace_tree(staged, batch)
    assert list_batches(s3, lake, "customers") == [manifest]
    assert len(below(s3, batch)) == 7 and not s3.exists(staged)
    assert [e.name for e in s3.list_dir(lake.cdc_batches("customers"))] == ["boundary=1000"]

    # The latest view's marker sits beside its part files, at the root of the tree.
    staged = f"{lake.cdc_staging('batches', '4567abcd')}/customers"
    put(s3, f"{staged}/_SUCCESS", "")
    put(s3, f"{staged}/_latest.json", "{}")
    put(s3, f"{staged}/part-00000.parquet")
    archive(s3, f"{staged}/part-00001.parquet")
    with pytest.raises(ClientError, match="ObjectNotInActiveTierError"):
        s3.replace_tree(staged, lake.cdc_latest("customers"))
    assert below(s3, lake.cdc_latest("customers")) == ["part-00000.parquet"]


def deny_deletes(s3: S3FileSystem, bucket: str, *keys: str) -> None:
    """A bucket policy that refuses DeleteObject on these keys: DeleteObjects then answers HTTP 200 with
    them in `Errors`, as S3 does, and deletes the others."""
    statement = {
        "Effect": "Deny",
        "Principal": "*",
        "Action": "s3:DeleteObject",
        "Resource": [f"arn:aws:s3:::{bucket}/{key}" for key in keys],
    }
    s3.client.put_bucket_policy(Bucket=bucket, Policy=json.dumps({"Version": "2012-10-17", "Statement": [statement]}))


def test_a_key_s3_could_not_delete_is_an_error_naming_it(s3, bucket):
    base = f"s3://{bucket}/lake"
    for name in ("f0", "f1", "f2"):
        put(s3, f"{base}/src/{name}")
    put(s3, f"{base}/good/shredding_complete.json", "{}")
    tree = ["_batch.json", "deleted/part-0", "rows/part-0", "rows/part-1"]
    for path in tree:
        put(s3, f"{base}/batch/{path}")
        put(s3, f"{base}/locked/{path}")
    deny_deletes(
        s3,
        bucket,
        "lake/src/f1",
        "lake/good/shredding_complete.json",
        "lake/batch/rows/part-1",
        "lake/locked/_batch.json",
    )

    with pytest.raises(DeleteError, match=rf"could not delete 1 object\(s\): s3://{bucket}/lake/src/f1 \(AccessDenied"):
        s3.move(f"{base}/src", f"{base}/dst")
    assert below(s3, f"{base}/dst") == ["f0", "f1", "f2"] and below(s3, f"{base}/src") == ["f1"]

    with pytest.raises(DeleteError, match="good/shredding_complete.json") as raised:
        s3.delete(f"{base}/good/shredding_complete.json")
    assert raised.value.uris == [f"{base}/good/shredding_complete.json"]
    assert s3.exists(f"{base}/good/shredding_complete.json")

    # A tree loses its marker first, in a request of its own: what a failure leaves is never marked.
    with pytest.raises(DeleteError, match="batch/rows/part-1"):
        s3.delete(f"{base}/batch")
    assert below(s3, f"{base}/batch") == ["rows/part-1"]
    with pytest.raises(DeleteError, match="locked/_batch.json"):
        s3.delete(f"{base}/locked")
    assert below(s3, f"{base}/locked") == tree, "nothing the marker vouches for goes while it stays"


def test_the_clock_is_s3s_own_or_the_hosts_without_a_date(s3, bucket):
    """The time of the Date header S3 answers with, by which it stamps LastModified: an object written just
    now is no older than a second by it. A store that sends no Date is taken to share the host's clock."""
    put(s3, f"s3://{bucket}/run=1/part-0")
    [written] = s3.list_files(f"s3://{bucket}/run=1")
    assert 0 <= s3.clock(f"s3://{bucket}/run=1") - written.last_change < 2
    dated = []

    def keep_and_drop_date(parsed, **_):
        dated.append(parsed["ResponseMetadata"]["HTTPHeaders"].pop("date"))

    s3.client.meta.events.register("after-call.s3.ListObjectsV2", keep_and_drop_date)
    before = time.time()
    assert before <= s3.clock(f"s3://{bucket}/run=1") <= time.time() and len(dated) == 1


def test_objects_below_an_empty_named_folder_are_said_apart_by_a_whole_scan(s3, bucket, tmp_path):
    """`aws s3 cp … s3://b/lake/enriched//run=…/` writes below a folder with an empty name, which no listing
    shows: until 2026-11-28 neither the sensor nor `process` said anything of its objects."""
    root = f"s3://{bucket}/lake/enriched"
    put(s3, f"{root}/run=2026-01-01-00-00-00/part-00000")
    assert not s3.holds_empty_named_folder(root)
    put(s3, f"s3://{bucket}/lake/enriched//run=2026-01-01-01-00-00/part-00000")
    assert s3.holds_empty_named_folder(root) and not s3.holds_empty_named_folder(f"s3://{bucket}/lake")

    found = find_new_folders(s3, root, set(), time.time() + 600, 120, 10, RUN_FOLDER)
    assert found.ready == ["run=2026-01-01-00-00-00"] and found.ignored == [] and found.empty_named
    assert f"{root}//" in empty_named_warning(root)
    later = scan_folders(s3, root, set(), time.time() + 600, 120, 10, RUN_FOLDER, start_after="run=2026")
    assert not later.empty_named, "asked on whole scans only"
    assert not LocalFileSystem().holds_empty_named_folder(str(tmp_path))
