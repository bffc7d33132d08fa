"""Users: one row per domain_userid, aggregated over all of the user's sessions in the sessions table.

A run rebuilds the users of the sessions it touched from the sessions table, which by then holds every
session of theirs the sessions model has built (within `session_lookback_days` of the window). First and
last session are ordered by (start_tstamp, session_id).
"""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from snowplow_assets.web.upsert import TableSpec
from snowplow_assets.web.variables import USERS

USERS_TABLE = TableSpec(
    USERS,
    key="domain_userid",
    schema="domain_userid STRING, start_tstamp TIMESTAMP, end_tstamp TIMESTAMP, first_session_id STRING, "
    "last_session_id STRING, sessions BIGINT, page_views BIGINT, engaged_time_in_s BIGINT",
)


def users(sessions: DataFrame) -> DataFrame:
    """User rows from sessions-table rows (every session of each user to build)."""
    ordered = "named_struct('start', start_tstamp, 'session_id', session_id)"
    return (
        sessions.groupBy("domain_userid")
        .agg(
            F.expr(f"min({ordered})").alias("first"),
            F.expr(f"max({ordered})").alias("last"),
            F.max("end_tstamp").alias("end_tstamp"),
            F.count(F.lit(1)).alias("sessions"),
            F.sum("page_views").alias("page_views"),
            F.sum("engaged_time_in_s").alias("engaged_time_in_s"),
        )
        .selectExpr(
            "domain_userid",
            "first.start AS start_tstamp",
            "end_tstamp",
            "first.session_id AS first_session_id",
            "last.session_id AS last_session_id",
            "sessions",
            "CAST(page_views AS BIGINT) AS page_views",
            "CAST(engaged_time_in_s AS BIGINT) AS engaged_time_in_s",
        )
    )
