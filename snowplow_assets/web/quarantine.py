"""Quarantined sessions: sessions capped at `max_session_days`, whose processing has stopped for good.

The table lists every session the lifecycle capped, with its start and its capped end. It decides two things:

- the lifecycle never folds another event into a session listed here (or flagged in its own table);
- a derived model skips a quarantined session once the model's last_success has passed the session's capped
  end: by then the model has built the session from every event up to the cap, and anything arriving
  later is exactly what quarantine shuts out. A model that has not got that far (a new model backfilling,
  one catching up after a failure) still builds the session from its events up to the cap, so every model
  ends up with the same view of it.
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


def frozen_sessions(quarantine: DataFrame, last_success: datetime | None) -> DataFrame:
    """`session_id` of the quarantined sessions a model with this last_success must not build again."""
    if last_success is None:
        return quarantine.where("false").select("session_id")
    return quarantine.where(f"end_tstamp <= {timestamp_sql(last_success)}").select("session_id")
