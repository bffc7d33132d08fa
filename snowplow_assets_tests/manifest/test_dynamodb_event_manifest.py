import hashlib
import itertools
import json
from datetime import date, datetime, timezone
from pathlib import Path

import boto3
import dagster as dg
import pytest

from snowplow_assets.defs.checks.event_manifest_checks import event_manifest_check_results
from snowplow_assets.events.bad_rows import LOADER_RUNTIME_ERROR
from snowplow_assets.events.shred_batch import ShredOptions, shred_run_folder
from snowplow_assets.manifest.base import EventManifestUnavailable
from snowplow_assets.manifest.checks import (
    CHECK_NAME,
    CHECKED_NAME,
    check_batch_against_manifest,
    every_kept_event_checked,
)
from snowplow_assets.manifest.dynamodb_event_manifest import DynamoDbConfig, DynamoDbEventManifest, create_table
from snowplow_assets.manifest.populate import populate_event_manifest
from snowplow_assets.storage import LocalFileSystem
from snowplow_assets_tests.conftest import read_lines, write_run_folder
from snowplow_assets_tests.manifest.conftest import (
    B1,
    NOW,
    REGION,
    C,
    MovableClock,
    U,
    dynamodb_error,
    line,
    new_table,
    write_shredded_output,
)

RUN = "run=2026-03-01-10-00-00"
ETL = "2026-03-01 10:05:00.000"
RETRIED = "a0000001-0000-4000-8000-000000000001"  # throttled twice, then written
THROTTLED = "a0000002-0000-4000-8000-000000000002"  # throttled on every attempt
REFUSED = "a0000003-0000-4000-8000-000000000003"  # its id claim is refused outright
HEALTHY = "a0000004-0000-4000-8000-000000000004"


def unhealthy_dynamodb(request, attempt):
    if request.target != "PutItem":
        return None
    event_id, fingerprint = request.body["Item"]["eventId"]["S"], request.body["Item"]["fingerprint"]["S"]
    if event_id == RETRIED and fingerprint != "-" and attempt <= 2:
        return dynamodb_error(
            "ProvisionedThroughputExceededException", "The level of configured provisioned throughput was exceeded"
        )
    if event_id == THROTTLED and fingerprint != "-":
        return dynamodb_error("ThrottlingException", "Rate of requests exceeds the allowed throughput")
    if event_id == f"id:{REFUSED}":
        return dynamodb_error("AccessDeniedException", "not authorized to perform dynamodb:PutItem")
    return None


def test_throttling_is_retried_and_what_cannot_be_checked_becomes_runtime_error_bad_rows(
    spark, lake, fs, moto_server, throttling_proxy
):
    """DynamoDB throttles one kept event's pair for a while (retried, then written), another's on every attempt,
    and refuses a third's id claim. One shred proves:
    - what could not be checked becomes loader_runtime_error bad rows, counted as retries and errors, with one
      put per key and only retries repeating one;
    - those bad rows fail the warning, as a Dagster check result of its own severity (its counts as metadata),
      not the blocking check: what was loaded is right (the results of defs/checks/event_manifest_checks.py);
    - once DynamoDB is healthy, a rerun checks the rest and keeps what it recorded the first time."""
    table = new_table(moto_server, "throttled")
    proxy = throttling_proxy(unhealthy_dynamodb)
    write_run_folder(lake, RUN, [line(e, f"fp{e[7]}", ETL) for e in (RETRIED, THROTTLED, REFUSED, HEALTHY)])
    through_proxy = DynamoDbConfig(table.table, REGION, proxy.url, max_attempts=4, backoff_base_seconds=0.001)
    manifest = DynamoDbEventManifest(through_proxy, fs, clock=MovableClock(NOW))

    report = shred_run_folder(spark, fs, lake, RUN, ShredOptions(event_manifest=manifest))

    assert (report.lines_read, report.good, report.bad, report.runtime_errors, report.removed) == (4, 2, 2, 2, 0)
    counts = report.event_manifest.counts
    assert counts["retries"] == 2 + 3  # RETRIED twice; THROTTLED until its four attempts ran out
    assert counts["errors"] == 3  # THROTTLED's pair; REFUSED's claim, and its pair, not attempted after it
    assert sorted(proxy.answered) == sorted(
        ["ProvisionedThroughputExceededException"] * 2 + ["ThrottlingException"] * 4 + ["AccessDeniedException"]
    )
    # One put per key, grouped by event_id on the executors; only retries repeat one.
    puts = {
        (event_id, fingerprint): n
        for (_, _, target, event_id, fingerprint), n in proxy.attempts.items()
        if target == "PutItem"
    }
    assert puts == {
        **{(f"id:{e}", "-"): 1 for e in (RETRIED, THROTTLED, REFUSED, HEALTHY)},
        (RETRIED, "fp1"): 3,
        (THROTTLED, "fp2"): 4,
        (HEALTHY, "fp4"): 1,
    }
    assert sorted(line.split("\t")[6] for line in read_lines(Path(lake.shredded_good(RUN)) / "atomic-events")) == [
        RETRIED,
        HEALTHY,
    ]
    bad = {row["data"]["payload"]["event_id"]: row for row in map(json.loads, read_lines(lake.shredded_bad(RUN)))}
    assert sorted(bad) == [THROTTLED, REFUSED]
    assert {row["schema"] for row in bad.values()} == {LOADER_RUNTIME_ERROR}
    assert "after 4 attempts: ThrottlingException" in bad[THROTTLED]["data"]["failure"]
    assert "AccessDeniedException" in bad[REFUSED]["data"]["failure"]
    payload = bad[THROTTLED]["data"]["payload"]
    assert payload["event_fingerprint"] == "fp2" and payload["etl_tstamp"] == "2026-03-01T10:05:00.000Z"
    assert payload["dvce_ismobile"] is False and payload["dvce_screenwidth"] == 1920
    assert payload["contexts"]["data"][0]["data"] == {"id": "a0e3f1b2-0000-4000-8000-00000000cafe"}
    marker = json.loads(Path(lake.shredding_complete(RUN)).read_text())
    assert marker["data"]["count"] == {"good": 2, "bad": 2}
    warning = every_kept_event_checked(report)
    assert not warning.passed and (warning.metadata["events_not_checked"], warning.metadata["keys_failed"]) == (2, 3)
    assert f"2 kept events could not be checked by DynamoDB table {table.table!r}" in warning.description
    results = {r.check_name: r for r in event_manifest_check_results(spark, fs, lake, manifest, report, True)}
    checked = results[CHECKED_NAME]
    assert (checked.passed, checked.severity, checked.asset_key) == (
        False,
        dg.AssetCheckSeverity.WARN,
        dg.AssetKey("event_manifest"),
    )
    assert {k: v.value for k, v in checked.metadata.items()} == {
        "events_not_checked": 2,
        "keys_failed": 3,
        "retries": 5,
    }
    assert "loader_runtime_error bad rows" in checked.description
    held = results[CHECK_NAME]
    assert (held.passed, held.severity) == (True, dg.AssetCheckSeverity.ERROR), held.description
    assert (held.metadata["pairs"].value, held.metadata["ids"].value) == (2, 2)  # RETRIED's and HEALTHY's

    # Once DynamoDB is healthy, a rerun checks the rest and keeps what it recorded the first time.
    healthy = DynamoDbEventManifest(table, fs, clock=MovableClock(NOW))
    rerun = shred_run_folder(spark, fs, lake, RUN, ShredOptions(event_manifest=healthy))
    assert (rerun.good, rerun.bad, rerun.runtime_errors, rerun.removed) == (4, 0, 0, 0)
    assert check_batch_against_manifest(spark, fs, lake, healthy, rerun, claim_ids=True).passed
    assert every_kept_event_checked(rerun).passed


def refuse_every_put(request, attempt):
    if request.target == "PutItem":
        return dynamodb_error("AccessDeniedException", "not authorized to perform dynamodb:PutItem")
    return None


def test_a_manifest_that_can_write_no_key_fails_the_shred_and_the_populate_and_publishes_nothing(
    spark, lake, fs, moto_server, throttling_proxy
):
    # The table exists and can be described, as by a driver whose role may, but no put succeeds: executors
    # without credentials or permissions of their own.
    table = new_table(moto_server, "refusing")
    proxy = throttling_proxy(refuse_every_put)
    write_run_folder(lake, RUN, [line(e, f"fp{e[7]}", ETL) for e in (RETRIED, HEALTHY)])
    refusing = DynamoDbConfig(table.table, REGION, proxy.url, max_attempts=2, backoff_base_seconds=0.001)
    manifest = DynamoDbEventManifest(refusing, fs, clock=MovableClock(NOW))
    unusable = r"could not write or check any of the 4 keys .* AccessDeniedException: not authorized"

    with pytest.raises(EventManifestUnavailable, match=unusable):
        shred_run_folder(spark, fs, lake, RUN, ShredOptions(event_manifest=manifest))
    assert not Path(lake.shredded_good(RUN)).exists() and not Path(lake.shredded_bad(RUN)).exists()
    assert list(Path(lake.uri("shredded", ".staging")).iterdir()) == []
    assert proxy.answered == ["AccessDeniedException"] * 2  # each id's claim; its pair is not attempted after it

    # Output shredded without the manifest, back-filled into one that takes no put: the populate fails too.
    # (The output as far as the populator reads it: a shred of its own would add seconds and prove nothing more.)
    write_shredded_output(lake, RUN, [line(e, f"fp{e[7]}", ETL) for e in (RETRIED, HEALTHY)])
    with pytest.raises(EventManifestUnavailable, match=unusable):
        populate_event_manifest(lambda: spark, fs, lake, manifest, date(2026, 3, 1), claim_ids=True)


def test_a_task_stops_trying_once_keys_in_a_row_have_failed(spark, lake, fs, moto_server, throttling_proxy):
    # DynamoDB answers the first puts, then fails every attempt, as if the executors lost their way to it.
    answered = itertools.count()

    def unavailable_after_ten_puts(request, attempt):
        if request.target != "PutItem" or next(answered) < 10:
            return None
        return dynamodb_error("ServiceUnavailable", "Service unavailable")

    table = new_table(moto_server, "unavailable")
    proxy = throttling_proxy(unavailable_after_ten_puts)
    events = [f"b{n:07d}-0000-4000-8000-{n:012d}" for n in range(200)]
    write_run_folder(lake, RUN, [line(e, f"fp{n}", ETL) for n, e in enumerate(events)])
    config = DynamoDbConfig(
        table.table, REGION, proxy.url, max_attempts=2, backoff_base_seconds=0.001, threads=2, give_up_after_failures=5
    )
    manifest = DynamoDbEventManifest(config, fs, clock=MovableClock(NOW))

    report = shred_run_folder(spark, fs, lake, RUN, ShredOptions(event_manifest=manifest))

    assert report.lines_read == report.good + report.bad == 200 and report.runtime_errors >= 190
    failures = [row["data"]["failure"] for row in map(json.loads, read_lines(lake.shredded_bad(RUN)))]
    gave_up = "not attempted after 5 keys in a row failed, the last: event manifest write failed after 2 attempts"
    assert sum(gave_up in failure for failure in failures) > len(failures) / 2
    # Each task tried at most the five keys in a row, and those its two threads had already begun, after the
    # puts that went through: not all of the 200 ids' claims, two attempts each.
    tasks = int(spark.conf.get("spark.sql.shuffle.partitions"))
    put_requests = sum(n for (_, _, target, *_), n in proxy.attempts.items() if target == "PutItem")
    assert put_requests <= 10 + tasks * (5 + 2) * 2 < 200 * 2


def test_a_table_with_other_keys_is_refused(moto_server):
    client = boto3.client("dynamodb", region_name=REGION, endpoint_url=moto_server)
    client.create_table(
        TableName="other-keys",
        KeySchema=[{"AttributeName": "id", "KeyType": "HASH"}],
        AttributeDefinitions=[{"AttributeName": "id", "AttributeType": "S"}],
        BillingMode="PAY_PER_REQUEST",
    )
    with pytest.raises(EventManifestUnavailable, match="key schema"):
        DynamoDbEventManifest(DynamoDbConfig("other-keys", REGION, moto_server), LocalFileSystem()).verify()
    with pytest.raises(EventManifestUnavailable, match="key schema"):
        create_table(DynamoDbConfig("other-keys", REGION, moto_server))


@pytest.mark.parametrize("scenario", ["dynamodb"], indirect=True)
def test_items_follow_the_snowplow_table_design(scenario, moto_server):
    client = boto3.client("dynamodb", region_name=REGION, endpoint_url=moto_server)
    table = scenario.manifest.config.table
    etl_time = int(datetime(2026, 3, 1, 10, 5, tzinfo=timezone.utc).timestamp())
    pair = client.get_item(TableName=table, Key={"eventId": {"S": C}, "fingerprint": {"S": "fpC1"}})["Item"]
    assert pair == {
        "eventId": {"S": C},
        "fingerprint": {"S": "fpC1"},
        "etlTime": {"N": str(etl_time)},
        "ttl": {"N": str(etl_time + 180 * 86400)},
        "run": {"S": B1},
    }
    claim = client.get_item(TableName=table, Key={"eventId": {"S": f"id:{U}"}, "fingerprint": {"S": "-"}})["Item"]
    assert claim["run"] == {"S": B1} and claim["ttl"] == pair["ttl"]
    ttl = client.describe_time_to_live(TableName=table)["TimeToLiveDescription"]
    assert (ttl["TimeToLiveStatus"], ttl["AttributeName"]) == ("ENABLED", "ttl")


def test_a_fingerprint_beyond_dynamodbs_range_key_limit_is_keyed_by_its_digest_and_read_back_whole(
    spark, lake, fs, moto_server
):
    """DynamoDB refuses a range key over 1,024 bytes: such a fingerprint was a put that failed on every run, its
    event a runtime-error bad row for good. A later batch's copy of the event is now dropped like any other."""
    table = new_table(moto_server, "long-fingerprints")
    manifest = DynamoDbEventManifest(table, fs, clock=MovableClock(NOW))
    long = "é" * 600  # 1,200 bytes of UTF-8
    write_run_folder(lake, RUN, [line(HEALTHY, long, ETL)])
    first = shred_run_folder(spark, fs, lake, RUN, ShredOptions(event_manifest=manifest))
    assert (first.good, first.runtime_errors) == (1, 0)
    client = boto3.client("dynamodb", region_name=REGION, endpoint_url=moto_server)
    [item] = [i for i in client.scan(TableName=table.table)["Items"] if i["eventId"]["S"] == HEALTHY]
    digest = hashlib.sha256(long.encode()).hexdigest()
    assert (item["fingerprint"]["S"], item["fingerprintText"]["S"]) == (f"sha256:{digest}", long)
    later = "run=2026-03-01-11-00-00"
    write_run_folder(lake, later, [line(HEALTHY, long, "2026-03-01 11:05:00.000")])
    second = shred_run_folder(spark, fs, lake, later, ShredOptions(event_manifest=manifest))
    assert (second.good, second.removed, second.runtime_errors) == (0, 1, 0)
    assert check_batch_against_manifest(spark, fs, lake, manifest, first, claim_ids=True).passed
