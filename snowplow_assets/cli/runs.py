"""Running the project's jobs from the CLI, in this process, recorded in the project's Dagster instance.

Runs executed here appear in the UI and the event log like sensor-launched runs. They execute in the CLI's
own process (the jobs use the in-process executor), so consecutive runs share one SparkSession.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import dagster as dg
from dagster._core.definitions.reconstruct import ReconstructableRepository
from dagster._core.storage.tags import PARTITION_NAME_TAG

from snowplow_assets.defs.manifests.cli_run_processes import cli_run_tags
from snowplow_assets.defs.step_errors import raised_error_reason
from snowplow_assets.processing import Item, State
from snowplow_assets.settings import PROJECT_ROOT

DEFINITIONS_MODULE = "snowplow_assets.definitions"
IN_FLIGHT = [
    dg.DagsterRunStatus.QUEUED,
    dg.DagsterRunStatus.NOT_STARTED,
    dg.DagsterRunStatus.STARTING,
    dg.DagsterRunStatus.STARTED,
]


@dataclass(frozen=True)
class RunOutcome:
    run_id: str
    job: str
    partition: str | None
    success: bool
    failure: str | None = None
    # The run's asset checks that did not pass: a warning's only trace was the UI (until 2026-11-28), so
    # `process` said "ok" beside a check that a delayed batch is beyond the web models' reach.
    failed_checks: tuple[str, ...] = ()


def _recon_job(job_name: str):
    repository = ReconstructableRepository.for_module(DEFINITIONS_MODULE, "defs", working_directory=str(PROJECT_ROOT))
    return repository.get_reconstructable_job(job_name)


def execute_run(
    instance: dg.DagsterInstance,
    job_name: str,
    partition: str | None = None,
    resources: dict | None = None,
    ops: dict | None = None,
) -> RunOutcome:
    """Run a job; `resources` and `ops` are run config ({name: {"config": {…}}}) over the loaded ones."""
    tags = {**cli_run_tags(), **({PARTITION_NAME_TAG: partition} if partition else {})}
    # INFO keeps the CLI readable: step-level DEBUG events stay in the event log and the UI.
    run_config = {
        "loggers": {"console": {"config": {"log_level": "INFO"}}},
        "resources": resources or {},
        **({"ops": ops} if ops else {}),
    }
    with dg.execute_job(_recon_job(job_name), instance=instance, run_config=run_config, tags=tags) as result:
        failure = None
        if not result.success:
            failures = [e for e in result.all_events if e.is_step_failure or e.is_failure]
            messages = [
                f"{e.step_key or 'run'}: {raised_error_reason(e.event_specific_data.error)}"  # type: ignore[union-attr]
                for e in failures
                if getattr(e.event_specific_data, "error", None) is not None
            ]
            failure = "; ".join(messages) or "run failed"
        evaluated = dg.DagsterEventType.ASSET_CHECK_EVALUATION
        checks = [e.asset_check_evaluation_data for e in result.all_events if e.event_type is evaluated]
        failed_checks = tuple(
            f"check {c.check_name} of {c.asset_key.to_user_string()} failed ({c.severity.value})"
            + (f": {c.description}" if c.description else "")
            for c in checks
            if not c.passed
        )
        return RunOutcome(result.run_id, job_name, partition, result.success, failure, failed_checks)


def echo_outcome(outcome: RunOutcome, echo: Callable[[str], None]) -> RunOutcome:
    failure = f": {outcome.failure}" if outcome.failure else ""
    echo(f"  {'ok' if outcome.success else 'FAILED'} (run {outcome.run_id}){failure}")
    for check in outcome.failed_checks:
        echo(f"    {check}")
    return outcome


def why_not_reprocessed(item: Item) -> str | None:
    """`process --run` and `--ingest` also start a Processed item; every other lock holds (FORMATS.md §6)."""
    if item.valid and item.state is State.PROCESSED:
        return None
    return why_locked(item)


def why_locked(item: Item) -> str | None:
    """`why_not_startable`, with the command that lifts an operator's lock (a Failed or Skipped item)."""
    why = item.why_not_startable()
    if why and item.state in (State.FAILED, State.SKIPPED) and item.valid:
        return f"{why} (snowplow-assets manifest resolve {item.id} --reason …)"
    return why
