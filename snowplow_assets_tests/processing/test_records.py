import pytest

from snowplow_assets.processing import NEVER_STARTED, Record, State, derive_item

ITEM = "enriched/run=2026-03-01-10-00-00"


def new(time=0.0):
    return Record("registered", ITEM, "enriched_runs", None, time, State.NEW)


def processing(run, time):
    return Record(f"run:{run}:processing", ITEM, "shred_enriched_run", run, time, State.PROCESSING)


def close(run, time, state=State.PROCESSED, previous=None):
    previous = previous if previous is not None else f"run:{run}:processing"
    return Record(f"run:{run}:{state.value.lower()}", ITEM, "shred_enriched_run", run, time, state, previous=previous)


def operator(record_id, time, state, previous=None):
    return Record(record_id, ITEM, "operator", None, time, state, {"reason": "checked"}, previous)


def test_a_registered_item_is_new_and_may_start():
    item = derive_item(ITEM, [new()])
    assert (item.state, item.valid, item.may_start) == (State.NEW, True, True)


def test_processing_holds_the_lock_until_processed():
    running = derive_item(ITEM, [new(), processing("a", 10)])
    assert (running.state, running.open_runs, running.may_start) == (State.PROCESSING, ("a",), False)
    assert "run a holds it" in running.why_not_startable()
    done = derive_item(ITEM, [close("a", 20), processing("a", 10), new()])  # order of input does not matter
    assert (done.state, done.valid, done.may_start) == (State.PROCESSED, True, False)
    assert [r.state for r in done.records] == [State.NEW, State.PROCESSING, State.PROCESSED]


def test_failed_is_locked_until_resolved_then_startable_again():
    failed = [new(), processing("a", 10), close("a", 20, State.FAILED)]
    item = derive_item(ITEM, failed)
    assert (item.state, item.may_start) == (State.FAILED, False)
    resolved = derive_item(ITEM, [*failed, operator("observation:7", 30, State.RESOLVED, "run:a:failed")])
    assert (resolved.state, resolved.valid, resolved.may_start) == (State.RESOLVED, True, True)
    again = derive_item(ITEM, [*resolved.records, processing("b", 40), close("b", 50)])
    assert (again.state, again.valid) == (State.PROCESSED, True)


def test_skipped_is_never_started_and_resolve_unskips():
    skipped = [new(), operator("observation:3", 5, State.SKIPPED)]
    assert derive_item(ITEM, skipped).state == State.SKIPPED and not derive_item(ITEM, skipped).may_start
    unskipped = derive_item(ITEM, [*skipped, operator("observation:4", 6, State.RESOLVED, "observation:3")])
    assert unskipped.may_start


def test_a_manual_rerun_after_a_failure_supersedes_it():
    item = derive_item(
        ITEM, [new(), processing("a", 10), close("a", 20, State.FAILED), processing("b", 30), close("b", 40)]
    )
    assert (item.state, item.valid) == (State.PROCESSED, True)


@pytest.mark.parametrize(
    ("records", "problem"),
    [
        ([processing("a", 10), close("a", 20)], "no New record"),
        ([new(), new(1.0)], "2 New records"),
        ([new(), close("a", 20, previous="")], "refers to , which does not exist"),
        ([new(), Record("run:a:processed", ITEM, "job", "a", 20, State.PROCESSED)], "closes no Processing record"),
        (
            [
                new(),
                processing("a", 10),
                close("a", 20, State.FAILED),
                close("b", 30, State.PROCESSED, previous="run:a:failed"),
            ],
            "a Failed record, not a Processing one",
        ),
        (
            [new(), processing("a", 10), close("b", 20, previous="run:a:processing")],
            "of run b closes run:a:processing of run a",
        ),
        ([new(), processing("a", 10), close("a", 20), close("a", 30, State.FAILED)], "already closed"),
        (
            [
                new(),
                processing("a", 10),
                close("a", 20),
                operator("observation:1", 30, State.RESOLVED, "run:a:processed"),
            ],
            "clears a Processed item",
        ),
        (
            [
                new(),
                processing("a", 10),
                close("a", 20, State.FAILED),
                processing("b", 30),
                close("b", 40, State.FAILED),
                operator("observation:1", 50, State.RESOLVED, "run:a:failed"),
            ],
            "not to the Failed record run:b:failed",
        ),
        (
            [
                new(),
                processing("a", 10),
                close("a", 20, State.FAILED),
                processing("b", 25),
                operator("observation:1", 30, State.RESOLVED, "run:a:failed"),
            ],
            "while run b held the lock",
        ),
        (
            [new(), processing("a", 10), processing("b", 15), close("a", 20), close("b", 30)],
            "runs a and b processed it at the same time",
        ),
    ],
)
def test_contradictions_make_an_item_invalid_and_unstartable(records, problem):
    item = derive_item(ITEM, records)
    assert not item.valid and not item.may_start
    assert any(problem in p for p in item.problems), item.problems
    assert item.why_not_startable().startswith(f"{ITEM} is invalid")


def test_a_run_that_never_started_overlaps_no_run():
    queued = Record("run:b:processing", ITEM, "shred_enriched_run", "b", 12, State.PROCESSING, {NEVER_STARTED: True})
    item = derive_item(ITEM, [new(), processing("a", 10), queued, close("b", 15, State.FAILED), close("a", 20)])
    assert item.valid and item.state == State.PROCESSED, item.problems


def test_back_to_back_runs_do_not_overlap_and_queued_runs_are_not_compared():
    item = derive_item(
        ITEM, [new(), processing("a", 10), close("a", 20), processing("b", 20), close("b", 30), processing("c", 25)]
    )
    assert item.valid and item.state == State.PROCESSING and item.open_runs == ("c",)


def test_records_of_another_item_are_refused():
    with pytest.raises(ValueError, match="do not belong"):
        derive_item("enriched/run=2026-03-01-11-00-00", [new()])
