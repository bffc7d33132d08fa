"""The event manifest in Dagster: the third asset of the shred step, its blocking check, the populate job,
and the run-queue limit that serialises lake manifest writers.

The checks' results on a batch that DynamoDB throttled (the warning fails, the blocking check passes) are
proved with the shred of that batch in manifest/test_dynamodb_event_manifest.py: the same shred, done once."""

import json
from datetime import datetime, timedelta, timezone
from pathlib import Path

import dagster as dg
import pytest
import yaml
from dagster._utils.tags import TagConcurrencyLimitsCounter

from snowplow_assets.defs.resources import EVENT_MANIFEST_TAG
from snowplow_assets.manifest.checks import CHECK_NAME, CHECKED_NAME
from snowplow_assets.settings import PROJECT_ROOT
from snowplow_assets_tests.conftest import write_run_folder
from snowplow_assets_tests.events.builders import event_line
from snowplow_assets_tests.manifest.conftest import write_shredded_output

RUN1, RUN2 = "run=2026-11-01-10-00-00", "run=2026-11-01-11-00-00"
A = "aaaaaaaa-0000-4000-8000-0000000000aa"
C = "cccccccc-0000-4000-8000-0000000000cc"
# Recent etl_tstamps: entries of a batch older than the 180-day TTL would expire as they are written.
ETL = (datetime.now(timezone.utc) - timedelta(days=1)).replace(microsecond=0)


def etl(hours: int) -> str:
    return (ETL + timedelta(hours=hours)).strftime("%Y-%m-%d %H:%M:%S.000")


def materialization(result, key):
    [event] = [e for e in result.get_asset_materialization_events() if e.materialization.asset_key == dg.AssetKey(key)]
    return {k: v.value for k, v in event.materialization.metadata.items()}


def evaluation(result, name):
    [found] = [
        e.asset_check_evaluation_data
        for e in result.all_events
        if e.event_type == dg.DagsterEventType.ASSET_CHECK_EVALUATION
        and e.asset_check_evaluation_data.check_name == name
    ]
    return found


def test_populate_then_shred_records_the_event_manifest_and_checks_it(definitions, instance, lake):
    # RUN1 was shredded before cross-batch deduplication was on: its output is in the lake, its keys are not.
    write_shredded_output(lake, RUN1, [event_line(event_id=A, event_fingerprint="fpA", etl_tstamp=etl(0)),
                                       event_line(event_id=C, event_fingerprint="fpC1", etl_tstamp=etl(0))])  # fmt: skip
    instance.add_dynamic_partitions("enriched_runs", [RUN1, RUN2])
    populate = definitions.resolve_job_def("populate_event_manifest")
    assert populate.tags[EVENT_MANIFEST_TAG] == "lake"
    result = populate.execute_in_process(
        instance=instance, run_config={"ops": {"populate_event_manifest_op": {"config": {"since": "2026-11-01"}}}}
    )
    assert result.success
    [output] = [e for e in result.all_events if e.event_type == dg.DagsterEventType.STEP_OUTPUT]
    populated = {k: v.value for k, v in output.step_output_data.metadata.items()}
    assert (populated["run_folders"], populated["pairs_recorded"], populated["ids_claimed"]) == (1, 2, 2)
    assert instance.get_materialized_partitions(dg.AssetKey("event_manifest")) == {RUN1}

    write_run_folder(lake, RUN2, [event_line(event_id=A, event_fingerprint="fpA", etl_tstamp=etl(1)),
                                  event_line(event_id=C, event_fingerprint="fpC2", etl_tstamp=etl(1))])  # fmt: skip
    job = definitions.resolve_job_def("shred_enriched_run")
    assert job.tags[EVENT_MANIFEST_TAG] == "lake"
    shredded = job.execute_in_process(partition_key=RUN2, instance=instance)

    assert shredded.success
    manifest = materialization(shredded, "event_manifest")
    assert (manifest["backend"], manifest["location"]) == ("lake", lake.event_manifest)
    assert manifest["batch_etl_time"] == int((ETL + timedelta(hours=1)).timestamp())
    assert (manifest["cross_batch_duplicates_removed"], manifest["cross_batch_synthetic_duplicates_renamed"]) == (1, 1)
    assert (manifest["entries_written"], manifest["pairs_held"], manifest["ids_held"], manifest["runtime_errors"]) == (
        1,
        1,
        2,
        0,
    )
    atomic = materialization(shredded, "atomic_events")
    assert (
        atomic["good"],
        atomic["cross_batch_duplicates_removed"],
        atomic["cross_batch_synthetic_duplicates_renamed"],
    ) == (1, 1, 1)
    check = evaluation(shredded, CHECK_NAME)
    assert check.passed and check.asset_key == dg.AssetKey("event_manifest"), check.description
    assert check.severity == dg.AssetCheckSeverity.ERROR
    checked = evaluation(shredded, CHECKED_NAME)
    assert checked.passed and checked.metadata["events_not_checked"].value == 0, checked.description
    assert checked.severity == dg.AssetCheckSeverity.WARN  # events not checked are bad rows a rerun loads
    assert instance.get_materialized_partitions(dg.AssetKey("event_manifest")) == {RUN1, RUN2}


@pytest.mark.parametrize("backend", ["lake", "dynamodb"])
def test_a_missing_manifest_fails_the_run_with_a_clear_error(lake, instance, moto_server, monkeypatch, backend):
    monkeypatch.setenv("SNOWPLOW_LAKE", lake.root)
    monkeypatch.setenv("SNOWPLOW_EVENT_MANIFEST", backend)
    if backend == "lake":  # its index names an entry folder that is gone
        batch = {
            "folder": f"{RUN2}.{'0' * 16}",
            "etl_time": 1,
            "ttl": 4_000_000_000,
            "recorded_at": "2026-11-01T11:00:00+00:00",
        }
        Path(lake.event_manifest).mkdir(parents=True)
        Path(lake.event_manifest_index).write_text(json.dumps({"format": 1, "version": 1, "batches": {RUN2: batch}}))
        expected = [
            "lost the entries of 1 batch(es), " + RUN2,
            "snowplow-assets event-manifest populate --since 2026-11-01",
        ]
    else:
        monkeypatch.setenv("SNOWPLOW_EVENT_MANIFEST_DYNAMODB_TABLE", "not-created")
        monkeypatch.setenv("SNOWPLOW_EVENT_MANIFEST_DYNAMODB_REGION", "eu-west-1")
        monkeypatch.setenv("SNOWPLOW_EVENT_MANIFEST_DYNAMODB_ENDPOINT_URL", moto_server)
        expected = ["'not-created' in eu-west-1", "snowplow-assets event-manifest create-table"]
    from snowplow_assets.definitions import defs

    write_run_folder(lake, RUN1, [event_line(event_id=A, etl_tstamp=etl(0))])
    instance.add_dynamic_partitions("enriched_runs", [RUN1])
    result = (
        defs()
        .resolve_job_def("shred_enriched_run")
        .execute_in_process(partition_key=RUN1, instance=instance, raise_on_error=False)
    )
    assert not result.success
    [failure] = [e for e in result.all_events if e.is_step_failure]
    assert all(text in failure.step_failure_data.error.message for text in expected), (
        failure.step_failure_data.error.message
    )
    assert not Path(lake.uri("shredded")).exists()


def test_the_run_queue_lets_one_lake_manifest_writer_run_at_a_time(definitions):
    config = yaml.safe_load((PROJECT_ROOT / "dagster.yaml").read_text())
    overrides = {"run_coordinator": config["run_coordinator"], "concurrency": config["concurrency"]}
    with dg.instance_for_test(overrides=overrides) as instance:
        limits = instance.get_concurrency_config().run_queue_config.tag_concurrency_limits
        job = definitions.resolve_job_def("shred_enriched_run")

        def run(partition, status, backend="lake"):
            tags = {**job.tags, EVENT_MANIFEST_TAG: backend, "dagster/partition": partition}
            return instance.create_run_for_job(job, tags=tags, status=status)

        running = run(RUN1, dg.DagsterRunStatus.STARTED)
        assert TagConcurrencyLimitsCounter(limits, [running]).is_blocked(run(RUN2, dg.DagsterRunStatus.NOT_STARTED))
        assert not TagConcurrencyLimitsCounter(limits, []).is_blocked(run(RUN2, dg.DagsterRunStatus.NOT_STARTED))
        # DynamoDB's conditional writes need no serialisation.
        dynamodb = run(RUN1, dg.DagsterRunStatus.STARTED, "dynamodb")
        assert not TagConcurrencyLimitsCounter(limits, [dynamodb]).is_blocked(
            run(RUN2, dg.DagsterRunStatus.NOT_STARTED, "dynamodb")
        )


def test_with_the_manifest_off_each_check_passes_with_its_own_severity(lake, instance, monkeypatch):
    """Nothing to check, and nothing to fail; but the warning stays a warning, as the README and its spec say
    (until 2026-11-27 both came out as errors)."""
    monkeypatch.setenv("SNOWPLOW_LAKE", lake.root)
    monkeypatch.setenv("SNOWPLOW_EVENT_MANIFEST", "none")
    from snowplow_assets.definitions import defs

    write_run_folder(lake, RUN1, [event_line(event_id=A, etl_tstamp=etl(0))])
    instance.add_dynamic_partitions("enriched_runs", [RUN1])
    result = defs().resolve_job_def("shred_enriched_run").execute_in_process(partition_key=RUN1, instance=instance)
    assert result.success
    assert not [e for e in result.get_asset_materialization_events() if e.asset_key == dg.AssetKey("event_manifest")]
    for name, severity in ((CHECK_NAME, dg.AssetCheckSeverity.ERROR), (CHECKED_NAME, dg.AssetCheckSeverity.WARN)):
        check = evaluation(result, name)
        assert (check.passed, check.severity) == (True, severity), name
        assert check.description.startswith("cross-batch deduplication is off"), check.description
