"""`snowplow-assets event-manifest create-table` against a moto server, and `populate` on a temporary lake."""

import json
from datetime import datetime, timedelta, timezone
from pathlib import Path

import boto3
from click.testing import CliRunner

from snowplow_assets.cli.event_manifest import event_manifest
from snowplow_assets.lake import Lake
from snowplow_assets_tests.events.builders import event_line
from snowplow_assets_tests.manifest.conftest import write_shredded_output

REGION = "eu-west-1"


def invoke(*args: str, env: dict[str, str] | None = None):
    result = CliRunner().invoke(event_manifest, list(args), env=env)
    return result.exit_code, result.output


def test_create_table_enables_ttl_and_keeps_an_existing_table(moto_server):
    env = {
        "SNOWPLOW_EVENT_MANIFEST_DYNAMODB_REGION": REGION,
        "SNOWPLOW_EVENT_MANIFEST_DYNAMODB_ENDPOINT_URL": moto_server,
    }
    code, output = invoke("create-table", "--table", "cli-manifest", env=env)
    assert code == 0, output
    assert "created table 'cli-manifest'" in output and "TTL enabled on 'ttl'" in output
    client = boto3.client("dynamodb", region_name=REGION, endpoint_url=moto_server)
    table = client.describe_table(TableName="cli-manifest")["Table"]
    assert {k["AttributeName"]: k["KeyType"] for k in table["KeySchema"]} == {"eventId": "HASH", "fingerprint": "RANGE"}
    ttl = client.describe_time_to_live(TableName="cli-manifest")["TimeToLiveDescription"]
    assert (ttl["TimeToLiveStatus"], ttl["AttributeName"]) == ("ENABLED", "ttl")

    code, output = invoke("create-table", "--table", "cli-manifest", env=env)
    assert code == 0 and "already exists; TTL is enabled" in output


def test_create_table_needs_a_table_and_a_region():
    code, output = invoke("create-table", "--table", "t")
    assert code == 2 and "--region" in output


def test_populate_records_shredded_output_in_the_lake_manifest(spark, tmp_path):
    etl = datetime.now(timezone.utc) - timedelta(days=2)
    run = etl.strftime("run=%Y-%m-%d-%H-%M-%S")
    lake = Lake(str(tmp_path / "lake"))
    etl_tstamp = etl.strftime("%Y-%m-%d %H:%M:%S.000")
    write_shredded_output(lake, run, [
        event_line(event_id="aaaaaaaa-0000-4000-8000-000000000001", event_fingerprint="fp1", etl_tstamp=etl_tstamp),
        event_line(event_id="aaaaaaaa-0000-4000-8000-000000000002", event_fingerprint=None, etl_tstamp=etl_tstamp),
    ])  # fmt: skip
    env = {"SNOWPLOW_LAKE": lake.root, "SNOWPLOW_SPARK_MASTER": "local[2]", "SNOWPLOW_SPARK_SHUFFLE_PARTITIONS": "2"}

    code, output = invoke("populate", "--since", etl.date().isoformat(), env=env)

    assert code == 0, output
    assert f"{lake.event_manifest}: 1 run folder(s)" in output
    assert "pairs_recorded: 1" in output and "ids_claimed: 2" in output  # no pair without a fingerprint
    assert list(json.loads(Path(lake.event_manifest_index).read_text())["batches"]) == [run]
    code, output = invoke("populate", "--since", "yesterday", env=env)
    assert code == 2 and "not a date" in output
