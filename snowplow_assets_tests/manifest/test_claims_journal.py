"""A batch's runs journal the keys they give DynamoDB, so that a run cut short leaves no item behind that drops
a later batch's copy of an event no batch loads (manifest/claims_journal.py)."""

from pathlib import Path

import pytest

from snowplow_assets.events import shred_batch
from snowplow_assets.events.shred_batch import ShredOptions, shred_run_folder
from snowplow_assets.manifest.dynamodb_event_manifest import FORGET_COUNTS, DynamoDbEventManifest
from snowplow_assets_tests.conftest import write_run_folder
from snowplow_assets_tests.manifest.conftest import B2, B3, ETL, NOW, MovableClock, X, Y, line, new_table


class CutShort(Exception):
    """The run's process dies here: nothing after this point of the run happens."""


def cut_short(*_args, **_kwargs):
    raise CutShort


@pytest.mark.parametrize("where", ["after publishing, before forgetting", "after the check-and-set, before publishing"])
def test_a_run_cut_short_leaves_no_item_for_an_event_its_batch_no_longer_loads(
    spark, lake, fs, moto_server, monkeypatch, where
):
    """Y's file landed in B2 by mistake and was moved to B3, its folder; B2 was run again, cut short, and run
    once more. Until 2026-11-28 B2's items of Y stayed, since no published output named them any more (the
    first case) or ever had (the second), and B3 dropped Y as B2's: Y was loaded nowhere."""
    manifest = DynamoDbEventManifest(new_table(moto_server, "cut"), fs, clock=MovableClock(NOW))
    options = ShredOptions(event_manifest=manifest)
    write_run_folder(lake, B2, [line(X, "fpX", ETL[B2]), line(Y, "fpY", ETL[B2])])
    if where.startswith("after publishing"):
        shred_run_folder(spark, fs, lake, B2, options)  # published with Y
        fs.delete(lake.enriched_run(B2))
        write_run_folder(lake, B2, [line(X, "fpX", ETL[B2])])
        monkeypatch.setattr(DynamoDbEventManifest, "forget", cut_short)
    else:
        monkeypatch.setattr(shred_batch, "write_outputs", cut_short)
    with pytest.raises(CutShort):
        shred_run_folder(spark, fs, lake, B2, options)
    monkeypatch.undo()
    assert Path(lake.manifest_claims(B2)).exists()
    fs.delete(lake.enriched_run(B2))
    write_run_folder(lake, B2, [line(X, "fpX", ETL[B2])])

    rerun = shred_run_folder(spark, fs, lake, B2, options)
    assert {name: rerun.event_manifest.counts[name] for name in FORGET_COUNTS.values()} == {
        "stale_entries_removed": 2, "stale_entries_not_owned": 0, "stale_entries_not_removed": 0,
    }, "Y's pair and its id"  # fmt: skip
    assert not Path(lake.manifest_claims(B2)).exists(), "the journal outlived the run that accounted for it"

    write_run_folder(lake, B3, [line(Y, "fpY", ETL[B3])])
    later = shred_run_folder(spark, fs, lake, B3, options)
    assert later.good == 1 and not any(later.duplicates.values())


def test_a_first_run_journals_its_keys_and_removes_them_once_published(spark, lake, fs, moto_server, monkeypatch):
    manifest = DynamoDbEventManifest(new_table(moto_server, "first"), fs, clock=MovableClock(NOW))
    journalled = []
    original = shred_batch.write_claims
    monkeypatch.setattr(shred_batch, "write_claims", lambda *a: journalled.append(a[-1]) or original(*a))
    write_run_folder(lake, B2, [line(X, "fpX", ETL[B2])])
    report = shred_run_folder(spark, fs, lake, B2, ShredOptions(event_manifest=manifest))
    assert report.good == 1 and len(journalled) == 1, "the keys to record, and nothing to forget"
    assert not Path(lake.manifest_claims(B2)).exists()
