"""The run limits of FORMATS.md §8: the four states, the clamps, and when a model writes nothing."""

from datetime import UTC, date, datetime, timedelta

import pytest

from snowplow_assets.web.run_limits import RunState, advance_last_success, run_limits
from snowplow_assets.web.variables import (
    MAX_DAYS,
    MODELS,
    PAGE_VIEWS,
    SESSIONS,
    SESSIONS_LIFECYCLE,
    USERS,
    WebVariables,
)

V = WebVariables(start_date=date(2021, 1, 1), backfill_limit_days=30, lookback_window_hours=6)
START = datetime(2021, 1, 1, tzinfo=UTC)
NOW = datetime(2021, 6, 1, 12, tzinfo=UTC)
ALL = dict.fromkeys(MODELS)


def at(text: str) -> datetime:
    return datetime.fromisoformat(text).replace(tzinfo=UTC)


def manifest(**values: str | None) -> dict[str, datetime | None]:
    return {**ALL, **{model: at(value) if value else None for model, value in values.items()}}


def test_first_run_starts_at_start_date_and_is_limited_by_the_backfill_limit():
    limits = run_limits(MODELS, {}, NOW, V)
    assert (limits.state, limits.lower, limits.upper) == (RunState.FIRST_RUN, START, START + timedelta(days=30))
    assert limits.missing == MODELS and limits.min_last_success is None
    # Models mapped to None are missing too.
    assert run_limits(MODELS, ALL, NOW, V) == limits


def test_first_run_upper_limit_is_now_when_start_date_is_recent():
    now = at("2021-01-10 08:30:00")
    limits = run_limits(MODELS, {}, now, V)
    assert (limits.lower, limits.upper) == (START, now)


def test_new_model_backfills_from_start_date_up_to_the_others():
    m = manifest(sessions_lifecycle="2021-01-20 10:00:00", quarantined_sessions="2021-01-20 10:00:00",
                 page_views="2021-01-20 10:00:00", sessions="2021-01-20 10:00:00")  # fmt: skip
    limits = run_limits(MODELS, m, NOW, V)
    assert (limits.state, limits.lower, limits.upper) == (RunState.NEW_MODEL, START, at("2021-01-20 10:00:00"))
    assert limits.missing == (USERS,)


def test_new_model_backfill_is_limited_by_the_backfill_limit():
    m = manifest(**{model: "2021-05-01 00:00:00" for model in MODELS[:-1]})
    limits = run_limits(MODELS, m, NOW, V)
    assert (limits.state, limits.lower, limits.upper) == (RunState.NEW_MODEL, START, START + timedelta(days=30))
    assert limits.should_run(None) and not limits.should_run(at("2021-05-01 00:00:00"))


def test_out_of_sync_catches_up_from_the_slowest_model_to_the_fastest():
    m = manifest(sessions_lifecycle="2021-03-05 12:00:00", quarantined_sessions="2021-03-05 12:00:00",
                 page_views="2021-03-05 12:00:00", sessions="2021-03-04 00:00:00", users="2021-03-04 00:00:00")  # fmt: skip
    limits = run_limits(MODELS, m, NOW, V)
    assert limits.state is RunState.OUT_OF_SYNC
    assert (limits.lower, limits.upper) == (at("2021-03-03 18:00:00"), at("2021-03-05 12:00:00"))
    assert limits.should_run(m[SESSIONS]) and not limits.should_run(m[PAGE_VIEWS])


def test_out_of_sync_upper_limit_is_limited_by_the_backfill_limit():
    m = manifest(**{model: "2021-05-01 00:00:00" for model in MODELS})
    m[USERS] = at("2021-02-01 00:00:00")
    limits = run_limits(MODELS, m, NOW, V)
    assert limits.state is RunState.OUT_OF_SYNC
    assert (limits.lower, limits.upper) == (at("2021-01-31 18:00:00"), at("2021-03-03 00:00:00"))


def test_standard_run_carries_on_from_the_last_success_with_the_lookback_window():
    m = manifest(**{model: "2021-01-07 23:59:32" for model in MODELS})
    limits = run_limits(MODELS, m, at("2021-01-08 10:00:00"), V)
    assert limits.state is RunState.STANDARD
    assert (limits.lower, limits.upper) == (at("2021-01-07 17:59:32"), at("2021-01-08 10:00:00"))
    assert limits.processing == "Snowplow: Processing data between 2021-01-07 17:59:32 and 2021-01-08 10:00:00"
    assert limits.message == "Snowplow: Standard incremental run"


def test_standard_run_upper_limit_is_limited_by_the_backfill_limit():
    m = manifest(**{model: "2021-02-01 00:00:00" for model in MODELS})
    limits = run_limits(MODELS, m, NOW, V)
    assert (limits.lower, limits.upper) == (at("2021-01-31 18:00:00"), at("2021-03-03 00:00:00"))


def test_lower_limit_never_goes_before_start_date():
    m = manifest(**{model: "2021-01-01 02:00:00" for model in MODELS})
    assert run_limits(MODELS, m, NOW, V).lower == START
    m[USERS] = at("2021-01-01 01:00:00")
    out_of_sync = run_limits(MODELS, m, NOW, V)
    assert out_of_sync.state is RunState.OUT_OF_SYNC and out_of_sync.lower == START


def test_a_last_success_after_now_gives_an_empty_window_not_a_reversed_one():
    m = manifest(**{model: "2021-06-02 00:00:00" for model in MODELS})
    limits = run_limits(MODELS, m, NOW, V)
    assert limits.lower == at("2021-06-01 18:00:00") and limits.upper == limits.lower
    assert not limits.should_run(m[USERS])


def test_models_not_enabled_are_ignored_and_missing_ones_are_new():
    m = manifest(sessions_lifecycle="2021-01-05 00:00:00", quarantined_sessions="2021-01-05 00:00:00",
                 page_views="2021-01-09 00:00:00")  # fmt: skip
    enabled = (SESSIONS_LIFECYCLE, "quarantined_sessions")
    limits = run_limits(enabled, m, NOW, V)
    assert limits.state is RunState.STANDARD and limits.models == enabled
    assert limits.upper == at("2021-02-04 00:00:00")


def test_a_model_at_or_past_the_upper_limit_writes_nothing():
    limits = run_limits(
        MODELS, manifest(**{model: "2021-01-07 00:00:00" for model in MODELS}), at("2021-01-07 00:00:00"), V
    )
    assert limits.upper == at("2021-01-07 00:00:00")
    assert not limits.should_run(limits.upper)
    assert not limits.should_run(limits.upper + timedelta(seconds=1))
    assert limits.should_run(limits.upper - timedelta(milliseconds=1))
    assert limits.should_run(None)


def test_naive_datetimes_are_utc():
    m = {model: datetime(2021, 1, 7) for model in MODELS}
    limits = run_limits(MODELS, m, datetime(2021, 1, 8), V)
    assert limits.lower == at("2021-01-06 18:00:00") and limits.upper.tzinfo is not None


def test_enabled_models_must_be_known_and_complete():
    with pytest.raises(ValueError, match="no web model is enabled"):
        run_limits((), {}, NOW, V)
    with pytest.raises(ValueError, match="unknown web model"):
        run_limits(("page_views", "orders"), {}, NOW, V)
    with pytest.raises(ValueError, match="'users' needs \\['sessions'\\]"):
        run_limits((SESSIONS_LIFECYCLE, "quarantined_sessions", PAGE_VIEWS, USERS), {}, NOW, V)


def test_last_success_only_moves_forward():
    assert advance_last_success(None, None) is None
    assert advance_last_success(None, at("2021-01-02 00:00:00")) == at("2021-01-02 00:00:00")
    assert advance_last_success(at("2021-01-03 00:00:00"), at("2021-01-02 00:00:00")) == at("2021-01-03 00:00:00")
    assert advance_last_success(at("2021-01-03 00:00:00"), None) == at("2021-01-03 00:00:00")
    assert advance_last_success(at("2021-01-03 00:00:00"), at("2021-01-04 00:00:00")) == at("2021-01-04 00:00:00")


def test_variables_of_any_allowed_size_mean_no_limit_rather_than_a_failed_run():
    """A backfill limit or a lookback of thousands of years overflowed the date arithmetic of every run."""
    unlimited = WebVariables(
        start_date=date(2021, 1, 1), backfill_limit_days=MAX_DAYS, lookback_window_hours=24 * MAX_DAYS
    )
    first = run_limits(MODELS, {}, NOW, unlimited)
    assert (first.lower, first.upper) == (START, NOW)
    standard = run_limits(MODELS, manifest(**dict.fromkeys(MODELS, "2021-05-01 00:00:00")), NOW, unlimited)
    assert (standard.state, standard.lower, standard.upper) == (RunState.STANDARD, START, NOW)
    behind = run_limits(MODELS, manifest(**dict.fromkeys(MODELS[:4], "2021-05-01 00:00:00")), NOW, unlimited)
    assert (behind.state, behind.lower, behind.upper) == (RunState.NEW_MODEL, START, at("2021-05-01 00:00:00"))
