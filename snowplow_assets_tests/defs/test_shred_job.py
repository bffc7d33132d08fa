from datetime import UTC, datetime
from pathlib import Path

import dagster as dg
import pytest
from pyspark.sql import SparkSession

from snowplow_assets.defs.sensors.enriched_run_folders import enriched_run_folders
from snowplow_assets.events import shred_batch
from snowplow_assets_tests.conftest import write_run_folder
from snowplow_assets_tests.defs.sensors.test_enriched_run_folders import launch
from snowplow_assets_tests.defs.sensors.test_web_models_after_shredding import record_manifest
from snowplow_assets_tests.events.test_shred_batch import GOLDEN_INPUT, RUN

# The checks a shred run evaluates, named here rather than read from the product, so that a check dropped
# or renamed there fails the tests that expect it.
SHRED_CHECKS = (
    "unique_event_ids",
    "lines_accounted_for",
    "entities_have_events",
    "renamed_events_have_duplicate_context",
    "kept_events_not_held_by_other_batches",
    "kept_events_checked_by_the_event_manifest",
    "events_within_web_models_reach",
)


@pytest.fixture
def spark_builds(monkeypatch, spark):
    """Counts SparkSession creations; the shared test session is handed out, so nothing else starts."""
    calls = []
    original = SparkSession.Builder.getOrCreate

    def counting(builder):
        calls.append(builder)
        return original(builder)

    monkeypatch.setattr(SparkSession.Builder, "getOrCreate", counting)
    return calls


@pytest.fixture
def no_spark(monkeypatch):
    def refuse(builder):
        raise AssertionError("Spark was started")

    monkeypatch.setattr(SparkSession.Builder, "getOrCreate", refuse)


def materializations(result, key):
    return [
        e.materialization
        for e in result.get_asset_materialization_events()
        if e.materialization.asset_key == dg.AssetKey(key)
    ]


def test_spark_is_lazy_and_not_needed_to_record_the_input(definitions, instance, lake, no_spark):
    write_run_folder(lake, RUN, GOLDEN_INPUT)
    instance.add_dynamic_partitions("enriched_runs", [RUN])
    job = definitions.resolve_job_def("shred_enriched_run")
    result = job.execute_in_process(
        partition_key=RUN, instance=instance, asset_selection=[dg.AssetKey("enriched_batch")]
    )
    assert result.success
    assert [e.asset_key for e in result.get_asset_materialization_events()] == [dg.AssetKey("enriched_batch")]


def test_missing_run_folder_fails_clearly(definitions, instance, lake):
    instance.add_dynamic_partitions("enriched_runs", [RUN])
    result = definitions.resolve_job_def("shred_enriched_run").execute_in_process(
        partition_key=RUN, instance=instance, raise_on_error=False
    )
    assert not result.success
    [failure] = [e for e in result.all_events if e.is_step_failure]
    assert "does not exist" in failure.step_failure_data.error.message


def test_sensor_registers_ready_folders_in_chunks_without_spark(definitions, instance, lake, monkeypatch, no_spark):
    monkeypatch.setenv("SNOWPLOW_SENSOR_CHUNK_SIZE", "2")
    for hour in ("12", "10", "11"):
        write_run_folder(lake, f"run=2026-03-01-{hour}-00-00", GOLDEN_INPUT[:1])
    write_run_folder(lake, "run=2026-03-01-13-00-00", GOLDEN_INPUT[:1], success_marker=False)  # fresh, unmarked

    resources = {"lake": definitions.resources["lake"]}
    with dg.build_sensor_context(instance=instance, resources=resources) as context:
        first = enriched_run_folders(context)
    assert [r.partition_key for r in first.run_requests] == ["run=2026-03-01-10-00-00", "run=2026-03-01-11-00-00"]
    assert [r.run_key for r in first.run_requests] == [r.partition_key for r in first.run_requests]
    [add] = first.dynamic_partitions_requests
    assert add.partitions_def_name == "enriched_runs" and list(add.partition_keys) == [
        "run=2026-03-01-10-00-00",
        "run=2026-03-01-11-00-00",
    ]
    # The daemon registers the partitions and creates the runs, which take the items up: not requested again.
    launch(instance, definitions.resolve_job_def("shred_enriched_run"), first)

    with dg.build_sensor_context(instance=instance, resources=resources) as context:
        second = enriched_run_folders(context)
    assert [r.partition_key for r in second.run_requests] == ["run=2026-03-01-12-00-00"]


def test_a_blocking_check_that_fails_withdraws_the_marker_and_the_rerun_materialises_with_metadata_and_passing_checks(
    definitions, lake, instance, monkeypatch, spark_builds
):
    """Two runs of the golden batch prove:
    - when its published output holds an event twice (a writer's fault, made here), unique_event_ids fails
      after the output is published, and the marker goes, so that no loader or web model takes the folder in;
    - the rerun, with the default settings, succeeds and writes the marker again; it starts one SparkSession,
      shared by its steps; it materialises every asset of the step with its metadata (counts, path, phase
      times within the run's duration, entity types) and every check passes."""
    write_run_folder(lake, RUN, GOLDEN_INPUT)
    instance.add_dynamic_partitions("enriched_runs", [RUN])
    marker = Path(lake.shredding_complete(RUN))

    def publish_an_event_twice(fs, lake, run, *args):
        publish(fs, lake, run, *args)
        part = next(p for p in Path(lake.shredded_good(run), "atomic-events").glob("part-*") if p.read_text())
        part.write_text(part.read_text() * 2)

    publish = shred_batch._publish
    with monkeypatch.context() as patch:
        patch.setattr(shred_batch, "_publish", publish_an_event_twice)
        job = definitions.resolve_job_def("shred_enriched_run")
        result = job.execute_in_process(partition_key=RUN, instance=instance, raise_on_error=False)
    assert not result.success
    [unique] = [
        e.asset_check_evaluation_data
        for e in result.all_events
        if e.event_type == dg.DagsterEventType.ASSET_CHECK_EVALUATION
        and e.asset_check_evaluation_data.check_name == "unique_event_ids"
    ]
    assert not unique.passed
    assert not marker.exists() and any(Path(lake.shredded_good(RUN), "atomic-events").iterdir())
    [atomic] = materializations(result, "atomic_events")
    assert atomic.metadata["completion_marker_withdrawn_by"].value == ["lines_accounted_for", "unique_event_ids"]

    builds = len(spark_builds)
    result = definitions.resolve_job_def("shred_enriched_run").execute_in_process(partition_key=RUN, instance=instance)
    assert result.success and marker.exists()
    assert len(spark_builds) - builds == 1, "one SparkSession per run, shared by the steps"

    [batch] = materializations(result, "enriched_batch")
    assert batch.metadata["files"].value == 1 and batch.partition == RUN
    [atomic] = materializations(result, "atomic_events")
    meta = {k: v.value for k, v in atomic.metadata.items()}
    assert (meta["lines_read"], meta["good"], meta["bad"]) == (7, 4, 2)
    assert (meta["natural_duplicates_removed"], meta["synthetic_duplicates_renamed"]) == (1, 2)
    assert meta["path"] == f"{lake.shredded_good(RUN)}/atomic-events"
    assert set(meta["phase_seconds"]) >= {"parse", "decisions", "output", "publish"}
    rounding = 0.01 * len(meta["phase_seconds"])  # each figure is rounded to 0.01 s
    assert (
        0
        < sum(meta["phase_seconds"].values())
        <= meta["duration_seconds"] + meta["phase_seconds"]["publish"] + rounding
    )
    [types] = materializations(result, "shredded_types")
    table = types.metadata["entity_types"].value
    counts = {r.data["schema"]: r.data["count"] for r in table.records}
    assert counts["iglu:com.snowplowanalytics.snowplow/web_page/jsonschema/1-0-0"] == 4
    assert counts["iglu:com.snowplowanalytics.snowplow/duplicate/jsonschema/1-0-0"] == 2

    evaluations = [
        e.asset_check_evaluation_data
        for e in result.all_events
        if e.event_type == dg.DagsterEventType.ASSET_CHECK_EVALUATION
    ]
    assert {e.check_name for e in evaluations} == set(SHRED_CHECKS)
    assert all(e.passed for e in evaluations)
    assert instance.get_materialized_partitions(dg.AssetKey("atomic_events")) == {RUN}


def test_a_folder_shredded_after_the_web_models_moved_past_its_events_warns_and_still_succeeds(
    definitions, lake, instance
):
    """web/late_batches.py: the golden batch's events are of 2026-03-01, and the web models have processed up to
    2026-03-20; no incremental run reads them, and until 2026-11-28 nothing said so."""
    write_run_folder(lake, RUN, GOLDEN_INPUT)
    instance.add_dynamic_partitions("enriched_runs", [RUN])
    record_manifest(instance, datetime(2026, 3, 20, tzinfo=UTC))
    result = definitions.resolve_job_def("shred_enriched_run").execute_in_process(partition_key=RUN, instance=instance)
    assert result.success and Path(lake.shredding_complete(RUN)).exists(), "a warning, not a blocking check"
    [reach] = [
        e.asset_check_evaluation_data
        for e in result.all_events
        if e.event_type == dg.DagsterEventType.ASSET_CHECK_EVALUATION
        and e.asset_check_evaluation_data.check_name == "events_within_web_models_reach"
    ]
    assert not reach.passed and reach.severity == dg.AssetCheckSeverity.WARN
    assert "before 2026-03-19 18:00:00" in reach.description and "full refresh" in reach.description
