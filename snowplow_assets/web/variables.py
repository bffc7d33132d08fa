"""The web models, how they depend on each other, and the variables of the incremental logic (FORMATS.md §8)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import date
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from snowplow_assets.settings import Settings

SESSIONS_LIFECYCLE = "sessions_lifecycle"
QUARANTINED_SESSIONS = "quarantined_sessions"
PAGE_VIEWS = "page_views"
SESSIONS = "sessions"
USERS = "users"

# In build order: each model reads the tables of the ones before it.
MODELS: tuple[str, ...] = (SESSIONS_LIFECYCLE, QUARANTINED_SESSIONS, PAGE_VIEWS, SESSIONS, USERS)

# model -> the models whose tables it reads. Sessions reads page views only to check its page-view counts
# against them, which still makes page views a prerequisite.
UPSTREAM: dict[str, tuple[str, ...]] = {
    SESSIONS_LIFECYCLE: (),
    QUARANTINED_SESSIONS: (SESSIONS_LIFECYCLE,),
    PAGE_VIEWS: (SESSIONS_LIFECYCLE, QUARANTINED_SESSIONS),
    SESSIONS: (SESSIONS_LIFECYCLE, QUARANTINED_SESSIONS, PAGE_VIEWS),
    USERS: (SESSIONS,),
}


def closed_upstream(models: Iterable[str], within: Iterable[str] = MODELS) -> tuple[str, ...]:
    """`models` in build order, checked to be web models that include every upstream model in `within`.

    A model whose upstream model is missing would read a table nobody keeps current, so such a set is an
    error rather than something to run.
    """
    chosen = list(models)
    unknown = sorted(set(chosen) - set(MODELS))
    if unknown:
        raise ValueError(f"unknown web model(s) {unknown}; the web models are {list(MODELS)}")
    within = set(within)
    for model in chosen:
        missing = [m for m in UPSTREAM[model] if m in within and m not in chosen]
        if missing:
            raise ValueError(f"web model {model!r} needs {missing} as well: it reads their tables")
    return tuple(m for m in MODELS if m in chosen)


# The days from the year 1 to the year 9999, the span of every timestamp in the lake. A variable may be at most
# this span (in its unit): a larger one would mean nothing more ("no limit"), but overflowed the date arithmetic
# of every run, Python's and Spark's alike, so it is refused rather than failing each run.
MAX_DAYS = (date.max - date.min).days
_MOST = {
    **dict.fromkeys(
        (
            "backfill_limit_days",
            "days_late_allowed",
            "max_session_days",
            "session_lookback_days",
            "upsert_lookback_days",
        ),
        MAX_DAYS,
    ),
    "lookback_window_hours": 24 * MAX_DAYS,
    **dict.fromkeys(("heartbeat", "min_visit_length"), 86_400 * MAX_DAYS),  # seconds
}


@dataclass(frozen=True)
class WebVariables:
    """dbt-snowplow-web's `snowplow__*` variables, with its defaults."""

    start_date: date = date(2020, 1, 1)
    backfill_limit_days: int = 30
    lookback_window_hours: int = 6
    days_late_allowed: int = 3
    max_session_days: int = 3
    session_lookback_days: int = 730
    upsert_lookback_days: int = 30
    heartbeat: int = 10
    min_visit_length: int = 5

    def __post_init__(self) -> None:
        positive = ("backfill_limit_days", "max_session_days", "session_lookback_days", "heartbeat")
        for name in positive:
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be at least 1: {getattr(self, name)}")
        for name in ("lookback_window_hours", "days_late_allowed", "upsert_lookback_days", "min_visit_length"):
            if getattr(self, name) < 0:
                raise ValueError(f"{name} must not be negative: {getattr(self, name)}")
        for name, most in _MOST.items():
            if getattr(self, name) > most:
                raise ValueError(
                    f"{name} must be at most {most}, the span of the years 1 to 9999, which already means no limit: "
                    f"{getattr(self, name)}"
                )
        if self.session_lookback_days < self.max_session_days:
            raise ValueError(
                f"session_lookback_days ({self.session_lookback_days}) must be at least max_session_days "
                f"({self.max_session_days}): a session still running could not be found again"
            )

    @classmethod
    def from_settings(cls, settings: Settings) -> WebVariables:
        return cls(
            start_date=settings.web_start_date,
            backfill_limit_days=settings.web_backfill_limit_days,
            lookback_window_hours=settings.web_lookback_window_hours,
            days_late_allowed=settings.web_days_late_allowed,
            max_session_days=settings.web_max_session_days,
            session_lookback_days=settings.web_session_lookback_days,
            upsert_lookback_days=settings.web_upsert_lookback_days,
            heartbeat=settings.web_heartbeat,
            min_visit_length=settings.web_min_visit_length,
        )


def parse_models(text: str) -> tuple[str, ...]:
    """The enabled models of a comma-separated setting, in build order, checked like `closed_upstream`."""
    return closed_upstream(name.strip() for name in text.split(",") if name.strip())
