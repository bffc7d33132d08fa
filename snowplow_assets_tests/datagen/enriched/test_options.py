"""Generation options: validated, with one visitor per 40 events unless told otherwise."""

from __future__ import annotations

import pytest

from snowplow_assets.datagen.enriched import GenerationOptions


@pytest.mark.parametrize(
    "bad_options",
    [{"events": -1}, {"files": 0}, {"users": 0}, {"natural_duplicate_rate": 1.5}, {"bad_line_rate": -0.1}],
)
def test_options_are_validated(bad_options: dict) -> None:
    with pytest.raises(ValueError):
        GenerationOptions(**bad_options)


def test_options_default_to_one_visitor_per_40_events() -> None:
    assert GenerationOptions(events=1000).users == 25
    assert GenerationOptions(events=10).users == 1
