"""The web asset checks' logic passes on good tables and fails on each defect it is there to catch."""

from datetime import datetime

from pyspark.sql import DataFrame

from snowplow_assets.web.checks import page_view_counts_agree, quarantined_sessions_gain_no_events, unique_keys

T = datetime(2026, 3, 1, 10)
LATER = datetime(2026, 3, 1, 12)
SESSIONS = "session_id STRING, page_views BIGINT"
PAGE_VIEWS = "page_view_id STRING, session_id STRING, collector_tstamp TIMESTAMP"


def test_unique_keys(spark):
    good = unique_keys(spark.createDataFrame([("a",), ("b",)], "id STRING"), "id")
    assert good.passed and good.metadata == {"rows": 2, "null_keys": 0, "repeated_keys": 0}
    bad = unique_keys(spark.createDataFrame([("a",), ("a",), ("b",), (None,)], "id STRING"), "id")
    assert not bad.passed and bad.metadata == {"rows": 4, "null_keys": 1, "repeated_keys": 1}
    assert bad.description == "4 rows: 1 without id, 1 repeating another row's id"
    assert unique_keys(None, "id").passed
    keyless = unique_keys(spark.createDataFrame([("a",), (None,)], "id STRING"), "id")  # no key repeats
    assert not keyless.passed and keyless.metadata == {"rows": 2, "null_keys": 1, "repeated_keys": 0}


def test_page_view_counts_agree(spark):
    views = spark.createDataFrame([("v1", "s1", T), ("v2", "s1", T), ("v3", "s2", T), ("v4", "s2", LATER)], PAGE_VIEWS)
    # v4 was collected after the sessions' last_success: no session counts it yet
    sessions = spark.createDataFrame([("s1", 2), ("s2", 1), ("s3", 0)], SESSIONS)
    assert page_view_counts_agree(sessions, views, up_to=T).passed
    wrong = spark.createDataFrame([("s1", 3), ("s3", 0)], SESSIONS)  # s1 counts one too many; s2 has no row
    outcome = page_view_counts_agree(wrong, views, up_to=T)
    assert not outcome.passed and outcome.metadata == {"sessions": 2, "disagreeing": 2, "orphaned": 1}


def test_quarantined_sessions_gain_no_events(spark):
    cap = "2026-03-01 10:00:00"
    quarantine = spark.createDataFrame(
        [("bot", "u", "2026-02-01 10:00:00", cap)],
        "session_id STRING, domain_userid STRING, start_tstamp STRING, end_tstamp STRING",
    ).selectExpr(
        "session_id",
        "domain_userid",
        "CAST(start_tstamp AS TIMESTAMP) AS start_tstamp",
        "CAST(end_tstamp AS TIMESTAMP) AS end_tstamp",
    )

    def views(*rows: tuple[str, str]) -> DataFrame:
        frame = spark.createDataFrame(list(rows), "session_id STRING, collector_tstamp STRING")
        return frame.selectExpr("session_id", "CAST(collector_tstamp AS TIMESTAMP) AS collector_tstamp")

    # Up to the cap, and another session's page view after it: nothing quarantine shuts out.
    assert quarantined_sessions_gain_no_events(quarantine, views(("bot", cap), ("s1", "2026-03-02 00:00:00"))).passed
    late = quarantined_sessions_gain_no_events(
        quarantine, views(("bot", cap), ("bot", "2026-03-01 10:00:00.001"), ("bot", "2026-03-05 00:00:00"))
    )
    assert not late.passed and late.metadata == {"page_views_after_cap": 2, "sessions": 1}
