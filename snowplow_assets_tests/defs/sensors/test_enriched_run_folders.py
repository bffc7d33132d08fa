import json
import uuid
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta
from email.utils import formatdate, parsedate_to_datetime
from pathlib import Path

import boto3
import dagster as dg
import pytest
from dagster._core.storage.tags import RUN_KEY_TAG, SENSOR_NAME_TAG
from dagster_aws.s3 import S3Resource

from snowplow_assets.defs.manifests.instance_lake import InstanceOfAnotherLake, claim_instance_for_lake
from snowplow_assets.defs.manifests.operator_actions import record_operator_action
from snowplow_assets.defs.manifests.processing_manifest import RUN_FOLDERS, ProcessingManifest
from snowplow_assets.defs.resources import LakeResource
from snowplow_assets.defs.sensors import folder_discovery
from snowplow_assets.defs.sensors.enriched_run_folders import enriched_run_folders
from snowplow_assets.processing import State
from snowplow_assets.storage.s3 import S3FileSystem
from snowplow_assets_tests.conftest import write_run_folder
from snowplow_assets_tests.defs.manifest_runs import create_run, fail, start, succeed
from snowplow_assets_tests.storage.unreadable import make_unreadable_sub_folder

SENSOR = "enriched_run_folders"


@pytest.fixture
def memory_instance():
    instance = dg.DagsterInstance.ephemeral()
    yield instance
    instance.dispose()


def tick(instance, lake_resource, cursor=None) -> dg.SensorResult:
    with dg.build_sensor_context(instance=instance, resources={"lake": lake_resource}, cursor=cursor) as context:
        return enriched_run_folders(context)


def apply(instance, result: dg.SensorResult) -> None:
    """What the sensor daemon does with a result's partition requests."""
    for request in result.dynamic_partitions_requests:
        instance.add_dynamic_partitions(request.partitions_def_name, list(request.partition_keys))


def launch(instance, job, result: dg.SensorResult) -> dict[str, dg.DagsterRun]:
    """What the daemon does with a result, before the next tick: registers its partitions, then creates a run
    per request, tagged with its run key and the sensor, and not started yet (each holds its item's lock)."""
    apply(instance, result)
    return {
        request.partition_key: instance.create_run_for_job(
            job,
            tags={"dagster/partition": request.partition_key, RUN_KEY_TAG: request.run_key, SENSOR_NAME_TAG: SENSOR},
            status=dg.DagsterRunStatus.NOT_STARTED,
        )
        for request in result.run_requests
    }


def shredded_at_once(instance, result: dg.SensorResult) -> None:
    """What the daemon and the runs it starts do with a result, in short: the partitions are registered and
    each requested folder is shredded, recorded as a materialisation of its item (Processed). Creating a
    thousand real runs would take this machine half a minute."""
    apply(instance, result)
    for request in result.run_requests:
        instance.report_runless_asset_event(dg.AssetMaterialization("shredded_types", partition=request.partition_key))


def test_the_sensor_starts_only_what_the_manifest_allows(definitions, memory_instance, lake, no_spark_needed):
    instance, job = memory_instance, definitions.resolve_job_def("shred_enriched_run")
    new, failed, processed, running, skipped = (f"run=2026-03-04-0{h}-00-00" for h in range(5))
    for name in (new, failed, processed, running, skipped):
        write_run_folder(lake, name, ["x"])
    # Folders the manifest knows, whose partitions were then removed: they look new to the listing.
    instance.add_dynamic_partitions("enriched_runs", [failed, processed, running, skipped])
    fail(instance, create_run(instance, job, failed), "shred", "ValueError: boom")
    succeed(instance, create_run(instance, job, processed), processed, {"good": 1})
    start(instance, create_run(instance, job, running))
    record_operator_action(instance, RUN_FOLDERS, skipped, "skip", "test data")
    for name in (failed, processed, running, skipped):
        instance.delete_dynamic_partition("enriched_runs", name)

    first = tick(instance, definitions.resources["lake"])
    assert [(r.partition_key, r.run_key) for r in first.run_requests] == [(new, new)]
    [add] = first.dynamic_partitions_requests
    assert list(add.partition_keys) == [new, failed, processed, running, skipped], "registered, but not started"
    launch(instance, job, first)

    resolved = record_operator_action(instance, RUN_FOLDERS, failed, "resolve", "bad line removed upstream")
    second = tick(instance, definitions.resources["lake"], first.cursor)
    assert [(r.partition_key, r.run_key) for r in second.run_requests] == [
        (failed, f"{failed}#{resolved.records[-1].id}")
    ]
    assert not second.dynamic_partitions_requests
    launch(instance, job, second)

    third = tick(instance, definitions.resources["lake"], second.cursor)
    assert third.run_requests == [], "a resolution starts one run, once"


def test_a_resolved_folder_still_being_written_waits_for_its_run(definitions, memory_instance, lake, no_spark_needed):
    """Resolved right after its files were sent again, it got a run at once, which refused the folder as being
    written and left the item Failed again (CDC operator audit, 2026-11-28)."""
    instance, job = memory_instance, definitions.resolve_job_def("shred_enriched_run")
    failed = "run=2026-03-04-01-00-00"
    instance.add_dynamic_partitions("enriched_runs", [failed])
    fail(instance, create_run(instance, job, failed), "shred", "ValueError: a truncated file")
    write_run_folder(lake, failed, ["x"], success_marker=False)  # sent again just now
    resolved = record_operator_action(instance, RUN_FOLDERS, failed, "resolve", "file sent again")

    assert tick(instance, definitions.resources["lake"]).run_requests == [], "not ready: no run yet"
    Path(lake.enriched_run(failed), "_SUCCESS").touch()
    [request] = tick(instance, definitions.resources["lake"]).run_requests
    assert (request.partition_key, request.run_key) == (failed, f"{failed}#{resolved.records[-1].id}")


def test_the_sensor_starts_registered_items_no_run_took_up(definitions, memory_instance, lake, no_spark_needed):
    """`process --run X` registers every new ready folder but runs only X, an interrupted `process` leaves
    registered folders unrun, as here; a failed run deleted in the UI sends its folder back to New. The listing
    passes over registered folders: the manifest says which are waiting for a run, and each gets one, once."""
    instance, job = memory_instance, definitions.resolve_job_def("shred_enriched_run")
    failed, first_new, second_new = (f"run=2026-03-05-0{h}-00-00" for h in range(3))
    for name in (failed, first_new, second_new):
        write_run_folder(lake, name, ["x"])
    instance.add_dynamic_partitions("enriched_runs", [failed])
    fail(instance, create_run(instance, job, failed), "shred", "ValueError: boom")
    instance.add_dynamic_partitions("enriched_runs", [first_new, second_new])  # registered, no run started

    first = tick(instance, definitions.resources["lake"])
    assert [(r.partition_key, r.run_key) for r in first.run_requests] == [
        (first_new, first_new),
        (second_new, second_new),
    ]
    assert not first.dynamic_partitions_requests, "nothing new in the lake"
    runs = launch(instance, job, first)

    second = tick(instance, definitions.resources["lake"], first.cursor)
    assert second.run_requests == [], "a queued run holds its item"
    start(instance, runs[second_new])
    fail(instance, runs[first_new], "shred", "OSError: the disk is full")
    instance.delete_run(runs[first_new].run_id)
    assert ProcessingManifest(instance).item(RUN_FOLDERS, first_new).state is State.NEW

    third = tick(instance, definitions.resources["lake"], second.cursor)
    assert [(r.partition_key, r.run_key) for r in third.run_requests] == [(first_new, first_new)]
    assert not instance.get_runs(dg.RunsFilter(tags={RUN_KEY_TAG: first_new})), "Dagster lets the key through"
    launch(instance, job, third)
    assert tick(instance, definitions.resources["lake"], third.cursor).run_requests == []


@pytest.fixture
def no_spark_needed(monkeypatch):
    from pyspark.sql import SparkSession

    def refuse(builder):
        raise AssertionError("Spark was started")

    monkeypatch.setattr(SparkSession.Builder, "getOrCreate", refuse)


# S3 serves at most 1,000 keys a page; the tests ask for pages of 100 (S3's MaxKeys, sent over HTTP to moto),
# so that a tenth of the folders cross a page boundary as 1,050 would at S3's own page size.
PAGE_SIZE = 100
FOLDERS = [f"run=2026-01-01-{m // 60:02d}-{m % 60:02d}-00" for m in range(105)]
WAITING = 70
LATE = "run=2025-12-31-23-59-00"


@pytest.fixture(scope="module")
def s3_lake(moto_server) -> str:
    """105 run folders on a moto S3 server, each a part file: every one marked _SUCCESS (after its part file)
    but one still being written."""
    bucket = f"lake-{uuid.uuid4().hex[:12]}"
    client = boto3.client("s3", endpoint_url=moto_server, region_name="us-east-1")
    client.create_bucket(Bucket=bucket)
    parts = [f"lake/enriched/{name}/part-00000" for name in FOLDERS] + ["lake/enriched/not-a-run/part-00000"]
    markers = [f"lake/enriched/{name}/_SUCCESS" for i, name in enumerate(FOLDERS) if i != WAITING]
    with ThreadPoolExecutor(16) as pool:
        for objects in (parts, markers):
            list(pool.map(lambda key: client.put_object(Bucket=bucket, Key=key, Body=b""), objects))
    return f"s3://{bucket}/lake"


@pytest.fixture
def listing_pages(monkeypatch) -> list[int]:
    """Every listing asks S3 for pages of PAGE_SIZE; the list holds how many pages each listing took."""
    pages_per_listing: list[int] = []
    paginate = S3FileSystem._pages

    def small_pages(self, bucket, **kwargs):
        pages_per_listing.append(0)
        for page in paginate(self, bucket, PaginationConfig={"PageSize": PAGE_SIZE}, **kwargs):
            pages_per_listing[-1] += 1
            yield page

    monkeypatch.setattr(S3FileSystem, "_pages", small_pages)
    return pages_per_listing


def test_on_s3_the_sensor_pages_keeps_a_cursor_and_finds_late_folders(
    s3_lake, moto_server, memory_instance, monkeypatch, no_spark_needed, listing_pages
):
    monkeypatch.setenv("SNOWPLOW_SENSOR_CHUNK_SIZE", "50")
    monkeypatch.setenv("SNOWPLOW_SENSOR_FULL_LIST_EVERY", "3")
    monkeypatch.setenv("SNOWPLOW_READY_AFTER_SECONDS", "3600")
    instance = memory_instance
    lake = LakeResource(root=s3_lake, s3=S3Resource(endpoint_url=moto_server, region_name="us-east-1"))
    requested: list[str] = []

    def step(cursor):
        result = tick(instance, lake, cursor)
        shredded_at_once(instance, result)
        requested.extend(r.run_key for r in result.run_requests)
        return result, json.loads(result.cursor)

    first, cursor = step(None)  # a full listing: 106 folders over two pages; the first chunk
    assert listing_pages[0] == 2, listing_pages
    assert [r.partition_key for r in first.run_requests] == FOLDERS[:50]
    assert cursor == {"after": FOLDERS[49], "ticks": 1}

    second, cursor = step(first.cursor)  # only what sorts after the cursor; the waiting folder holds it back
    assert [r.partition_key for r in second.run_requests] == FOLDERS[50:WAITING] + FOLDERS[WAITING + 1 : 101]
    assert cursor["after"] == FOLDERS[WAITING - 1]

    third, cursor = step(second.cursor)
    assert [r.partition_key for r in third.run_requests] == FOLDERS[101:]
    assert cursor["after"] == FOLDERS[WAITING - 1]

    client = boto3.client("s3", endpoint_url=moto_server, region_name="us-east-1")
    bucket = s3_lake.removeprefix("s3://").split("/")[0]
    client.put_object(Bucket=bucket, Key=f"lake/enriched/{FOLDERS[WAITING]}/_SUCCESS", Body=b"")
    client.put_object(Bucket=bucket, Key=f"lake/enriched/{LATE}/part-00000", Body=b"")
    client.put_object(Bucket=bucket, Key=f"lake/enriched/{LATE}/_SUCCESS", Body=b"")
    fourth, cursor = step(third.cursor)  # every third tick lists everything: the late folder is found
    assert [r.partition_key for r in fourth.run_requests] == [LATE, FOLDERS[WAITING]]
    assert cursor["after"] == FOLDERS[-1]

    fifth, _ = step(fourth.cursor)
    assert fifth.run_requests == [] and not fifth.dynamic_partitions_requests
    assert sorted(requested) == sorted([*FOLDERS, LATE]), "each folder requested exactly once"
    assert sorted(instance.get_dynamic_partitions("enriched_runs")) == sorted([*FOLDERS, LATE])


def _s3_times_shifted(monkeypatch, files_by: float, clock_by: float) -> None:
    """Clients of S3Resource see every object's time moved by `files_by` seconds and S3's own time (each
    response's Date header) by `clock_by`, as S3 whose clock differs from the host's stamps them; the responses
    are moto's, over HTTP."""

    def shift(parsed, **_):
        headers = parsed["ResponseMetadata"]["HTTPHeaders"]
        headers["date"] = formatdate(parsedate_to_datetime(headers["date"]).timestamp() + clock_by, usegmt=True)
        for item in [*parsed.get("Contents", []), *parsed.get("Uploads", [])]:
            for field in ("LastModified", "Initiated"):
                if field in item:
                    item[field] += timedelta(seconds=files_by)

    get_client = S3Resource.get_client

    def shifted_client(self):
        client = get_client(self)
        for operation in ("ListObjectsV2", "ListMultipartUploads"):
            client.meta.events.register(f"after-call.s3.{operation}", shift)
        return client

    monkeypatch.setattr(S3Resource, "get_client", shifted_client)


@pytest.mark.parametrize(
    ("files_by", "clock_by", "ready"),
    [(-600, -600, False), (-120, 0, True)],
    ids=["s3-ten-minutes-behind-the-host", "a-file-two-minutes-old-by-s3s-clock"],
)
def test_on_s3_a_folder_is_quiet_by_s3s_clock_not_the_hosts(
    moto_server, memory_instance, monkeypatch, no_spark_needed, files_by, clock_by, ready
):
    """A folder still being copied: one part file uploaded a moment ago, no marker. With S3's clock ten minutes
    behind the host's, its file looked ten minutes old by the host's clock, and the sensor took the folder
    (until 2026-11-28). A file two minutes old by S3's own clock is quiet for the 60 seconds asked."""
    monkeypatch.setenv("SNOWPLOW_READY_AFTER_SECONDS", "60")
    bucket = f"lake-{uuid.uuid4().hex[:12]}"
    client = boto3.client("s3", endpoint_url=moto_server, region_name="us-east-1")
    client.create_bucket(Bucket=bucket)
    client.put_object(Bucket=bucket, Key=f"lake/enriched/{FOLDERS[0]}/part-00000", Body=b"")
    _s3_times_shifted(monkeypatch, files_by, clock_by)
    lake = LakeResource(root=f"s3://{bucket}/lake", s3=S3Resource(endpoint_url=moto_server, region_name="us-east-1"))
    result = tick(memory_instance, lake)
    assert [r.partition_key for r in result.run_requests] == ([FOLDERS[0]] if ready else [])


def test_a_tick_opens_at_most_its_bound_of_folders(definitions, memory_instance, lake, no_spark_needed, monkeypatch):
    """Folders waiting for quiet come first in name order; the ready ones after the bound wait for later ticks."""
    waiting, ready = "run=2026-03-04-00-00-00", ["run=2026-03-04-01-00-00", "run=2026-03-04-02-00-00"]
    write_run_folder(lake, waiting, ["x"], success_marker=False)  # written just now, no marker: not quiet yet
    for name in ready:
        write_run_folder(lake, name, ["x"])
    monkeypatch.setattr(folder_discovery, "FOLDERS_EXAMINED_PER_TICK", 1)
    bounded = tick(memory_instance, definitions.resources["lake"])
    assert bounded.run_requests == [] and json.loads(bounded.cursor)["after"] is None
    monkeypatch.setattr(folder_discovery, "FOLDERS_EXAMINED_PER_TICK", 3)
    wider = tick(memory_instance, definitions.resources["lake"], bounded.cursor)
    assert [r.partition_key for r in wider.run_requests] == ready


def test_a_folder_the_sensor_cannot_read_is_named_and_the_tick_goes_on(
    definitions, memory_instance, lake, no_spark_needed, capfd
):
    """Its listing's error failed the whole tick, and no folder after it was registered until it was mended."""
    unreadable, ready = "run=2026-03-05-00-00-00", "run=2026-03-05-01-00-00"
    for name in (unreadable, ready):
        write_run_folder(lake, name, ["x"])
    make_unreadable_sub_folder(Path(lake.enriched_run(unreadable)))
    result = tick(memory_instance, definitions.resources["lake"])
    assert [r.partition_key for r in result.run_requests] == [ready]
    assert json.loads(result.cursor)["after"] is None, "looked at again next tick"
    assert (
        f"cannot read {unreadable}, looked at again next tick: [Errno 36] File name too long" in capfd.readouterr().err
    )


def test_a_tick_in_an_instance_of_another_lake_fails_saying_so(definitions, memory_instance, lake, no_spark_needed):
    """The processing manifest is keyed by folder names alone: a tick there would take this lake's folders for
    the other lake's (defs/manifests/instance_lake.py)."""
    claim_instance_for_lake(memory_instance, "/some/other/lake")
    write_run_folder(lake, "run=2026-03-06-00-00-00", ["x"])
    with pytest.raises(dg.DagsterResourceFunctionError) as refused:
        tick(memory_instance, definitions.resources["lake"])
    assert isinstance(refused.value.__cause__, InstanceOfAnotherLake)
    assert f"lake /some/other/lake, and SNOWPLOW_LAKE is {lake.root}" in str(refused.value.__cause__)
    assert memory_instance.get_dynamic_partitions("enriched_runs") == []
