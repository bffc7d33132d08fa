import dagster as dg

from snowplow_assets.defs.manifests.manifest_locks import startable_runs, waiting_runs
from snowplow_assets.defs.manifests.operator_actions import record_operator_action
from snowplow_assets.defs.manifests.processing_manifest import RUN_FOLDERS, ProcessingManifest
from snowplow_assets_tests.defs.manifest_runs import create_run, fail
from snowplow_assets_tests.defs.manifests.every_state import (
    BROKEN,
    DONE,
    NEW,
    ORPHANED,
    REPORTED,
    RESOLVED,
    RUNNING,
    SKIPPED,
)


def test_only_new_and_resolved_valid_items_may_start(every_state):
    names = [NEW, RUNNING, DONE, BROKEN, RESOLVED, SKIPPED, REPORTED, ORPHANED, "run=2030-01-01-00-00-00"]
    check = startable_runs(every_state, RUN_FOLDERS, names, discovered={"run=2030-01-01-00-00-00": "a_sensor"})
    resolve_id = ProcessingManifest(every_state).item(RUN_FOLDERS, RESOLVED).records[-1].id
    assert [(s.name, s.run_key) for s in check.startable] == [
        (NEW, NEW),
        (RESOLVED, f"{RESOLVED}#{resolve_id}"),
        ("run=2030-01-01-00-00-00", "run=2030-01-01-00-00-00"),
    ]
    assert set(check.refused) == {RUNNING, DONE, BROKEN, SKIPPED, REPORTED, ORPHANED}
    assert "locked until an operator resolves it" in check.refused[BROKEN]
    assert "holds it" in check.refused[RUNNING]
    assert "is invalid" in check.refused[ORPHANED]


def test_waiting_runs_are_the_registered_items_that_may_start_and_have_no_run(every_state, job):
    """The query's candidates are the registered items no run took up (the Skipped one too); the lock check
    keeps those that may start, a window of `limit` at a time, so items refused first hide none after them."""
    manifest = ProcessingManifest(every_state)
    assert manifest.unclaimed(RUN_FOLDERS) == [NEW, RESOLVED, SKIPPED]
    resolved_key = f"{RESOLVED}#{manifest.item(RUN_FOLDERS, RESOLVED).records[-1].id}"
    assert [(s.name, s.run_key) for s in waiting_runs(every_state, RUN_FOLDERS, limit=10)] == [
        (NEW, NEW),
        (RESOLVED, resolved_key),
    ]
    record_operator_action(every_state, RUN_FOLDERS, NEW, "skip", "test data")
    assert [s.name for s in waiting_runs(every_state, RUN_FOLDERS, limit=1)] == [RESOLVED]

    # A run of the resolved item is created: it holds the item. Once it failed and was deleted, the item is
    # Resolved again, under the same key; a deleted failure makes its item New.
    run = create_run(every_state, job, RESOLVED)
    assert waiting_runs(every_state, RUN_FOLDERS, limit=10) == []
    fail(every_state, run, "shred", "OSError: the disk is full")
    every_state.delete_run(run.run_id)
    [broken_run] = every_state.get_run_ids(dg.RunsFilter(tags={"dagster/partition": BROKEN}))
    every_state.delete_run(broken_run)
    assert [(s.name, s.run_key) for s in waiting_runs(every_state, RUN_FOLDERS, limit=10)] == [
        (BROKEN, BROKEN),
        (RESOLVED, resolved_key),
    ]
