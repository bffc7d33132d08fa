"""A CDC run removes the staging its owner's earlier runs left when they were killed (cdc/staging.py)."""

from datetime import datetime, timezone
from pathlib import Path

from snowplow_assets.cdc.history import ingest_landing
from snowplow_assets.cdc.staging import LATEST_COMMAND, new_side_by_side_staging
from snowplow_assets_tests.cdc.builders import models, partial, write_landing

LANDING = "landing=2026-03-01-10-00-00"


def leftover(lake, name: str) -> Path:
    folder = Path(lake.cdc_stagings) / name
    folder.mkdir(parents=True)
    (folder / "part-00000.parquet").write_text("a killed run's rows")
    return folder


def test_an_ingestion_removes_its_landings_leftovers_and_no_other(spark, lake, fs):
    killed = leftover(lake, f"ingest-{LANDING}@0123456789abcdef")
    others = [leftover(lake, f"ingest-{LANDING}.b@0123456789abcdef"), leftover(lake, "batches@0123456789abcdef")]
    write_landing(lake, LANDING, [partial(1, 1_772_359_200_001, 0, {"email": "a@x"})])
    assert ingest_landing(spark, fs, lake, LANDING, models()).changes == 1
    assert not killed.exists() and all(folder.exists() for folder in others)
    assert sorted(p.name for p in Path(lake.cdc_stagings).iterdir()) == sorted(folder.name for folder in others)


def test_the_latest_commands_views_run_side_by_side_and_remove_only_a_killed_ones(lake, fs):
    """A view's folder carries its start; one started more than a day before is a killed view's (until 2026-11-28
    such folders stayed). Another view's, and any folder not named so, stay."""
    now = datetime(2026, 11, 28, 12, 0, tzinfo=timezone.utc)
    killed = leftover(lake, f"{LATEST_COMMAND}.20261127T115959Z@0123456789abcdef")
    running = leftover(lake, f"{LATEST_COMMAND}.20261127T120000Z@0123456789abcdef")
    unnamed = leftover(lake, f"{LATEST_COMMAND}@0123456789abcdef")
    staging = new_side_by_side_staging(fs, lake, LATEST_COMMAND, now)
    assert not killed.exists() and running.exists() and unnamed.exists()
    assert staging.startswith(f"{lake.cdc_stagings}/{LATEST_COMMAND}.20261128T120000Z@")
