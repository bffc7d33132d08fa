"""dagster.yaml never lets two runs of one partition execute at once: proved with the real queued-run daemon."""

import dagster as dg
import pytest
import yaml
from dagster._core.events import DagsterEvent, DagsterEventType
from dagster._core.remote_origin import InProcessCodeLocationOrigin
from dagster._core.storage.tags import PARTITION_NAME_TAG
from dagster._core.test_utils import create_test_daemon_workspace_context
from dagster._core.types.loadable_target_origin import LoadableTargetOrigin
from dagster._core.workspace.load_target import InProcessWorkspaceLoadTarget
from dagster._daemon.run_coordinator.queued_run_coordinator_daemon import QueuedRunCoordinatorDaemon

from snowplow_assets.defs.assets.enriched_batch import enriched_batch
from snowplow_assets.defs.assets.shredded import shred
from snowplow_assets.defs.jobs.shred_enriched_run import shred_enriched_run
from snowplow_assets.defs.manifests.processing_manifest import RUN_FOLDERS, ProcessingManifest
from snowplow_assets.defs.resources import EVENT_MANIFEST_TAG, build_resources
from snowplow_assets.processing import State
from snowplow_assets.settings import PROJECT_ROOT, Settings

A, B = "run=2026-03-06-00-00-00", "run=2026-03-06-01-00-00"

# The test workspace: the project's shred job, assets and resources, loaded in process by the daemon.
shred_location = dg.Definitions(
    assets=[enriched_batch, shred], jobs=[shred_enriched_run], resources=build_resources(Settings()), executor=dg.in_process_executor
)


@pytest.fixture
def queued_instance(tmp_path, monkeypatch):
    """A real instance with the project's run coordinator and concurrency rules; the launcher only records."""
    monkeypatch.setenv("SNOWPLOW_LAKE", str(tmp_path / "lake"))
    config = yaml.safe_load((PROJECT_ROOT / "dagster.yaml").read_text())
    overrides = {
        "run_coordinator": config["run_coordinator"],
        "concurrency": config["concurrency"],
        "run_launcher": {"module": "dagster._core.test_utils", "class": "MockedRunLauncher"},
    }
    with dg.instance_for_test(overrides=overrides) as instance:
        yield instance


@pytest.fixture
def workspace(queued_instance):
    origin = InProcessCodeLocationOrigin(
        LoadableTargetOrigin(module_name=__name__, attribute="shred_location"), location_name="shred"
    )
    with create_test_daemon_workspace_context(InProcessWorkspaceLoadTarget([origin]), queued_instance) as context:
        yield context


def enqueue(instance: dg.DagsterInstance, workspace, partition: str) -> str:
    """A shred run queued the way the sensor's requests are: created from the code location, then enqueued.

    Its tags are those of a deployment with the DynamoDB event manifest: with the lake one, dagster.yaml
    also lets only one shred run execute at a time (whatever the partition), which would hide the rule
    tested here."""
    location = workspace.create_request_context().get_code_location("shred")
    remote_job = next(iter(location.get_repositories().values())).get_full_job("shred_enriched_run")
    run = instance.create_run_for_job(
        shred_location.resolve_job_def("shred_enriched_run"),
        remote_job_origin=remote_job.get_remote_origin(),
        job_code_origin=remote_job.get_python_origin(),
        tags={EVENT_MANIFEST_TAG: "dynamodb", PARTITION_NAME_TAG: partition},
        status=dg.DagsterRunStatus.NOT_STARTED,
    )
    instance.report_dagster_event(DagsterEvent(DagsterEventType.PIPELINE_ENQUEUED.value, job_name=run.job_name), run.run_id)
    return run.run_id


def test_one_run_per_partition_at_a_time(queued_instance, workspace):
    instance, daemon = queued_instance, QueuedRunCoordinatorDaemon(interval_seconds=1)
    instance.add_dynamic_partitions("enriched_runs", [A, B])

    def dequeue() -> list[str]:
        list(daemon.run_iteration(workspace))
        return [run.run_id for run in instance.run_launcher.queue()]

    first_a, second_a = enqueue(instance, workspace, A), enqueue(instance, workspace, A)
    assert dequeue() == [first_a], "the second run of the same partition waits, though max_concurrent_runs is 2"
    assert instance.get_run_by_id(second_a).status == dg.DagsterRunStatus.QUEUED
    item = ProcessingManifest(instance).item(RUN_FOLDERS, A)
    assert item.state is State.PROCESSING and set(item.open_runs) == {first_a, second_a}

    only_b = enqueue(instance, workspace, B)
    assert dequeue() == [first_a, only_b], "another partition is not held up"
    assert instance.get_run_by_id(second_a).status == dg.DagsterRunStatus.QUEUED

    instance.report_dagster_event(DagsterEvent(DagsterEventType.RUN_SUCCESS.value, job_name="shred_enriched_run"), first_a)
    assert dequeue() == [first_a, only_b, second_a], "once the first run of A is over, the second starts"
