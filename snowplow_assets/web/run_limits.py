"""Which collector_tstamp window a run of the web models processes: dbt-snowplow-web's run limits (FORMATS.md §8).

One pure function of the enabled models, the incremental manifest ({model: last_success}), the current time
and the variables. Every model of a run uses the same limits; a model whose own last_success is already at
or past the upper limit writes nothing in that run.

Two clamps are added to the four formulas, both only reachable through odd manifests or clocks:

- the lower limit is never before `start_date`: events before it are never processed, so the lookback of
  a model that stopped near `start_date` cannot pull them into a run either (an incremental build would
  otherwise differ from a full one);
- the upper limit is never before the lower limit: a last_success later than `now` (a clock set back, a
  manifest copied from elsewhere) gives an empty window instead of a reversed one.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from enum import Enum

from snowplow_assets.web.variables import WebVariables, closed_upstream

TIMESTAMP_FORMAT = "%Y-%m-%d %H:%M:%S"


class RunState(str, Enum):
    FIRST_RUN = "first run"
    NEW_MODEL = "new model"
    OUT_OF_SYNC = "models out of sync"
    STANDARD = "standard run"


# What dbt-snowplow-web logs for each state.
_MESSAGES = {
    RunState.FIRST_RUN: "No data in manifest. Processing data from start_date",
    RunState.NEW_MODEL: "New Snowplow incremental model. Backfilling",
    RunState.OUT_OF_SYNC: "Snowplow incremental models out of sync. Syncing",
    RunState.STANDARD: "Standard incremental run",
}


def as_utc(value: datetime) -> datetime:
    """Aware datetimes in UTC; naive ones are taken as UTC, like every timestamp of the lake."""
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


def _shifted(moment: datetime, delta: timedelta) -> datetime:
    """moment + delta, at most the last instant and at least the first a datetime holds: a backfill limit or a
    lookback of thousands of years (variables.MAX_DAYS) means no limit rather than a failed run."""
    try:
        return moment + delta
    except OverflowError:
        return (datetime.max if delta > timedelta(0) else datetime.min).replace(tzinfo=UTC)


def format_timestamp(value: datetime) -> str:
    return as_utc(value).strftime(TIMESTAMP_FORMAT)


@dataclass(frozen=True)
class RunLimits:
    state: RunState
    lower: datetime
    upper: datetime
    models: tuple[str, ...]  # the enabled models, in build order
    missing: tuple[str, ...]  # enabled models without a last_success
    min_last_success: datetime | None
    max_last_success: datetime | None

    def should_run(self, last_success: datetime | None) -> bool:
        """A model at or past the upper limit has nothing to do in this run."""
        return last_success is None or as_utc(last_success) < self.upper

    @property
    def message(self) -> str:
        return f"Snowplow: {_MESSAGES[self.state]}"

    @property
    def processing(self) -> str:
        return f"Snowplow: Processing data between {format_timestamp(self.lower)} and {format_timestamp(self.upper)}"


def run_limits(
    enabled: Sequence[str],
    manifest: Mapping[str, datetime | None],
    now: datetime,
    variables: WebVariables,
) -> RunLimits:
    """The state and the [lower, upper] collector_tstamp window of a run over the `enabled` models.

    `manifest` maps a model to its last_success; models that are not enabled are ignored, and a model
    mapped to None counts as missing, like one absent from the manifest.
    """
    models = closed_upstream(enabled)
    if not models:
        raise ValueError("no web model is enabled")
    start = datetime(variables.start_date.year, variables.start_date.month, variables.start_date.day, tzinfo=UTC)
    now = as_utc(now)
    backfill = timedelta(days=variables.backfill_limit_days)
    lookback = timedelta(hours=variables.lookback_window_hours)
    known = {m: as_utc(manifest[m]) for m in models if manifest.get(m) is not None}  # type: ignore[arg-type]
    missing = tuple(m for m in models if m not in known)
    least = min(known.values(), default=None)
    greatest = max(known.values(), default=None)

    if least is None or greatest is None:
        state, lower, upper = RunState.FIRST_RUN, start, min(_shifted(start, backfill), now)
    elif missing:
        state, lower, upper = RunState.NEW_MODEL, start, min(greatest, _shifted(start, backfill))
    elif least != greatest:
        state, lower, upper = RunState.OUT_OF_SYNC, _shifted(least, -lookback), min(greatest, _shifted(least, backfill))
    else:
        state, lower, upper = RunState.STANDARD, _shifted(greatest, -lookback), min(_shifted(greatest, backfill), now)
    lower = max(lower, start)
    upper = max(upper, lower)
    return RunLimits(state, lower, upper, models, missing, least, greatest)


def incremental_reach(
    enabled: Sequence[str], manifest: Mapping[str, datetime | None], variables: WebVariables
) -> datetime | None:
    """The earliest collector_tstamp that incremental runs still read for every enabled model that has run: the
    greatest last_success less the lookback, not before start_date. A run out of sync reads from the least
    last_success less the lookback, but only for the models behind: those at the greatest have nothing to do
    until the next standard run, which reads from the greatest less the lookback; a new model's backfill reads
    from start_date for that model only. None when no enabled model has a last_success: the first run reads
    from start_date."""
    known = [as_utc(last) for m in closed_upstream(enabled) if (last := manifest.get(m)) is not None]
    if not known:
        return None
    start = datetime(variables.start_date.year, variables.start_date.month, variables.start_date.day, tzinfo=UTC)
    return max(_shifted(max(known), -timedelta(hours=variables.lookback_window_hours)), start)


def advance_last_success(previous: datetime | None, processed_up_to: datetime | None) -> datetime | None:
    """last_success only moves forward; a run that processed nothing leaves it as it was."""
    if processed_up_to is None:
        return previous
    if previous is None:
        return as_utc(processed_up_to)
    return max(as_utc(previous), as_utc(processed_up_to))
