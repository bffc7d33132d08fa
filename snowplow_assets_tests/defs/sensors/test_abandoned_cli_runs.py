"""The abandoned_cli_runs sensor fails the runs of CLI processes that died and frees their slots, so that the
runs the folder sensor requests can shred again, with no `process` run (the runs: dying_cli_runs.py)."""

import signal

import dagster as dg
import pytest

from snowplow_assets.definitions import defs
from snowplow_assets.defs.manifests.processing_manifest import RUN_FOLDERS, ProcessingManifest
from snowplow_assets.defs.sensors.abandoned_cli_runs import SENSOR_NAME
from snowplow_assets.processing import State
from snowplow_assets_tests.defs.manifests.dying_cli_runs import (  # noqa: F401 (dagster_home: a fixture, used by name)
    can_shred,
    dagster_home,
    start_run_in_its_shred_step,
)

DEAD, LIVE, NEXT = (f"run=2026-03-08-0{h}-00-00" for h in range(3))


def tick(instance: dg.DagsterInstance) -> str:
    """One evaluation of the project's sensor, as the daemon makes it; its skip message."""
    sensor = defs().resolve_sensor_def(SENSOR_NAME)
    result = sensor.evaluate_tick(dg.build_sensor_context(instance=instance))
    assert not result.run_requests, "the sensor requests no runs"
    return result.skip_message


@pytest.mark.usefixtures("dagster_home")
def test_the_sensor_fails_the_runs_of_cli_processes_that_died_and_frees_their_slots():
    with dg.DagsterInstance.get() as instance:
        instance.add_dynamic_partitions("enriched_runs", [DEAD, LIVE])
        assert tick(instance) == "no run of a snowplow-assets process that has ended"
    dead, dead_run = start_run_in_its_shred_step(DEAD, take_slot=True)
    live, live_run = start_run_in_its_shred_step(LIVE, take_slot=False)
    try:
        with dg.DagsterInstance.get() as instance:
            assert tick(instance) == "no run of a snowplow-assets process that has ended", "both still run"
            # Terminate in the UI marks a CLI run CANCELING and can do no more; its process then dies. (A run
            # still STARTED is swept alike: cli/test_abandoned_runs.py.)
            instance.report_run_canceling(instance.get_run_by_id(dead_run), "Terminate clicked in the UI")
            dead.send_signal(signal.SIGKILL)
            dead.wait()
            assert not can_shred(instance, NEXT), "the dead run's step holds the pool's one slot"

            message = tick(instance)

            assert message == f"failed 1 run(s) whose snowplow-assets process had ended: {dead_run}"
            assert instance.get_run_by_id(dead_run).status == dg.DagsterRunStatus.FAILURE
            assert instance.get_run_by_id(live_run).status == dg.DagsterRunStatus.STARTED
            assert can_shred(instance, NEXT), "its slot is free at once"
            items = ProcessingManifest(instance).items(RUN_FOLDERS, [DEAD, LIVE])
            assert items[DEAD].state is State.FAILED
            assert items[LIVE].state is State.PROCESSING
            assert tick(instance) == "no run of a snowplow-assets process that has ended", "failed once"
    finally:
        live.send_signal(signal.SIGKILL)
        live.wait()


def test_the_sensor_runs_by_default():
    sensor = defs().resolve_sensor_def(SENSOR_NAME)
    assert sensor.default_status is dg.DefaultSensorStatus.RUNNING
    assert sensor.minimum_interval_seconds == 60
