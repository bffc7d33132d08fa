"""WebRun on adversarial but valid input: gaps in the data. Each case must neither fail a run nor stop the
models (a failed run leaves last_success where it was, so the next run reads the same window and fails
again), nor make a series of runs differ from one run over the same events."""

from datetime import date, timedelta

from snowplow_assets.lake import Lake
from snowplow_assets.storage import LocalFileSystem
from snowplow_assets.web.pipeline import TABLES, WebRun
from snowplow_assets.web.run_limits import RunState
from snowplow_assets.web.upsert import read_table
from snowplow_assets.web.variables import MODELS, SESSIONS, USERS, WebVariables
from snowplow_assets_tests.web.shredded import ts, uid, write_shredded_run
from snowplow_assets_tests.web.test_pipeline import page_view

VARIABLES = WebVariables(start_date=date(2026, 3, 1))
T0 = ts("2026-03-01 08:00:00")
H, D = timedelta(hours=1), timedelta(days=1)


def text_rows(spark, lake: Lake, model: str) -> list[tuple]:
    """A table's rows with every column as text: PySpark cannot hand Python a timestamp in year 0."""
    table = read_table(spark, LocalFileSystem(), lake, TABLES[model])
    return sorted(tuple(row) for row in table.selectExpr(*(f"CAST({c} AS STRING)" for c in table.columns)).collect())


def run_all(spark, lake: Lake, manifest: dict, now, variables=VARIABLES) -> WebRun:
    """One run of every model; updates `manifest` and fails on a failed check."""
    with WebRun(spark, LocalFileSystem(), lake, variables, MODELS, manifest, now) as web:
        manifest.update({model: web.build(model).last_success for model in MODELS})
        failed = [c for model in MODELS for c in web.check(model) if not c.passed]
    assert not failed, failed
    return web


def test_a_gap_longer_than_the_backfill_limit_does_not_stop_the_models(spark, tmp_path):
    """No event for longer than backfill_limit_days, then traffic again: every window re-read the last events
    within its lookback, so it was never empty, last_success never moved, and the models stopped for good."""
    lake = Lake(str(tmp_path / "lake"))
    write_shredded_run(lake, "run=2026-03-01-09-00-00", page_view("a/home", "a", "u1", T0, pings=(10,)))
    manifest: dict = {}
    run_all(spark, lake, manifest, T0 + H)
    assert set(manifest.values()) == {T0 + timedelta(seconds=10)}

    back = T0 + 50 * D
    write_shredded_run(lake, "run=2026-04-20-09-00-00", page_view("b/home", "b", "u1", back, pings=(10,)))
    web = run_all(spark, lake, manifest, back + H)
    # Nothing after last_success up to the backfill limit, and complete folders hold events after it.
    assert web.limits.upper == T0 + timedelta(seconds=10) + 30 * D
    assert set(manifest.values()) == {web.limits.upper}
    web = run_all(spark, lake, manifest, back + H)
    assert web.limits.state is RunState.STANDARD and set(manifest.values()) == {back + timedelta(seconds=10)}
    assert [row[0] for row in text_rows(spark, lake, SESSIONS)] == sorted([uid("a"), uid("b")])
    assert text_rows(spark, lake, USERS)[0][5] == "2"  # sessions
