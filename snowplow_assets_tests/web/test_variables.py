from datetime import date

import pytest

from snowplow_assets.settings import Settings
from snowplow_assets.web.variables import MODELS, WebVariables, closed_upstream, parse_models


def test_defaults_are_dbt_snowplow_webs():
    assert WebVariables() == WebVariables(date(2020, 1, 1), 30, 6, 3, 3, 730, 30, 10, 5)
    assert WebVariables.from_settings(Settings()) == WebVariables()
    assert parse_models(Settings().web_models) == MODELS


def test_settings_come_from_snowplow_web_variables(monkeypatch):
    monkeypatch.setenv("SNOWPLOW_WEB_START_DATE", "2024-02-29")
    monkeypatch.setenv("SNOWPLOW_WEB_MAX_SESSION_DAYS", "5")
    monkeypatch.setenv("SNOWPLOW_WEB_MODELS", " sessions_lifecycle, quarantined_sessions ")
    settings = Settings()
    variables = WebVariables.from_settings(settings)
    assert variables.start_date == date(2024, 2, 29) and variables.max_session_days == 5
    assert parse_models(settings.web_models) == ("sessions_lifecycle", "quarantined_sessions")


def test_models_come_in_build_order_and_need_their_upstream():
    assert closed_upstream(["users", "sessions", "page_views", "quarantined_sessions", "sessions_lifecycle"]) == MODELS
    with pytest.raises(ValueError, match="'page_views' needs \\['quarantined_sessions'\\]"):
        parse_models("sessions_lifecycle,page_views")
    with pytest.raises(ValueError, match="unknown web model"):
        parse_models("sessions_lifecycle,../users")
    # Upstream models outside `within` (not enabled) are not required.
    assert closed_upstream(["users"], within=["users"]) == ("users",)


@pytest.mark.parametrize(
    "change, message",
    [
        ({"heartbeat": 0}, "heartbeat must be at least 1"),
        ({"lookback_window_hours": -1}, "lookback_window_hours must not be negative"),
        ({"session_lookback_days": 2}, "session_lookback_days \\(2\\) must be at least max_session_days"),
        # Beyond the years 1 to 9999 a run's date arithmetic overflowed, in every run.
        ({"backfill_limit_days": 99_999_999}, "backfill_limit_days must be at most 3652058, the span of the years"),
        ({"lookback_window_hours": 10**9}, "lookback_window_hours must be at most 87649392"),
        ({"max_session_days": 2**31 - 1, "session_lookback_days": 2**31 - 1}, "max_session_days must be at most"),
    ],
)
def test_bad_variables_are_rejected(change, message):
    with pytest.raises(ValueError, match=message):
        WebVariables(**change)
