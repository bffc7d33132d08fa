"""Runs of the project's jobs written into a real instance through Dagster's own APIs, without executing them.

`create_run_for_job` logs the materialisation plan as Dagster does when it creates any run; the status
events below are the ones a run worker reports. The tests and the manifest benchmark use them to give
items every state quickly; test_processing_manifest.py checks the reader against real executions too.
"""

from __future__ import annotations

from typing import Any

import dagster as dg
from dagster._core.events import (
    DagsterEvent,
    DagsterEventType,
    JobFailureData,
    RunFailureReason,
    StepFailureData,
    StepMaterializationData,
)
from dagster._utils.error import SerializableErrorInfo

SHREDDED_TYPES = dg.AssetKey("shredded_types")


def create_run(instance: dg.DagsterInstance, job: dg.JobDefinition, partition: str) -> dg.DagsterRun:
    """A run of `job` for `partition`, created but not started (it holds the item's lock)."""
    return instance.create_run_for_job(
        job, tags={"dagster/partition": partition}, status=dg.DagsterRunStatus.NOT_STARTED
    )


def report(instance: dg.DagsterInstance, run: dg.DagsterRun, event_type: DagsterEventType, **kwargs: Any) -> None:
    instance.report_dagster_event(DagsterEvent(event_type.value, job_name=run.job_name, **kwargs), run.run_id)


def start(instance: dg.DagsterInstance, run: dg.DagsterRun) -> None:
    report(instance, run, DagsterEventType.RUN_START)


def succeed(instance: dg.DagsterInstance, run: dg.DagsterRun, partition: str, metadata: dict[str, Any]) -> None:
    start(instance, run)
    materialization = dg.AssetMaterialization(SHREDDED_TYPES, partition=partition, metadata=metadata)
    report(
        instance,
        run,
        DagsterEventType.ASSET_MATERIALIZATION,
        step_key="shred",
        event_specific_data=StepMaterializationData(materialization),
    )
    report(instance, run, DagsterEventType.RUN_SUCCESS)


def fail(instance: dg.DagsterInstance, run: dg.DagsterRun, step: str, message: str) -> None:
    start(instance, run)
    error = SerializableErrorInfo(f"{message}\n", [], message.split(":")[0])
    step_failure = DagsterEvent(
        DagsterEventType.STEP_FAILURE.value,
        job_name=run.job_name,
        step_key=step,
        event_specific_data=StepFailureData(error=error, user_failure_data=None),
    )
    report(
        instance,
        run,
        DagsterEventType.STEP_FAILURE,
        step_key=step,
        event_specific_data=step_failure.event_specific_data,
    )
    report(
        instance,
        run,
        DagsterEventType.RUN_FAILURE,
        event_specific_data=JobFailureData(
            error=None, failure_reason=RunFailureReason.STEP_FAILURE, first_step_failure_event=step_failure
        ),
    )
