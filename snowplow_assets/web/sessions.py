"""Sessions: one row per session, from all its events up to its (capped) end and the page views it owns.

- start and end are the earliest and latest event time (derived_tstamp, else collector_tstamp);
  total_events counts every valid event of the session;
- page_views and engaged_time_in_s are the count and the sum of the session's rows in the page-views table
  (page_views.py), which decides which session owns a page view;
- `is_engaged`: two or more page views, or at least two heartbeats of engaged time (dbt-snowplow-web).

Why from the page-views table and not from the events again: the two tables must agree (the blocking check
`page_view_counts_agree`), and only that table knows what its model has built. When the page-views model is
ahead (sessions catching up after a failure, or a run that materialised page views alone), an event that landed
after the page-views model passed its window is in the session events but in no page view; counted from the
events, it made the sessions disagree with page views for good, and the check stopped every later run (until
2026-11-28). A session whose rows in that table change while its events do not (another session took one of
its page view ids over, page_views.py) is counted again by `recounted`.
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
_EVENT_TOTALS = ("session_id", "domain_userid", "start_tstamp", "end_tstamp", "total_events")


def sessions(events: DataFrame, page_views: DataFrame, heartbeat: int) -> DataFrame:
    """Session rows from session events (`session_id`, `domain_userid`, `event_time`) and page views (rows of
    the page-views table, of these sessions or more)."""
    totals = events.groupBy("session_id").agg(
        F.min("domain_userid").alias("domain_userid"),
        F.min("event_time").alias("start_tstamp"),
        F.max("event_time").alias("end_tstamp"),
        F.count(F.lit(1)).alias("total_events"),
    )
    return _with_page_views(totals, page_views, heartbeat)


def recounted(session_rows: DataFrame, page_views: DataFrame, heartbeat: int) -> DataFrame:
    """The sessions-table rows whose page_views or engaged_time_in_s differ from their sessions' rows in
    `page_views`, counted again from those: their events did not change, their page views did."""
    counted = _with_page_views(session_rows.select(*_EVENT_TOTALS), page_views, heartbeat)
    before = session_rows.select(
        "session_id", F.col("page_views").alias("_was"), F.col("engaged_time_in_s").alias("_in")
    )
    return (
        counted.join(before, "session_id")
        .where("page_views != _was OR engaged_time_in_s != _in")
        .select(*SESSIONS_TABLE.columns)
    )


def _with_page_views(totals: DataFrame, page_views: DataFrame, heartbeat: int) -> DataFrame:
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
