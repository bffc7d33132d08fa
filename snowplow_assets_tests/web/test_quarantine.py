"""Which quarantined sessions a run leaves alone (web/quarantine.py)."""

from datetime import UTC, datetime, timedelta

from snowplow_assets.web.quarantine import QUARANTINE, frozen_sessions

WINDOW_START = datetime(2026, 3, 4, 10, 0, tzinfo=UTC)


def test_a_quarantined_session_is_frozen_only_once_its_capped_end_is_before_the_window(spark):
    """The window includes its lower bound, so an event at a session's capped end can still be in it: that
    session is built once more, and frozen from the first window that starts after its end."""
    ends = {
        "ended_before": WINDOW_START - timedelta(microseconds=1),
        "ends_at_the_window_start": WINDOW_START,
        "ends_after": WINDOW_START + timedelta(hours=1),
    }
    rows = [(session, "u", end - timedelta(days=3), end) for session, end in ends.items()]
    quarantine = spark.createDataFrame(rows, QUARANTINE.schema)
    assert [r.session_id for r in frozen_sessions(quarantine, WINDOW_START).collect()] == ["ended_before"]
