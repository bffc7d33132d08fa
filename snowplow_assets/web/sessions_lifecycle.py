"""The sessions lifecycle manifest: when every session started and ended, by collector_tstamp (FORMATS.md §8).

Each run folds the valid events of its window into the table:

- a session's *first event* is its earliest by (collector_tstamp, event_id); its start is that event's
  collector_tstamp and its user that event's domain_userid, so a late event that turns out to be earlier
  moves the start and can change the user, the same whichever run it arrives in;
- start and end merge with least and greatest, so folding the same events twice changes nothing (the
  lookback window re-reads hours that were processed before);
- a session whose end passes start + `max_session_days` is capped there and quarantined: its end is the cap,
  `is_quarantined` is set, and no later event is folded into it again (bots keep sessions open for years);
- an existing session is matched only when it started within `session_lookback_days` before the window,
  which bounds the scan of the table; an older session id seen again starts a new lifecycle.
"""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from snowplow_assets.web.upsert import TableSpec
from snowplow_assets.web.variables import SESSIONS_LIFECYCLE

LIFECYCLE = TableSpec(
    SESSIONS_LIFECYCLE,
    key="session_id",
    schema="session_id STRING, domain_userid STRING, start_tstamp TIMESTAMP, end_tstamp TIMESTAMP, "
    "first_event_id STRING, is_quarantined BOOLEAN",
)


def _first(alias: str) -> str:
    fields = {"tstamp": "start_tstamp", "event_id": "first_event_id", "domain_userid": "domain_userid"}
    return "named_struct(" + ", ".join(f"'{name}', {alias}.{column}" for name, column in fields.items()) + ")"


def touched_sessions(valid_events: DataFrame) -> DataFrame:
    """Per session of the valid events: its first event (start, id, user), its latest event and event count."""
    first = "min(named_struct('tstamp', collector_tstamp, 'event_id', event_id, 'domain_userid', domain_userid))"
    return (
        valid_events.groupBy("domain_sessionid")
        .agg(
            F.expr(first).alias("first"),
            F.max("collector_tstamp").alias("end_tstamp"),
            F.count(F.lit(1)).alias("events"),
        )
        .selectExpr(
            "domain_sessionid AS session_id",
            "first.domain_userid AS domain_userid",
            "first.tstamp AS start_tstamp",
            "end_tstamp",
            "first.event_id AS first_event_id",
            "events",
        )
    )


def merge_lifecycle(touched: DataFrame, existing: DataFrame, max_session_days: int) -> DataFrame:
    """The lifecycle rows of `touched` sessions folded into their `existing` rows, capped (module doc).

    `touched` must not hold quarantined sessions: they are never folded again. The result has the lifecycle
    columns plus `is_new` (no existing row was matched).
    """
    merged = (
        touched.alias("n")
        .join(existing.alias("o"), "session_id", "left")
        .selectExpr(
            "session_id",
            f"CASE WHEN o.session_id IS NULL THEN {_first('n')} ELSE least({_first('n')}, {_first('o')}) END AS first",
            "greatest(n.end_tstamp, o.end_tstamp) AS last_tstamp",
            "o.session_id IS NULL AS is_new",
        )
        .selectExpr("*", f"timestampadd(DAY, {int(max_session_days)}, first.tstamp) AS cap")
    )
    return merged.selectExpr(
        "session_id",
        "first.domain_userid AS domain_userid",
        "first.tstamp AS start_tstamp",
        "least(last_tstamp, cap) AS end_tstamp",
        "first.event_id AS first_event_id",
        "last_tstamp > cap AS is_quarantined",
        "is_new",
    )
