import dagster as dg
import pytest

from snowplow_assets_tests.defs.manifests.every_state import write_every_state


@pytest.fixture
def job(definitions) -> dg.JobDefinition:
    return definitions.resolve_job_def("shred_enriched_run")


@pytest.fixture
def memory_instance():
    """An in-memory instance: the same SQL tables without the run-sharded SQLite's file per run, whose fsyncs
    make each recorded event cost ~0.1 s. test_real_runs_read_as_dagster_reports_them covers that storage."""
    instance = dg.DagsterInstance.ephemeral()
    yield instance
    instance.dispose()


@pytest.fixture
def every_state(memory_instance, job) -> dg.DagsterInstance:
    write_every_state(memory_instance, job)
    return memory_instance
