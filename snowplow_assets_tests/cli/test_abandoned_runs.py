"""A CLI process killed mid-run leaves its run Started; the next `process` fails it and frees what it held.

The runs here are made by real processes of their own, which create a shred run with the tags `execute_run`
gives it, start it and take the `shred` pool's one slot, as its step does, then wait to be killed: the
state a `process` killed in its shred step leaves (shredding itself would cost each a JVM, and is not what
is tested)."""

import json
import os
import signal
import subprocess
import sys

import dagster as dg
import pytest
import yaml
from click.testing import CliRunner
from dagster._core.execution.plan.instance_concurrency_context import InstanceConcurrencyContext
from dagster._core.storage.tags import PARTITION_NAME_TAG

from snowplow_assets.cli import main
from snowplow_assets.cli.abandoned_runs import CLI_HOST_TAG, CLI_PROCESS_TAG
from snowplow_assets.definitions import defs
from snowplow_assets.defs.manifests.processing_manifest import RUN_FOLDERS, ProcessingManifest
from snowplow_assets.defs.pools import SHRED_POOL
from snowplow_assets.processing import State
from snowplow_assets.settings import PROJECT_ROOT

DEAD, LIVE, ELSEWHERE, NEXT = (f"run=2026-03-07-0{h}-00-00" for h in range(4))
SHRED_JOB = "shred_enriched_run"

# A CLI run in its shred step: created with the CLI's tags, started, the step's pool slot taken; then waiting.
_RUN_IN_ITS_SHRED_STEP = """
import sys, time
import dagster as dg
from dagster._core.events import DagsterEvent, DagsterEventType
from dagster._core.execution.plan.instance_concurrency_context import InstanceConcurrencyContext
from snowplow_assets.cli.abandoned_runs import cli_run_tags
from snowplow_assets.definitions import defs

partition, take_slot = sys.argv[1], sys.argv[2] == "slot"
with dg.DagsterInstance.get() as instance:
    tags = {**cli_run_tags(), "dagster/partition": partition}
    run = instance.create_run_for_job(defs().resolve_job_def("shred_enriched_run"), tags=tags)
    instance.report_dagster_event(DagsterEvent(DagsterEventType.RUN_START.value, job_name=run.job_name), run.run_id)
    if take_slot:
        with InstanceConcurrencyContext(instance, run) as step:
            assert step.claim("shred", "shred")
    print(run.run_id, flush=True)
    time.sleep(600)
"""


@pytest.fixture
def dagster_home(tmp_path, monkeypatch, lake):
    """An instance with the project's pools and run monitoring, and the lake, for the CLI and the processes."""
    home = tmp_path / "dagster_home"
    home.mkdir()
    project = yaml.safe_load((PROJECT_ROOT / "dagster.yaml").read_text())
    config = {"telemetry": {"enabled": False}, **{k: project[k] for k in ("concurrency", "run_monitoring")}}
    (home / "dagster.yaml").write_text(yaml.safe_dump(config))
    monkeypatch.setenv("DAGSTER_HOME", str(home))
    monkeypatch.setenv("SNOWPLOW_LAKE", lake.root)
    monkeypatch.setenv("SNOWPLOW_WEB_MODELS", "")  # the subject is the shred runs
    return home


def start_run_in_its_shred_step(partition: str, take_slot: bool) -> tuple[subprocess.Popen, str]:
    process = subprocess.Popen(
        [sys.executable, "-c", _RUN_IN_ITS_SHRED_STEP, partition, "slot" if take_slot else "no-slot"],
        stdout=subprocess.PIPE,
        text=True,
        env=os.environ.copy(),
    )
    run_id = process.stdout.readline().strip()
    assert run_id, f"the process making the run for {partition} failed (exit {process.wait()})"
    return process, run_id


def can_shred(instance: dg.DagsterInstance, partition: str) -> bool:
    """Whether another run's shred step would get the pool's slot now."""
    run = instance.create_run_for_job(
        dg.JobDefinition(graph_def=dg.GraphDefinition(name="other", node_defs=[])),
        tags={PARTITION_NAME_TAG: partition},
    )
    with InstanceConcurrencyContext(instance, run) as step:
        if step.claim(SHRED_POOL, "shred"):
            step.free_step("shred")
            return True
    return False


def test_process_fails_the_runs_of_cli_processes_that_died_and_frees_their_slots(dagster_home):
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
        assert f"not started: enriched/{DEAD} is Failed and stays locked until an operator resolves it" in result.output
    finally:
        live.send_signal(signal.SIGKILL)
        live.wait()
