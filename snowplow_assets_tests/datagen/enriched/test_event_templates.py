"""Event lines filled in from page view templates: every good line has all 131 fields, with valid types."""

from __future__ import annotations

from pathlib import Path

from snowplow_assets.datagen.enriched import GenerationStats
from snowplow_assets.events.enriched_schema import FIELD_COUNT
from snowplow_assets_tests.datagen.enriched.read_back import defect, lines


def test_every_good_line_has_131_fields_of_valid_types(run: tuple[Path, GenerationStats]) -> None:
    _, stats = run
    good = [line for line in lines(stats) if defect(line) is None]
    assert len(good) == stats.events + stats.natural_duplicates + stats.synthetic_duplicates
    assert all(line.endswith("\n") and line.count("\t") == FIELD_COUNT - 1 for line in good)
