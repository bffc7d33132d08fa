"""A batch the operator skips keeps in the event manifest only what its published output loads
(manifest/skipped_batch.py)."""

from pathlib import Path

import pytest

from snowplow_assets.events import shred_batch
from snowplow_assets.events.completion import withdraw_completion
from snowplow_assets.events.shred_batch import ShredOptions, shred_run_folder
from snowplow_assets.manifest.dynamodb_event_manifest import DynamoDbEventManifest
from snowplow_assets.manifest.lake_event_manifest import LakeEventManifest
from snowplow_assets.manifest.skipped_batch import release_skipped_batch
from snowplow_assets_tests.conftest import write_run_folder
from snowplow_assets_tests.manifest.conftest import B2, B3, ETL, NOW, MovableClock, X, Y, line, new_table


class CutShort(Exception):
    """The run fails here, after its check-and-set and before it publishes."""


def cut_short(*_args, **_kwargs):
    raise CutShort


def _manifest(backend, lake, fs, moto_server, name):
    if backend == "lake":
        return LakeEventManifest(fs, lake, clock=MovableClock(NOW))
    return DynamoDbEventManifest(new_table(moto_server, name), fs, clock=MovableClock(NOW))


def _fail_after_check_and_set(spark, fs, lake, run, options, monkeypatch):
    monkeypatch.setattr(shred_batch, "write_outputs", cut_short)
    with pytest.raises(CutShort):
        shred_run_folder(spark, fs, lake, run, options)
    monkeypatch.undo()


@pytest.mark.parametrize("backend", ["lake", "dynamodb"])
def test_a_skipped_batch_that_never_published_leaves_no_entry(spark, lake, fs, moto_server, monkeypatch, backend):
    """B2 failed after its check-and-set and was skipped, its file re-sent as B3. Until 2026-11-28 B2's entries
    stayed for their ttl, and B3 dropped X and Y as copies of events no batch loaded."""
    options = ShredOptions(event_manifest=_manifest(backend, lake, fs, moto_server, "never-published"))
    write_run_folder(lake, B2, [line(X, "fpX", ETL[B2]), line(Y, "fpY", ETL[B2])])
    _fail_after_check_and_set(spark, fs, lake, B2, options, monkeypatch)

    counts = release_skipped_batch(lambda: spark, fs, lake, options.event_manifest, B2, claim_ids=True)
    assert counts is not None
    if backend == "dynamodb":
        assert counts["stale_entries_removed"] == 4, "X's and Y's pairs and id claims"
        assert not Path(lake.manifest_claims(B2)).exists(), "the journal outlived the release"

    write_run_folder(lake, B3, [line(X, "fpX", ETL[B3]), line(Y, "fpY", ETL[B3])])
    resent = shred_run_folder(spark, fs, lake, B3, options)
    assert resent.good == 2 and not any(resent.duplicates.values())


@pytest.mark.parametrize("backend", ["lake", "dynamodb"])
def test_a_skipped_batch_keeps_the_entries_of_what_it_published(spark, lake, fs, moto_server, monkeypatch, backend):
    """B2 was published with X; a rerun with Y added failed after its check-and-set. Skipped, B2 still loads
    X, so a later copy of X is dropped, and Y, which it never loaded, is B3's."""
    options = ShredOptions(event_manifest=_manifest(backend, lake, fs, moto_server, "published"))
    write_run_folder(lake, B2, [line(X, "fpX", ETL[B2])])
    shred_run_folder(spark, fs, lake, B2, options)
    fs.delete(lake.enriched_run(B2))
    write_run_folder(lake, B2, [line(X, "fpX", ETL[B2]), line(Y, "fpY", ETL[B2])])
    _fail_after_check_and_set(spark, fs, lake, B2, options, monkeypatch)

    counts = release_skipped_batch(lambda: spark, fs, lake, options.event_manifest, B2, claim_ids=True)
    assert counts["pairs_recorded"] + counts["pairs_held"] == 1, "X's pair, from the published output"
    if backend == "dynamodb":
        assert counts["stale_entries_removed"] == 2, "Y's pair and id claim"

    write_run_folder(lake, B3, [line(X, "fpX", ETL[B3]), line(Y, "fpY", ETL[B3])])
    later = shred_run_folder(spark, fs, lake, B3, options)
    assert later.good == 1 and later.duplicates["cross_batch_duplicate"] == 1, "X dropped as B2's, Y kept"


@pytest.mark.parametrize("backend", ["lake", "dynamodb"])
def test_a_skipped_batch_whose_marker_a_blocking_check_withdrew_leaves_no_entry(spark, lake, fs, moto_server, backend):
    """Its output is in no loader. On DynamoDB its publish had cleared the journal, so until the review of
    2026-11-28 the release found nothing to delete and the re-sent folder's events were dropped."""
    options = ShredOptions(event_manifest=_manifest(backend, lake, fs, moto_server, "withdrawn"))
    write_run_folder(lake, B2, [line(X, "fpX", ETL[B2]), line(Y, "fpY", ETL[B2])])
    shred_run_folder(spark, fs, lake, B2, options)
    assert withdraw_completion(fs, lake, B2)  # what the shred step does when a blocking check fails

    release_skipped_batch(lambda: spark, fs, lake, options.event_manifest, B2, claim_ids=True)
    write_run_folder(lake, B3, [line(X, "fpX", ETL[B3]), line(Y, "fpY", ETL[B3])])
    resent = shred_run_folder(spark, fs, lake, B3, options)
    assert resent.good == 2 and not any(resent.duplicates.values())


def test_a_skipped_batch_named_older_than_the_ttl_but_enriched_lately_leaves_no_entry(spark, lake, fs, monkeypatch):
    """A re-enriched archive under its old folder name: its entries are live by its etl_tstamp, but a release
    that finds no output counts from the folder's time, which has expired. Until the review of 2026-11-28 the
    expired batch was left as it was, its live entries included."""
    old = "run=2025-01-01-00-00-00"
    options = ShredOptions(event_manifest=_manifest("lake", lake, fs, None, "old"))
    write_run_folder(lake, old, [line(X, "fpX", ETL[B2]), line(Y, "fpY", ETL[B2])])
    _fail_after_check_and_set(spark, fs, lake, old, options, monkeypatch)
    assert old in options.event_manifest.read_index().batches

    release_skipped_batch(lambda: spark, fs, lake, options.event_manifest, old, claim_ids=True)
    assert old not in options.event_manifest.read_index().batches
    write_run_folder(lake, B3, [line(X, "fpX", ETL[B3]), line(Y, "fpY", ETL[B3])])
    assert shred_run_folder(spark, fs, lake, B3, options).good == 2


@pytest.mark.parametrize("backend", ["lake", "dynamodb"])
def test_nothing_to_release_starts_no_spark(lake, fs, moto_server, backend):
    manifest = _manifest(backend, lake, fs, moto_server, "nothing")

    def no_spark():
        raise AssertionError("Spark started for a batch the manifest holds nothing of")

    assert release_skipped_batch(no_spark, fs, lake, manifest, B2, claim_ids=True) is None
