"""CLI runs whose process is killed mid-shred, made by real processes of their own, for the tests of the
sweeps that fail them (`process`, and the `abandoned_cli_runs` sensor).

Each process creates a shred run with the tags `execute_run` gives it, starts it and takes the `shred`
pool's one slot, as its step does, then waits to be killed: the state a `process` killed in its shred step
leaves (shredding itself would cost each a JVM, and is not what is tested)."""

import os
import subprocess
import sys

import dagster as dg
import pytest
import yaml
from dagster._core.execution.plan.instance_concurrency_context import InstanceConcurrencyContext
from dagster._core.storage.tags import PARTITION_NAME_TAG

from snowplow_assets.defs.pools import SHRED_POOL
from snowplow_assets.settings import PROJECT_ROOT

SHRED_JOB = "shred_enriched_run"

_RUN_IN_ITS_SHRED_STEP = """
import sys, time
import dagster as dg
from dagster._core.events import DagsterEvent, DagsterEventType
from dagster._core.execution.plan.instance_concurrency_context import InstanceConcurrencyContext
from snowplow_assets.defs.manifests.cli_run_processes import cli_run_tags
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
