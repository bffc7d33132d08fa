"""Why a step failed, in Dagster's record of its error: the processing manifest and the CLI say it so."""

from __future__ import annotations

from dagster._utils.error import SerializableErrorInfo

from snowplow_assets.error_reason import reason


def raised_error_reason(error: SerializableErrorInfo) -> str:
    """`reason` of the error the step's code raised. Dagster wraps it in its own execution errors
    (DagsterExecutionStep…), which are skipped; the code's error's own causes are not followed, as it says
    what they mean (a shred's dg.Failure names the folder and the reason, spark.SharedServerEnded gRPC's
    refusal)."""
    while error.cause is not None and (error.cls_name or "").startswith("Dagster"):
        error = error.cause
    return reason(error.message)
