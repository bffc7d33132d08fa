"""A backfill of several run folders launched as the UI launches it: one run, one Spark session, and every
folder recorded on its own partition, in its checks and in the processing manifest."""

from pathlib import Path

import dagster as dg
import pytest
from dagster._core.definitions.reconstruct import ReconstructableJob
from dagster._core.execution.backfill import BulkActionStatus
from dagster._core.storage.tags import ASSET_PARTITION_RANGE_END_TAG, ASSET_PARTITION_RANGE_START_TAG, BACKFILL_ID_TAG
from dagster._daemon.backfill import execute_backfill_iteration
from dagster._daemon.daemon import get_default_daemon_logger
from pyspark.sql import SparkSession

from snowplow_assets.defs.manifests.processing_manifest import RUN_FOLDERS, ProcessingManifest
from snowplow_assets.lake import Lake
from snowplow_assets.processing import State
from snowplow_assets_tests.conftest import write_run_folder
from snowplow_assets_tests.defs.backfills import SHRED_ASSETS, launch_backfill, project_workspace
from snowplow_assets_tests.defs.test_shred_job import SHRED_CHECKS
from snowplow_assets_tests.events.builders import event_line
from snowplow_assets_tests.events.test_shred_batch import GOLDEN_INPUT, NOT_TSV, A

FIRST, SECOND, THIRD = (f"run=2026-03-07-0{h}-00-00" for h in range(3))
BROKEN, LATER = "run=2026-03-07-03-00-00", "run=2026-03-07-04-00-00"
NEW_EVENT = event_line(event_id="eeeeeeee-5555-4555-8555-555555555555", event_fingerprint="fpE")
# FIRST is the golden batch; SECOND only repeats an event FIRST holds, a cross-batch duplicate once FIRST is in
# the event manifest, which shows that the run shreds the folders one after the other, in time order.
INPUTS = {FIRST: GOLDEN_INPUT, SECOND: [A], THIRD: [NEW_EVENT, NOT_TSV]}


class Backfilled:
    def __init__(self, instance: dg.DagsterInstance, lake: Lake, ok: str, failed: str, spark_starts: int) -> None:
        self.instance, self.lake, self.ok, self.failed, self.spark_starts = instance, lake, ok, failed, spark_starts

    def runs(self, backfill_id: str) -> list[dg.DagsterRun]:
        return list(self.instance.get_runs(dg.RunsFilter(tags={BACKFILL_ID_TAG: backfill_id})))


def _run_daemon(workspace, backfill_id: str) -> None:
    """Backfill daemon iterations until the backfill is over; the launcher executes each run in this process."""
    for _ in range(10):
        list(execute_backfill_iteration(workspace, get_default_daemon_logger("BackfillDaemon")))
        if workspace.instance.get_backfill(backfill_id).status != BulkActionStatus.REQUESTED:
            return
    raise AssertionError(f"backfill {backfill_id} did not finish")


@pytest.fixture(scope="module")
def backfilled(tmp_path_factory, spark) -> Backfilled:
    """The shred assets backfilled over FIRST..THIRD, then over BROKEN..LATER, where BROKEN holds a truncated gzip file."""
    lake = Lake(str(tmp_path_factory.mktemp("backfill") / "lake"))
    for name, lines in INPUTS.items():
        write_run_folder(lake, name, lines)
    broken = write_run_folder(lake, BROKEN, [NEW_EVENT], compress=True)
    (broken / "part-00000.gz").write_bytes((broken / "part-00000.gz").read_bytes()[:30])
    (broken / "_SUCCESS").touch()  # written last, as a writer does: the folder is ready, its file broken
    write_run_folder(lake, LATER, [NEW_EVENT])
    spark_starts: list[object] = []
    original = SparkSession.Builder.getOrCreate

    def counting(builder):
        spark_starts.append(builder)
        return original(builder)

    overrides = {
        # Runs execute at once, in this process: what the queued coordinator and the default launcher do, minus
        # the queue (dagster.yaml's queue and pool are proved in test_dagster_yaml.py) and the subprocess.
        "run_coordinator": {"module": "dagster._core.run_coordinator", "class": "DefaultRunCoordinator"},
        "run_launcher": {
            "module": "dagster._core.launcher.sync_in_memory_run_launcher",
            "class": "SyncInMemoryRunLauncher",
        },
    }
    with pytest.MonkeyPatch.context() as patch, dg.instance_for_test(overrides=overrides) as instance:
        patch.setenv("SNOWPLOW_LAKE", lake.root)
        # Entries of the event manifest expire some time after their batch's etlTime: not within this test.
        patch.setenv("SNOWPLOW_EVENT_MANIFEST_TTL_DAYS", "36500")
        patch.setattr(SparkSession.Builder, "getOrCreate", counting)
        # The launcher loads the code location like a run worker; forget one loaded with another test's lake.
        ReconstructableJob.get_repository_definition.cache_clear()
        ReconstructableJob.get_definition.cache_clear()
        with project_workspace(instance) as workspace:
            instance.add_dynamic_partitions("enriched_runs", [FIRST, SECOND, THIRD, BROKEN, LATER])
            ok = launch_backfill(workspace, SHRED_ASSETS, [FIRST, SECOND, THIRD])
            _run_daemon(workspace, ok)
            starts = len(spark_starts)
            failed = launch_backfill(workspace, SHRED_ASSETS, [BROKEN, LATER])
            _run_daemon(workspace, failed)
        ReconstructableJob.get_repository_definition.cache_clear()
        ReconstructableJob.get_definition.cache_clear()
        yield Backfilled(instance, lake, ok, failed, starts)


def _metadata(instance: dg.DagsterInstance, asset: str, partition: str) -> dict:
    [record] = instance.fetch_materializations(
        dg.AssetRecordsFilter(dg.AssetKey(asset), asset_partitions=[partition]), limit=5
    ).records
    return {k: v.value for k, v in record.asset_materialization.metadata.items()}


def test_a_backfill_of_several_run_folders_is_one_run_with_one_spark_session(backfilled):
    assert backfilled.instance.get_backfill(backfilled.ok).status == BulkActionStatus.COMPLETED_SUCCESS
    [run] = backfilled.runs(backfilled.ok)
    assert run.status == dg.DagsterRunStatus.SUCCESS
    assert (run.tags[ASSET_PARTITION_RANGE_START_TAG], run.tags[ASSET_PARTITION_RANGE_END_TAG]) == (FIRST, THIRD)
    assert backfilled.spark_starts == 1, "Spark starts once for the whole range"


def test_each_run_folder_is_recorded_on_its_own_partition(backfilled):
    instance, lake = backfilled.instance, backfilled.lake
    counts = {name: _metadata(instance, "atomic_events", name) for name in INPUTS}
    assert {
        name: (m["lines_read"], m["good"], m["bad"], m["cross_batch_duplicates_removed"]) for name, m in counts.items()
    } == {
        FIRST: (7, 4, 2, 0),
        SECOND: (1, 0, 0, 1),
        THIRD: (2, 1, 1, 0),
    }
    for name in INPUTS:
        assert _metadata(instance, "atomic_events", name)["path"] == f"{lake.shredded_good(name)}/atomic-events"
        assert _metadata(instance, "enriched_batch", name)["path"] == lake.enriched_run(name)
        assert _metadata(instance, "event_manifest", name)["backend"] == "lake"
    types = _metadata(instance, "shredded_types", FIRST)["entity_types"]
    # the third run's entities: a web_page and a ua_parser context
    assert len(types.records) == 4 and _metadata(instance, "shredded_types", THIRD)["entities"] == 2


def test_each_check_is_evaluated_per_run_folder_and_reported_once(backfilled):
    [run] = backfilled.runs(backfilled.ok)
    evaluations = [
        record.event_log_entry.dagster_event.asset_check_evaluation_data
        for record in backfilled.instance.get_records_for_run(
            run.run_id, of_type=dg.DagsterEventType.ASSET_CHECK_EVALUATION
        ).records
    ]
    assert sorted(e.check_name for e in evaluations) == sorted(SHRED_CHECKS)
    for evaluation in evaluations:
        assert evaluation.passed and evaluation.metadata["partitions"].value == 3
        assert sorted(evaluation.metadata["by_partition"].value) == sorted(INPUTS)
        assert all(detail["passed"] for detail in evaluation.metadata["by_partition"].value.values())


def test_the_manifest_shows_each_item_processed_by_the_one_run(backfilled):
    instance = backfilled.instance
    [run] = backfilled.runs(backfilled.ok)
    record = instance.get_run_record_by_id(run.run_id)
    items = ProcessingManifest(instance).items(RUN_FOLDERS, list(INPUTS))
    for name, item in items.items():
        assert (item.state, item.valid) == (State.PROCESSED, True), item
        _, processing, processed = item.records
        assert (processing.run_id, processed.run_id, processed.previous) == (run.run_id, run.run_id, processing.id)
        assert (processing.time, processed.time) == (record.start_time, record.end_time)
        assert processed.application == "shredded_types", "a run of the implicit asset job is shown by its asset"
        assert processed.payload["backfill"] == backfilled.ok
        # What the manifest reads from the SQL tables is what Dagster's API reports for this partition.
        expected = {k: v for k, v in _metadata(instance, "shredded_types", name).items() if k != "entity_types"}
        assert {k: processed.payload[k] for k in expected} == expected
    assert items[SECOND].records[-1].payload["cross_batch_duplicates_removed"] == 1
    assert [r["schema"] for r in items[FIRST].records[-1].payload["entity_types"]] == [
        r.data["schema"] for r in _metadata(instance, "shredded_types", FIRST)["entity_types"].records
    ]


def test_a_folder_that_cannot_be_shredded_fails_its_run_at_once_and_every_item_of_the_range(backfilled):
    instance = backfilled.instance
    [run] = backfilled.runs(backfilled.failed)
    assert run.status == dg.DagsterRunStatus.FAILURE
    assert instance.get_materialized_partitions(dg.AssetKey("atomic_events")) == set(INPUTS), (
        "nothing of the failed run"
    )
    assert not Path(backfilled.lake.shredded_good(LATER)).exists(), "the folder after the broken one is not shredded"
    items = ProcessingManifest(instance).items(RUN_FOLDERS, [BROKEN, LATER])
    for item in items.values():
        assert (item.state, item.valid, item.may_start) == (State.FAILED, True, False)
        failed = item.records[-1]
        assert (failed.run_id, failed.payload["backfill"], failed.payload["step"]) == (
            run.run_id,
            backfilled.failed,
            "shred",
        )
        assert failed.payload["run_folder"] == BROKEN, "the reason names the folder that failed"
        # Spark's error goes on with the JVM's stack trace; the reason is in its last cause.
        assert "(caused by java.io.EOFException: Unexpected end of input stream)" in failed.payload["error"]
        assert "\n" not in failed.payload["error"], "one line, not the stack trace"
    [step_failure] = instance.get_records_for_run(run.run_id, of_type=dg.DagsterEventType.STEP_FAILURE).records
    description = step_failure.event_log_entry.dagster_event.step_failure_data.user_failure_data.description
    assert description.startswith(f"shredding {BROKEN} failed: ") and "EOFException" in description
