"""Whether the web models' incremental runs will read a newly shredded batch's events.

An incremental run reads the events collected from its lower limit on, which trails the models' last_success by
lookback_window_hours (run_limits.incremental_reach). A batch shredded after the models have moved further than
that past some of its events (a folder recovered or re-sent late, a backfill of old folders once the models run)
is never read for those events: only a full refresh takes them in (README, Incremental web models). Until 2026-11-28 nothing
said so; the shred's check `events_within_web_models_reach` now warns about it when the batch is shredded,
naming the full refresh. Events before start_date are left out of every build by design, and are not counted
against the batch.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import UTC, datetime

from snowplow_assets.check_outcome import CheckOutcome
from snowplow_assets.web.events import marker_time
from snowplow_assets.web.run_limits import format_timestamp, incremental_reach
from snowplow_assets.web.variables import WebVariables

WITHIN_REACH = "events_within_web_models_reach"


def events_within_reach(
    enabled: Sequence[str],
    manifest: Mapping[str, datetime | None],
    variables: WebVariables,
    min_collector_tstamp: str | None,
    max_collector_tstamp: str | None,
) -> CheckOutcome:
    """Fails when some of a batch's events, collected between its min and max collector_tstamp (the shred
    report's, as its completion marker has them), lie before the incremental reach of the web models."""
    if not enabled:
        return CheckOutcome(WITHIN_REACH, True, "No web model is enabled.")
    earliest = marker_time(min_collector_tstamp, "the shred report")
    latest = marker_time(max_collector_tstamp, "the shred report")
    if earliest is None or latest is None:
        return CheckOutcome(WITHIN_REACH, True, "The batch has no good event.")
    reach = incremental_reach(enabled, manifest, variables)
    if reach is None:
        return CheckOutcome(
            WITHIN_REACH, True, "The web models have not run yet: their first run reads from start_date."
        )
    start = datetime(variables.start_date.year, variables.start_date.month, variables.start_date.day, tzinfo=UTC)
    if max(earliest, start) >= reach or latest < start:
        return CheckOutcome(
            WITHIN_REACH,
            True,
            f"Every event from start_date on is within reach: the web models read from {format_timestamp(reach)}.",
        )
    return CheckOutcome(
        WITHIN_REACH,
        False,
        f"Events collected from {format_timestamp(max(earliest, start))} to "
        f"{format_timestamp(min(latest, reach))} are before {format_timestamp(reach)}, where the web models' "
        f"incremental runs now start for every model (their greatest last_success less lookback_window_hours="
        f"{variables.lookback_window_hours}): no incremental run will read them. Rebuild the web models with a "
        "full refresh to take them in (`snowplow-assets process --full-refresh`, or the run config "
        "full_refresh: true of build_web_models).",
    )
