from datetime import date
from pathlib import Path

from snowplow_assets.lake import Lake
from snowplow_assets.manifest.base import HELD, ID_CLAIM, PAIR
from snowplow_assets.manifest.populate import shredded_runs_since
from snowplow_assets.storage import LocalFileSystem
from snowplow_assets_tests.manifest.conftest import B1, B2, B3, A, Y


def test_populating_from_shredded_output_records_what_the_live_manifest_recorded(scenario):
    assert scenario.populated.runs == [B1, B2, B3]
    # Renamed events are recorded under their original id (C, N, S were renamed in B2, Y in B1), and each
    # id goes to the batch that loaded it under that id: Y to B3, although B1's etlTime is earlier.
    assert scenario.populated_entries == scenario.entries_before_expiry
    assert len(scenario.populated_entries) == 18 and scenario.populated_entries[(Y, None)] == B3
    counts = scenario.populated.counts
    assert (counts["pairs_recorded"], counts["ids_claimed"], counts["pairs_held"], counts["ids_held"]) == (10, 8, 0, 0)


def test_a_populated_manifest_drops_copies_in_the_next_batch(scenario):
    assert scenario.populated_statuses == {(A, "fpA", PAIR): HELD, (A, None, ID_CLAIM): HELD}


def test_only_complete_output_from_the_date_onwards_is_populated(tmp_path):
    lake, fs = Lake(str(tmp_path / "lake")), LocalFileSystem()
    for run, complete in [
        ("run=2026-02-28-23-59-59", True),
        ("run=2026-03-01-00-00-00", True),
        ("run=2026-03-02-10-00-00", False),  # no shredding_complete.json: not loaded, not recorded
        ("run=2026-03-03-10-00-00", True),
    ]:
        Path(lake.shredded_good(run), "atomic-events").mkdir(parents=True)
        if complete:
            Path(lake.shredding_complete(run)).write_text("{}")
    Path(lake.uri("shredded", "good", "not-a-run")).mkdir()
    assert shredded_runs_since(fs, lake, date(2026, 3, 1)) == ["run=2026-03-01-00-00-00", "run=2026-03-03-10-00-00"]
    assert shredded_runs_since(fs, lake, date(2026, 3, 4)) == []
