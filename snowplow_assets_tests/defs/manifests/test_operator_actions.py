import dagster as dg
import pytest

from snowplow_assets.defs.manifests.operator_actions import record_operator_action
from snowplow_assets.defs.manifests.processing_manifest import RUN_FOLDERS
from snowplow_assets.processing import State
from snowplow_assets_tests.defs.manifests.every_state import BROKEN, DONE, NEW, ORPHANED, REPORTED, RUNNING, SKIPPED


def test_operator_actions_are_observations_and_are_validated(every_state):
    instance = every_state
    [observation] = [
        r.asset_observation
        for r in instance.fetch_observations(
            dg.AssetRecordsFilter(dg.AssetKey("enriched_batch"), asset_partitions=[SKIPPED]), limit=5
        ).records
    ]
    assert (
        observation.metadata["manifest_action"].value == "skip" and observation.metadata["reason"].value == "test data"
    )

    for name, action, message in [
        (NEW, "resolve", "only Failed or Skipped"),
        (DONE, "resolve", "it is Processed"),
        (RUNNING, "skip", "it is Processing"),
        (SKIPPED, "skip", "already Skipped"),
        (ORPHANED, "resolve", "it is invalid"),
        ("run=2030-01-01-00-00-00", "skip", "not registered"),
    ]:
        with pytest.raises(ValueError, match=message):
            record_operator_action(instance, RUN_FOLDERS, name, action, "because")
    with pytest.raises(ValueError, match="reason is required"):
        record_operator_action(instance, RUN_FOLDERS, BROKEN, "resolve", "  ")
    with pytest.raises(ValueError, match="unknown manifest action"):
        record_operator_action(instance, RUN_FOLDERS, BROKEN, "retry", "because")

    unskipped = record_operator_action(instance, RUN_FOLDERS, SKIPPED, "resolve", "not test data after all")
    assert unskipped.state is State.RESOLVED and unskipped.may_start
    parked = record_operator_action(instance, RUN_FOLDERS, REPORTED, "skip", "reported by hand, look later")
    assert parked.state is State.SKIPPED and not parked.valid
    late = record_operator_action(instance, RUN_FOLDERS, "run=2030-01-01-00-00-00", "skip", "known bad", register=True)
    assert [r.state for r in late.records] == [State.NEW, State.SKIPPED] and late.valid
