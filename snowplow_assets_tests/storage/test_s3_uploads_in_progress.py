"""Folders on S3 whose files are not all listed yet: uploads under way, a folder made in the console."""

import time
import uuid

import boto3
import pytest

from snowplow_assets.lake import RUN_FOLDER
from snowplow_assets.run_folders import scan_folders
from snowplow_assets.storage import S3FileSystem


@pytest.fixture
def s3(moto_server) -> S3FileSystem:
    client = boto3.client("s3", endpoint_url=moto_server, region_name="us-east-1")
    client.create_bucket(Bucket=f"lake-{uuid.uuid4().hex[:12]}")
    return S3FileSystem(client)


def test_a_folder_with_a_multipart_upload_under_way_waits(s3):
    """S3 lists no object until its upload completes, and dates a multipart upload's object from the upload's
    start: a copy that has sent one part file and is still uploading the next, for longer than the ready time,
    left a folder whose newest listed file looked quiet. Its in-progress upload now keeps it waiting."""
    bucket = s3.client.list_buckets()["Buckets"][-1]["Name"]
    root, name = f"s3://{bucket}/lake/enriched", "run=2026-01-01-00-00-00"
    s3.write_text(f"{root}/{name}/part-00000", "x\n")
    key = f"lake/enriched/{name}/part-00001"
    upload = s3.client.create_multipart_upload(Bucket=bucket, Key=key)["UploadId"]
    s3.client.upload_part(Bucket=bucket, Key=key, UploadId=upload, PartNumber=1, Body=b"y\n")
    # A neighbour whose key starts like the folder's name has its own uploads, which are not this folder's.
    other = f"lake/enriched/{name}.tmp/part-00000"
    s3.client.create_multipart_upload(Bucket=bucket, Key=other)

    def scan(now: float):
        return scan_folders(s3, root, set(), now, 120, 10, RUN_FOLDER)

    later = time.time() + 600  # the part file on S3 has been quiet for ten minutes
    assert (scan(later).ready, scan(later).waiting) == ([], [name]), "a part file is still being uploaded"
    s3.write_text(f"{root}/{name}/_SUCCESS", "")  # a copy in key order may write its marker early
    assert scan(later).ready == [], "the marker does not vouch for the upload still under way"

    s3.client.complete_multipart_upload(
        Bucket=bucket,
        Key=key,
        UploadId=upload,
        MultipartUpload={
            "Parts": [
                {
                    "PartNumber": 1,
                    "ETag": s3.client.list_parts(Bucket=bucket, Key=key, UploadId=upload)["Parts"][0]["ETag"],
                }
            ]
        },
    )
    assert scan(later).ready == [name]


def test_a_folder_whose_first_file_is_still_uploading_waits_and_holds_the_cursor(s3):
    """Its upload not complete, the folder's only file is in no listing of objects, so the folder looked empty
    (a prefix on S3 has no time of its own) and the cursor passed it: the next whole listing, 20 ticks later by
    default, was the first to look at it again."""
    bucket = s3.client.list_buckets()["Buckets"][-1]["Name"]
    root, name = f"s3://{bucket}/lake/enriched", "run=2026-01-01-00-00-00"
    key = f"lake/enriched/{name}/_temporary/part-00000"  # a prefix needs a key: a writer's staged one, here
    s3.client.create_multipart_upload(Bucket=bucket, Key=f"lake/enriched/{name}/part-00000")
    s3.client.put_object(Bucket=bucket, Key=key, Body=b"")
    s3.write_text(f"{root}/run=2026-01-01-01-00-00/part-00000", "x\n")
    scan = scan_folders(s3, root, set(), time.time() + 600, 120, 10, RUN_FOLDER)
    assert (scan.empty, scan.waiting) == ([], [name])
    assert scan.handled_through is None, "the cursor waits before it"


def test_a_folder_made_in_the_console_waits_for_its_files_and_holds_the_cursor(s3):
    """The S3 console's "Create folder" writes a key `run=…/` and nothing else: a prefix has no time of its own,
    so the folder looked empty and quiet since 1970, the cursor passed it, and the files uploaded into it a
    moment later waited for the next whole listing (20 ticks by default)."""
    bucket = s3.client.list_buckets()["Buckets"][-1]["Name"]
    root, name = f"s3://{bucket}/lake/enriched", "run=2026-01-01-00-00-00"
    s3.client.put_object(Bucket=bucket, Key=f"lake/enriched/{name}/", Body=b"")
    first = scan_folders(s3, root, set(), time.time(), 120, 10, RUN_FOLDER)
    assert (first.empty, first.waiting, first.handled_through) == ([], [name], None)

    s3.write_text(f"{root}/{name}/part-00000", "x\n")
    s3.write_text(f"{root}/{name}/_SUCCESS", "")
    assert scan_folders(s3, root, set(), time.time(), 120, 10, RUN_FOLDER, first.handled_through).ready == [name]
