"""A CDC run removes the staging its owner's earlier runs left when they were killed (cdc/staging.py)."""

from pathlib import Path

from snowplow_assets.cdc.history import ingest_landing
from snowplow_assets.cdc.staging import LATEST_COMMAND, new_staging
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


def test_the_latest_commands_views_run_side_by_side_and_remove_none_but_their_own(lake, fs):
    another = leftover(lake, f"{LATEST_COMMAND}@0123456789abcdef")
    staging = new_staging(fs, lake, LATEST_COMMAND, sweep=False)
    assert another.exists() and staging.startswith(f"{lake.cdc_stagings}/{LATEST_COMMAND}@")
