"""Quarantined sessions: sessions capped at `max_session_days`, whose processing has stopped for good.

The table lists every session the lifecycle capped, with its start and its capped end. It decides two things:

- the lifecycle never folds another event into a session listed here (or flagged in its own table);
- a derived model skips a quarantined session once a run's window starts after the session's capped end:
  no event up to the cap can then arrive in the window, so the model has built the session from every
  event it will ever take, and anything later is exactly what quarantine shuts out. While the cap is
  still within the window (a late event up to the cap may arrive within the lookback, the run that
  quarantines the session may bring one, a new model backfills, a model catches up after a failure), the
  session is built again from its events up to the cap, so every model ends up with the same view of it.
"""

from __future__ import annotations

from datetime import datetime

from pyspark.sql import DataFrame

from snowplow_assets.web.events import timestamp_sql
from snowplow_assets.web.upsert import TableSpec
from snowplow_assets.web.variables import QUARANTINED_SESSIONS

QUARANTINE = TableSpec(
    QUARANTINED_SESSIONS,
    key="session_id",
    schema="session_id STRING, domain_userid STRING, start_tstamp TIMESTAMP, end_tstamp TIMESTAMP",
)


def newly_quarantined(lifecycle: DataFrame, touched: DataFrame) -> DataFrame:
    """The quarantine rows of the touched sessions whose lifecycle row is quarantined."""
    return (
        lifecycle.where("is_quarantined")
        .join(touched.select("session_id"), "session_id", "left_semi")
        .select(*QUARANTINE.columns)
    )


def frozen_sessions(quarantine: DataFrame, window_start: datetime) -> DataFrame:
    """`session_id` of the quarantined sessions a run whose window starts at `window_start` must not build."""
    return quarantine.where(f"end_tstamp < {timestamp_sql(window_start)}").select("session_id")
