from snowplow_assets.defs.manifests.manifest_locks import resolved_since, startable_runs
from snowplow_assets.defs.manifests.operator_actions import record_operator_action
from snowplow_assets.defs.manifests.processing_manifest import RUN_FOLDERS, ProcessingManifest
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


def test_resolved_since_follows_the_operator_observations(every_state):
    names, cursor = resolved_since(every_state, RUN_FOLDERS, None, limit=10)
    assert names == [RESOLVED] and cursor is not None
    assert resolved_since(every_state, RUN_FOLDERS, cursor, limit=10) == ([], cursor)
    record_operator_action(every_state, RUN_FOLDERS, BROKEN, "resolve", "fixed upstream")
    later, newer = resolved_since(every_state, RUN_FOLDERS, cursor, limit=10)
    assert later == [BROKEN] and newer > cursor
