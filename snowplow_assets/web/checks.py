"""Checks of the web model tables, read back from the lake (the Dagster asset checks of item 8)."""

from __future__ import annotations

from datetime import datetime

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from snowplow_assets.check_outcome import CheckOutcome
from snowplow_assets.web.events import timestamp_sql
from snowplow_assets.web.run_limits import format_timestamp

UNIQUE_KEYS = "unique_keys"
PAGE_VIEW_COUNTS_AGREE = "page_view_counts_agree"
QUARANTINED_SESSIONS_FROZEN = "quarantined_sessions_gain_no_events"


def unique_keys(table: DataFrame | None, key: str) -> CheckOutcome:
    """Every row has a key and no two rows share one. `table` None: the table has no rows yet."""
    rows = distinct = nulls = 0
    if table is not None:
        row = table.agg(
            F.count(F.lit(1)).alias("rows"),
            F.count_distinct(key).alias("distinct"),
            F.count_if(F.col(key).isNull()).alias("nulls"),
        ).first()
        rows, distinct, nulls = int(row["rows"]), int(row["distinct"]), int(row["nulls"])
    repeated = rows - nulls - distinct
    passed = repeated == 0 and nulls == 0
    description = (
        f"{rows} rows, every {key} present and unique"
        if passed
        else f"{rows} rows: {nulls} without {key}, {repeated} repeating another row's {key}"
    )
    return CheckOutcome(UNIQUE_KEYS, passed, description, {"rows": rows, "null_keys": nulls, "repeated_keys": repeated})


def page_view_counts_agree(sessions: DataFrame, page_views: DataFrame, up_to: datetime) -> CheckOutcome:
    """Each session's `page_views` equals its rows in the page-views table collected up to `up_to`.

    `up_to` is the sessions model's last_success: page views collected later (the page-views model may be
    ahead while sessions catch up) are not in any session's count yet. A page view of that age whose session
    has no row counts as a disagreement too.
    """
    counted = (
        page_views.where(f"collector_tstamp <= {timestamp_sql(up_to)}")
        .groupBy("session_id")
        .agg(F.count(F.lit(1)).alias("in_page_views"))
    )
    row = (
        sessions.select("session_id", "page_views")
        .join(counted, "session_id", "full")
        .agg(
            F.count("page_views").alias("sessions"),
            F.count_if(F.expr("coalesce(page_views, -1) != coalesce(in_page_views, 0)")).alias("disagreeing"),
            F.count_if(F.col("page_views").isNull()).alias("orphaned"),
        )
        .first()
    )
    sessions_n, disagreeing, orphaned = int(row["sessions"]), int(row["disagreeing"]), int(row["orphaned"])
    passed = disagreeing == 0
    description = (
        f"{sessions_n} sessions agree with the page-views table up to {format_timestamp(up_to)}"
        if passed
        else f"{disagreeing} sessions disagree with the page-views table up to {format_timestamp(up_to)} "
        f"({orphaned} of them have page views but no session row)"
    )
    return CheckOutcome(
        PAGE_VIEW_COUNTS_AGREE,
        passed,
        description,
        {"sessions": sessions_n, "disagreeing": disagreeing, "orphaned": orphaned},
    )


def quarantined_sessions_gain_no_events(quarantine: DataFrame, page_views: DataFrame) -> CheckOutcome:
    """No page view of a quarantined session in the page-views table was collected after the session's capped
    end: quarantine shuts out every later event (quarantine.py), and a page view is the event that opens it.

    Both tables are read back from the lake. Until 2026-11-27 the check counted this run's rows against the
    same list of frozen sessions that the run had excluded them by, so it could not fail: it repeated the
    exclusion it was to check. Sessions and users keep no event times of their own to compare with the cap;
    they are built from the same session events as the page views."""
    row = (
        page_views.alias("v")
        .join(quarantine.alias("q"), "session_id")
        .where("v.collector_tstamp > q.end_tstamp")
        .agg(F.count(F.lit(1)).alias("late"), F.count_distinct("session_id").alias("sessions"))
        .first()
    )
    late, sessions = int(row["late"]), int(row["sessions"])
    return CheckOutcome(
        QUARANTINED_SESSIONS_FROZEN,
        late == 0,
        "no page view of a quarantined session was collected after its cap"
        if late == 0
        else f"{late} page views of {sessions} quarantined sessions were collected after the session's cap",
        {"page_views_after_cap": late, "sessions": sessions},
    )
