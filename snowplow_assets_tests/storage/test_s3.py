import time
import uuid
from concurrent.futures import ThreadPoolExecutor

import boto3
import pytest

from snowplow_assets.storage import S3FileSystem, filesystem_for
from snowplow_assets.storage.s3 import parse_s3_uri, spark_s3_config, spark_s3_uri


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
    s3.delete(f"{folder}/sub")
    assert [f.name for f in s3.list_files(folder)] == ["_SUCCESS", "part-1"]
    s3.delete(folder)
    assert not s3.exists(folder)


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


def test_delete_removes_more_than_one_batch(s3, bucket):
    folder = f"s3://{bucket}/many"
    with ThreadPoolExecutor(16) as pool:
        list(pool.map(lambda i: s3.client.put_object(Bucket=bucket, Key=f"many/part-{i:04d}", Body=b""), range(1005)))
    s3.delete(folder)
    assert s3.list_files(folder) == []


def test_spark_paths_and_configuration():
    assert spark_s3_uri("s3://bucket/lake/run=a", "s3a") == "s3a://bucket/lake/run=a"
    assert spark_s3_uri("s3://bucket", "s3") == "s3://bucket/"
    assert S3FileSystem(client=None, spark_scheme="s3").spark_path("s3://b/k") == "s3://b/k"
    with pytest.raises(ValueError, match="unknown Spark S3 scheme"):
        spark_s3_uri("s3://b/k", "gs")
    with pytest.raises(ValueError, match="needs a bucket"):
        parse_s3_uri("s3:///key")

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
