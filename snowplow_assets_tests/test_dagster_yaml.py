"""dagster.yaml never lets two runs process one item at once: proved on a real instance configured by it.

Single-partition runs carry a dagster/partition tag, held to one queued run per value by the real queued-run
daemon. A single-run backfill over a range carries none (and no job tags), so the `shred` step is also in the
`shred` pool, with the event manifest's populator, whose one slot each step claims from the instance before
it runs; the web models step and the CDC cut and latest view have pools of their own. A run killed in such a
step gets its slot back from the monitoring daemon that dagster.yaml turns on."""

import dagster as dg
import dagster._check as check
import pytest
import yaml
from dagster._core.events import DagsterEvent, DagsterEventType
from dagster._core.execution.plan.instance_concurrency_context import InstanceConcurrencyContext
from dagster._core.instance.config import PoolGranularity
from dagster._core.storage.tags import ASSET_PARTITION_RANGE_START_TAG, BACKFILL_ID_TAG, PARTITION_NAME_TAG
from dagster._core.test_utils import freeze_time
from dagster._daemon.backfill import execute_backfill_iteration
from dagster._daemon.daemon import get_default_daemon_logger
from dagster._daemon.monitoring import execute_concurrency_slots_iteration
from dagster._daemon.run_coordinator.queued_run_coordinator_daemon import QueuedRunCoordinatorDaemon

from snowplow_assets.defs.manifests.manifest_locks import startable_runs
from snowplow_assets.defs.manifests.processing_manifest import RUN_FOLDERS, ProcessingManifest
from snowplow_assets.defs.pools import CDC_BATCHES_POOL, SHRED_POOL, WEB_MODELS_POOL
from snowplow_assets.defs.resources import EVENT_MANIFEST_TAG
from snowplow_assets.processing import State
from snowplow_assets.settings import PROJECT_ROOT
from snowplow_assets_tests.defs.backfills import LOCATION, SHRED_ASSETS, launch_backfill, project_workspace

A, B, C, D = (f"run=2026-03-06-0{h}-00-00" for h in range(4))
LANDING_1, LANDING_2 = "orders-0001", "orders-0002"


@pytest.fixture
def definitions(tmp_path, monkeypatch) -> dg.Definitions:
    monkeypatch.setenv("SNOWPLOW_LAKE", str(tmp_path / "lake"))
    from snowplow_assets.definitions import defs

    return defs()


@pytest.fixture
def queued_instance(definitions):
    """A real instance with the project's run coordinator and concurrency rules; the launcher only records."""
    config = yaml.safe_load((PROJECT_ROOT / "dagster.yaml").read_text())
    overrides = {
        "run_coordinator": config["run_coordinator"],
        "concurrency": config["concurrency"],
        "run_monitoring": config["run_monitoring"],
        "run_launcher": {"module": "dagster._core.test_utils", "class": "MockedRunLauncher"},
    }
    with dg.instance_for_test(overrides=overrides) as instance:
        yield instance


@pytest.fixture
def workspace(queued_instance):
    with project_workspace(queued_instance) as context:
        yield context


def enqueue(
    workspace, definitions: dg.Definitions, job_name: str, partition: str | None, run_config: dict | None = None
) -> str:
    """A run queued the way a sensor's request is: created from the code location, then enqueued.

    Shred runs get the tags of a deployment with the DynamoDB event manifest: with the lake one, dagster.yaml
    also lets only one shred job run execute at a time (whatever the partition), which would hide the rules
    tested here."""
    instance = workspace.instance
    location = workspace.create_request_context().get_code_location(LOCATION)
    repository = next(iter(location.get_repositories().values()))
    remote_job = repository.get_full_job(job_name)
    run = instance.create_run_for_job(
        definitions.resolve_job_def(job_name),
        remote_job_origin=remote_job.get_remote_origin(),
        job_code_origin=remote_job.get_python_origin(),
        run_config=run_config,
        tags={EVENT_MANIFEST_TAG: "dynamodb", **({PARTITION_NAME_TAG: partition} if partition else {})},
        status=dg.DagsterRunStatus.NOT_STARTED,
    )
    instance.report_dagster_event(
        DagsterEvent(DagsterEventType.PIPELINE_ENQUEUED.value, job_name=run.job_name), run.run_id
    )
    return run.run_id


def dequeuer(workspace):
    """One queued-run daemon iteration; then every run launched so far, in launch order."""
    daemon = QueuedRunCoordinatorDaemon(interval_seconds=1)

    def dequeue() -> list[str]:
        list(daemon.run_iteration(workspace))
        return [run.run_id for run in workspace.instance.run_launcher.queue()]

    return dequeue


def finish(instance: dg.DagsterInstance, run_id: str) -> None:
    instance.report_dagster_event(DagsterEvent(DagsterEventType.RUN_SUCCESS.value, job_name="any"), run_id)


def test_one_run_per_partition_at_a_time(workspace, definitions):
    instance, dequeue = workspace.instance, dequeuer(workspace)
    instance.add_dynamic_partitions("cdc_landings", [LANDING_1, LANDING_2])

    def ingest(landing: str) -> str:
        return enqueue(workspace, definitions, "cdc_ingest_landing", landing)

    first, second, other = ingest(LANDING_1), ingest(LANDING_1), ingest(LANDING_2)
    assert dequeue() == [first, other], "the second run of a partition waits; another partition does not"
    assert instance.get_run_by_id(second).status == dg.DagsterRunStatus.QUEUED
    finish(instance, first)
    assert dequeue() == [first, other, second], "once the first run of the partition is over, the second starts"


def test_a_backfilled_range_never_shreds_alongside_another_run(workspace, definitions):
    instance, dequeue = workspace.instance, dequeuer(workspace)
    instance.add_dynamic_partitions("enriched_runs", [A, B, C, D])
    single = enqueue(workspace, definitions, "shred_enriched_run", A)
    backfill_id = launch_backfill(workspace, SHRED_ASSETS, [A, B, C])
    list(execute_backfill_iteration(workspace, get_default_daemon_logger("BackfillDaemon")))
    [ranged] = instance.get_runs(dg.RunsFilter(tags={BACKFILL_ID_TAG: backfill_id}))
    assert ranged.tags[ASSET_PARTITION_RANGE_START_TAG] == A and PARTITION_NAME_TAG not in ranged.tags, (
        "a ranged run has no partition tag: the partition rule cannot hold it back"
    )
    assert dequeue() == [single, ranged.run_id], "so both runs start"

    items = ProcessingManifest(instance).items(RUN_FOLDERS, [A, B, C, D])
    assert set(items[A].open_runs) == {single, ranged.run_id}
    assert items[B].open_runs == items[C].open_runs == (ranged.run_id,), "the range holds each of its items"
    assert items[D].state is State.NEW and [
        s.name for s in startable_runs(instance, RUN_FOLDERS, [A, B, C, D]).startable
    ] == [D]

    # Their `shred` steps take the pool's one slot in turn, as the executor does before it runs a step.
    assert (
        instance.get_run_by_id(single).run_op_concurrency.all_pools
        == ranged.run_op_concurrency.all_pools
        == {SHRED_POOL}
    )
    with InstanceConcurrencyContext(instance, instance.get_run_by_id(single)) as first:
        with InstanceConcurrencyContext(instance, ranged) as second:
            assert first.claim(SHRED_POOL, "shred"), "the first run to get there shreds"
            assert not second.claim(SHRED_POOL, "shred"), "the ranged run waits, though it shreds other folders too"
        first.free_step("shred")
    with InstanceConcurrencyContext(instance, ranged) as second:
        assert second.claim(SHRED_POOL, "shred"), "and shreds once the first is done"


def test_a_populate_of_the_event_manifest_never_runs_alongside_a_backfilled_range(workspace, definitions):
    """An asset backfill carries no job tags, so the event-manifest tag limit cannot hold it back; the pool does."""
    instance = workspace.instance
    instance.add_dynamic_partitions("enriched_runs", [A, B])
    since = {"ops": {"populate_event_manifest_op": {"config": {"since": "2026-03-06"}}}}
    populate = instance.get_run_by_id(enqueue(workspace, definitions, "populate_event_manifest", None, since))
    backfill_id = launch_backfill(workspace, SHRED_ASSETS, [A, B])
    list(execute_backfill_iteration(workspace, get_default_daemon_logger("BackfillDaemon")))
    [ranged] = instance.get_runs(dg.RunsFilter(tags={BACKFILL_ID_TAG: backfill_id}))
    assert EVENT_MANIFEST_TAG not in ranged.tags
    assert populate.run_op_concurrency.all_pools == ranged.run_op_concurrency.all_pools == {SHRED_POOL}
    with InstanceConcurrencyContext(instance, populate) as first:
        with InstanceConcurrencyContext(instance, ranged) as second:
            assert first.claim(SHRED_POOL, "populate_event_manifest_op"), "the populate writes the manifest"
            assert not second.claim(SHRED_POOL, "shred"), "the ranged shred waits for it"


def test_pools_hold_the_steps_that_must_never_overlap_to_one_slot(definitions, queued_instance):
    """dagster.yaml's default pool limit of 1: within a pool, one step at a time, whatever its run."""
    config = queued_instance.event_log_storage.get_pool_config()
    assert (config.default_pool_limit, config.pool_granularity) == (1, PoolGranularity.OP)
    steps_by_pool: dict[str, set[str]] = {}
    for job in definitions.get_repository_def().get_all_jobs():
        for node in job.all_node_defs:
            if getattr(node, "pool", None):
                steps_by_pool.setdefault(node.pool, set()).add(node.name)
    assert steps_by_pool == {
        SHRED_POOL: {"shred", "populate_event_manifest_op"},
        WEB_MODELS_POOL: {"build_web_models"},
        CDC_BATCHES_POOL: {"cdc_batches", "cdc_latest"},
    }


def test_two_cdc_batch_runs_never_cut_or_swap_at_once(workspace, definitions):
    """The schedule's run and one from `process` or the UI (or a cut outlasting the schedule's interval) carry
    no partition tag, so both start; their steps take the `cdc_batches` pool's one slot in turn, so no two
    swaps of one batch or latest folder overlap (on S3 both writers' files would end up in it)."""
    instance, dequeue = workspace.instance, dequeuer(workspace)
    scheduled, manual = (enqueue(workspace, definitions, "cdc_batch", None) for _ in range(2))
    assert dequeue() == [scheduled, manual], "no run rule holds the second back"
    first, second = (instance.get_run_by_id(run_id) for run_id in (scheduled, manual))
    assert first.run_op_concurrency.all_pools == second.run_op_concurrency.all_pools == {CDC_BATCHES_POOL}
    with InstanceConcurrencyContext(instance, first) as cutting:
        assert cutting.claim(CDC_BATCHES_POOL, "cdc_batches"), "the first run cuts"
        with InstanceConcurrencyContext(instance, second) as waiting:
            assert not waiting.claim(CDC_BATCHES_POOL, "cdc_batches"), "the second run's cut waits"
            assert not waiting.claim(CDC_BATCHES_POOL, "cdc_latest"), "and so would its latest view"
        cutting.free_step("cdc_batches")
        assert cutting.claim(CDC_BATCHES_POOL, "cdc_latest"), "the first run's own latest view follows its cut"
        with InstanceConcurrencyContext(instance, second) as waiting:
            assert not waiting.claim(CDC_BATCHES_POOL, "cdc_batches"), "while it writes, no cut expires its batch"
        cutting.free_step("cdc_latest")
    with InstanceConcurrencyContext(instance, second) as waiting:
        assert waiting.claim(CDC_BATCHES_POOL, "cdc_batches"), "then the second run cuts"


def test_a_run_killed_mid_step_gives_its_pool_slot_back(workspace, definitions):
    """A killed run's code server marks it failed, but its `shred` step never freed the pool's one slot; the
    monitoring daemon, as dagster.yaml configures it, frees it once the run has ended, so shredding goes on."""
    instance = workspace.instance
    assert "MONITORING" in instance.get_required_daemon_types(), "the daemon that frees them runs"
    instance.add_dynamic_partitions("enriched_runs", [A, B])
    killed = instance.get_run_by_id(enqueue(workspace, definitions, "shred_enriched_run", A))
    waiting = instance.get_run_by_id(enqueue(workspace, definitions, "shred_enriched_run", B))
    with InstanceConcurrencyContext(instance, killed) as step:
        assert step.claim(SHRED_POOL, "shred")  # and the process dies in the step: nothing frees it
    instance.report_run_failed(killed)
    ended = check.not_none(instance.get_run_record_by_id(killed.run_id)).end_time

    def waiting_can_shred() -> bool:
        with InstanceConcurrencyContext(instance, waiting) as step:
            return step.claim(SHRED_POOL, "shred")

    logger = get_default_daemon_logger("MonitoringDaemon")
    after = instance.run_monitoring_settings["free_slots_after_run_end_seconds"]
    with freeze_time(ended + after / 2):
        list(execute_concurrency_slots_iteration(workspace, logger))
    assert not waiting_can_shred(), "the slot is still held just after the run ended"
    with freeze_time(ended + after + 1):
        list(execute_concurrency_slots_iteration(workspace, logger))
    assert waiting_can_shred()
