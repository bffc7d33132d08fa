"""A batch shredded after the web models moved past some of its events is said to need a full refresh
(web/late_batches.py)."""

from datetime import UTC, date, datetime

import pytest

from snowplow_assets.web.late_batches import events_within_reach
from snowplow_assets.web.run_limits import incremental_reach
from snowplow_assets.web.variables import MODELS, WebVariables

VARIABLES = WebVariables(start_date=date(2026, 3, 1), lookback_window_hours=6)
AT_NOON = {model: datetime(2026, 3, 10, 12, tzinfo=UTC) for model in MODELS}  # the reach: 06:00


def outcome(first: str | None, last: str | None, manifest=AT_NOON, enabled=MODELS, variables=VARIABLES):
    return events_within_reach(enabled, manifest, variables, first, last)


def test_the_reach_is_the_greatest_last_success_less_the_lookback_and_not_before_start_date():
    """Out of sync, the models at the greatest last_success build nothing until the next standard run, which
    reads from there less the lookback: an event before that reaches only the models behind."""
    behind = {**AT_NOON, "sessions": datetime(2026, 3, 9, 12, tzinfo=UTC)}
    assert incremental_reach(MODELS, behind, VARIABLES) == datetime(2026, 3, 10, 6, tzinfo=UTC)
    assert incremental_reach(MODELS, {**AT_NOON, "sessions": None}, VARIABLES) == datetime(2026, 3, 10, 6, tzinfo=UTC)
    assert incremental_reach(MODELS, dict.fromkeys(MODELS), VARIABLES) is None
    early = dict.fromkeys(MODELS, datetime(2026, 3, 1, 1, tzinfo=UTC))
    assert incremental_reach(MODELS, early, VARIABLES) == datetime(2026, 3, 1, tzinfo=UTC)
    ahead = {**AT_NOON, "users": datetime(2026, 3, 11, 12, tzinfo=UTC)}
    enabled = ("sessions_lifecycle", "quarantined_sessions", "page_views", "sessions")
    assert incremental_reach(enabled, ahead, VARIABLES) == datetime(2026, 3, 10, 6, tzinfo=UTC), (
        "only the enabled models count"
    )


@pytest.mark.parametrize(
    ("first", "last"),
    [
        ("2026-03-10 06:00:00.000", "2026-03-10 13:00:00.000"),  # from the reach on
        ("2026-02-01 00:00:00.000", "2026-02-28 23:59:59.999"),  # all before start_date, left out by design
        ("0000-06-15T00:00:00.000Z", "2026-02-28 23:59:59.999"),  # the year 0, as the shredder writes it
        (None, None),  # no good event
    ],
)
def test_a_batch_within_reach_passes(first, last):
    assert outcome(first, last).passed


def test_a_batch_with_events_before_the_reach_fails_naming_the_span_and_the_full_refresh():
    late = outcome("2026-02-20 10:00:00.000", "2026-03-10 08:00:00.000")
    assert not late.passed
    assert "from 2026-03-01 00:00:00 to 2026-03-10 06:00:00 are before 2026-03-10 06:00:00" in late.description
    assert "full refresh" in late.description and "lookback_window_hours=6" in late.description


def test_nothing_to_say_before_the_first_run_or_with_the_web_models_off():
    assert outcome("2026-03-02 10:00:00.000", "2026-03-02 11:00:00.000", manifest=dict.fromkeys(MODELS)).passed
    off = outcome("2026-03-02 10:00:00.000", "2026-03-02 11:00:00.000", enabled=())
    assert off.passed and off.description == "No web model is enabled."
