"""A CLI process killed mid-run leaves its run Started; the next `process` fails it and frees what it held
(the runs: dying_cli_runs.py)."""

import json
import signal

import dagster as dg
import pytest
from click.testing import CliRunner
from dagster._core.storage.tags import PARTITION_NAME_TAG

from snowplow_assets.cli import main
from snowplow_assets.definitions import defs
from snowplow_assets.defs.manifests.cli_run_processes import CLI_HOST_TAG, CLI_PROCESS_TAG
from snowplow_assets.defs.manifests.processing_manifest import RUN_FOLDERS, ProcessingManifest
from snowplow_assets.processing import State
from snowplow_assets_tests.defs.manifests.dying_cli_runs import (  # noqa: F401 (dagster_home: a fixture, used by name)
    SHRED_JOB,
    can_shred,
    dagster_home,
    start_run_in_its_shred_step,
)

DEAD, LIVE, ELSEWHERE, NEXT = (f"run=2026-03-07-0{h}-00-00" for h in range(4))


@pytest.mark.usefixtures("dagster_home")
def test_process_fails_the_runs_of_cli_processes_that_died_and_frees_their_slots():
    with dg.DagsterInstance.get() as instance:
        instance.add_dynamic_partitions("enriched_runs", [DEAD, LIVE, ELSEWHERE])
    dead, dead_run = start_run_in_its_shred_step(DEAD, take_slot=True)
    live, live_run = start_run_in_its_shred_step(LIVE, take_slot=False)
    try:
        dead.send_signal(signal.SIGKILL)
        dead.wait()
        with dg.DagsterInstance.get() as instance:
            # A run of a process on another host, which this host cannot ask after.
            elsewhere = instance.create_run_for_job(
                defs().resolve_job_def(SHRED_JOB),
                tags={CLI_HOST_TAG: "elsewhere.example", CLI_PROCESS_TAG: "1/", PARTITION_NAME_TAG: ELSEWHERE},
                status=dg.DagsterRunStatus.STARTED,
            )
            assert instance.get_run_by_id(dead_run).status == dg.DagsterRunStatus.STARTED
            assert not can_shred(instance, NEXT), "the dead run's step holds the pool's one slot"

        result = CliRunner().invoke(main, ["process"])

        assert result.exit_code == 0, result.output
        assert f"failed run {dead_run} of {SHRED_JOB} ({DEAD})" in result.output
        with dg.DagsterInstance.get() as instance:
            runs = {run_id: instance.get_run_by_id(run_id).status for run_id in (dead_run, live_run, elsewhere.run_id)}
            assert runs == {
                dead_run: dg.DagsterRunStatus.FAILURE,
                live_run: dg.DagsterRunStatus.STARTED,
                elsewhere.run_id: dg.DagsterRunStatus.STARTED,
            }, "only the run whose process is known to have ended"
            assert can_shred(instance, NEXT), "its slot is free at once"
            items = ProcessingManifest(instance).items(RUN_FOLDERS, [DEAD, LIVE, ELSEWHERE])
            assert items[DEAD].state is State.FAILED
            assert f"(pid {dead.pid} on " in json.dumps(items[DEAD].current.payload), "naming the process that died"
            assert items[LIVE].state is items[ELSEWHERE].state is State.PROCESSING
        assert (
            f"not started: enriched/{DEAD} is Failed and stays locked until an operator resolves it "
            f"(snowplow-assets manifest resolve enriched/{DEAD} --reason …)"
        ) in result.output
    finally:
        live.send_signal(signal.SIGKILL)
        live.wait()
