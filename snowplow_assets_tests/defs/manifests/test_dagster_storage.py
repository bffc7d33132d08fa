import dagster as dg
from dagster._serdes import serialize_value

from snowplow_assets.defs.manifests.dagster_storage import failure_payload


@dg.op
def raises_from_a_cause() -> None:
    try:
        raise OSError("Connection refused")
    except OSError as cause:
        raise RuntimeError("the server has ended") from cause


@dg.job
def fails_in_its_op():
    raises_from_a_cause()


def test_the_reason_is_the_error_the_code_raised_not_dagsters_wrapper_nor_its_cause():
    """Dagster wraps an op's error in its own execution error; the code's error says what its cause means."""
    with dg.DagsterInstance.ephemeral() as instance:
        result = fails_in_its_op.execute_in_process(instance=instance, raise_on_error=False)
        [failure] = instance.get_records_for_run(result.run_id, of_type=dg.DagsterEventType.RUN_FAILURE).records
    error = failure.event_log_entry.dagster_event.event_specific_data.first_step_failure_event.step_failure_data.error
    assert error.cls_name.startswith("Dagster") and error.cause.cause.cls_name == "OSError", "as Dagster keeps it"
    payload = failure_payload(serialize_value(failure.event_log_entry))
    assert payload["step"] == "raises_from_a_cause"
    assert payload["error"] == "RuntimeError: the server has ended"
