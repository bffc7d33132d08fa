"""Sessions: one row per session, from all its events up to its (capped) end and the page views built from them.

- start and end are the earliest and latest event time (derived_tstamp, else collector_tstamp);
- page_views and engaged_time_in_s come from the page views the session owns (page_views.py), total_events counts
  every valid event of the session;
- `is_engaged`: two or more page views, or at least two heartbeats of engaged time (dbt-snowplow-web).
"""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from snowplow_assets.web.upsert import TableSpec
from snowplow_assets.web.variables import SESSIONS

SESSIONS_TABLE = TableSpec(
    SESSIONS,
    key="session_id",
    schema="session_id STRING, domain_userid STRING, start_tstamp TIMESTAMP, end_tstamp TIMESTAMP, "
    "page_views BIGINT, engaged_time_in_s BIGINT, total_events BIGINT, is_engaged BOOLEAN",
)


def sessions(events: DataFrame, page_views: DataFrame, heartbeat: int) -> DataFrame:
    """Session rows from session events (`session_id`, `domain_userid`, `event_time`) and their page views."""
    totals = events.groupBy("session_id").agg(
        F.min("domain_userid").alias("domain_userid"),
        F.min("event_time").alias("start_tstamp"),
        F.max("event_time").alias("end_tstamp"),
        F.count(F.lit(1)).alias("total_events"),
    )
    return with_page_views(totals, page_views, heartbeat)


def recounted(session_rows: DataFrame, page_views: DataFrame, heartbeat: int) -> DataFrame:
    """Sessions-table rows with their page views counted again from `page_views`: for a session whose events
    are unchanged but that lost a page view to an earlier one of another session (page_views.py)."""
    totals = session_rows.select("session_id", "domain_userid", "start_tstamp", "end_tstamp", "total_events")
    return with_page_views(totals, page_views, heartbeat)


def with_page_views(totals: DataFrame, page_views: DataFrame, heartbeat: int) -> DataFrame:
    """Session rows from each session's event totals and its page views (none: 0 page views)."""
    views = page_views.groupBy("session_id").agg(
        F.count(F.lit(1)).alias("page_views"), F.sum("engaged_time_in_s").alias("engaged_time_in_s")
    )
    return totals.join(views, "session_id", "left").selectExpr(
        "session_id",
        "domain_userid",
        "start_tstamp",
        "end_tstamp",
        "coalesce(page_views, 0) AS page_views",
        "CAST(coalesce(engaged_time_in_s, 0) AS BIGINT) AS engaged_time_in_s",
        "total_events",
        f"coalesce(page_views, 0) >= 2 OR coalesce(engaged_time_in_s, 0) >= {2 * int(heartbeat)} AS is_engaged",
    )
