"""Bad lines: each has exactly the one defect of its kind, as an independent reader judges it."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from snowplow_assets.datagen.enriched import BAD_LINE_KINDS, GenerationStats
from snowplow_assets_tests.datagen.enriched.read_back import defect, lines


def test_bad_lines_are_one_of_each_kind(run: tuple[Path, GenerationStats]) -> None:
    _, stats = run
    found = Counter(kind for line in lines(stats) if (kind := defect(line)) is not None)
    assert found == Counter(stats.bad_line_kinds)
    assert stats.bad_line_kinds == {kind: 1 for kind in BAD_LINE_KINDS}
