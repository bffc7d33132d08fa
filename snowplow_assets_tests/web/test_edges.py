"""WebRun on adversarial but valid input: gaps in the data, and timestamps at the edges of what the shredder
accepts. Each case must neither fail a run nor stop the models (a failed run leaves last_success where it
was, so the next run reads the same window and fails again), nor make a series of runs differ from one run
over the same events."""

from datetime import date, timedelta

import pytest

from snowplow_assets.lake import Lake
from snowplow_assets.storage import LocalFileSystem
from snowplow_assets.web.pipeline import TABLES, WebRun
from snowplow_assets.web.run_limits import RunState
from snowplow_assets.web.upsert import read_table, table_partitions
from snowplow_assets.web.variables import MODELS, PAGE_VIEWS, SESSIONS, SESSIONS_LIFECYCLE, USERS, WebVariables
from snowplow_assets_tests.web.shredded import Event, ts, uid, write_shredded_run
from snowplow_assets_tests.web.test_pipeline import m, page_view

VARIABLES = WebVariables(start_date=date(2026, 3, 1))
T0 = ts("2026-03-01 08:00:00")
H, D = timedelta(hours=1), timedelta(days=1)
BACK = T0 + 50 * D  # traffic again after the gap
RUN_WITH_YEAR_0 = "run=2026-03-01-09-00-00"


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


@pytest.fixture(scope="module")
def gap(spark, tmp_path_factory):
    """The series of runs of the first two tests below: a first run over a's folder and two folders whose names
    are no time (n's and y's, both of u2); no event for 50 days, longer than backfill_limit_days; then b, of u1
    like a, and two runs. Returns the lake, the manifest after each run, each run's WebRun and the sessions after
    the first run."""
    lake = Lake(str(tmp_path_factory.mktemp("gap") / "lake"))
    write_shredded_run(lake, "run=2026-03-01-09-00-00", page_view("a/home", "a", "u1", T0, pings=(10,)))
    write_shredded_run(lake, "run=2026-02-30-10-00-00", page_view("n/home", "n", "u2", T0))
    write_shredded_run(lake, "run=0000-01-01-00-00-00", page_view("y/home", "y", "u2", T0 + timedelta(seconds=5)))
    manifest: dict = {}
    manifests, runs = [], []
    runs.append(run_all(spark, lake, manifest, T0 + H))
    manifests.append(dict(manifest))
    first_sessions = [row[0] for row in text_rows(spark, lake, SESSIONS)]
    write_shredded_run(lake, "run=2026-04-20-09-00-00", page_view("b/home", "b", "u1", BACK, pings=(10,)))
    for _ in range(2):
        runs.append(run_all(spark, lake, manifest, BACK + H))
        manifests.append(dict(manifest))
    return lake, manifests, runs, first_sessions


def test_a_gap_longer_than_the_backfill_limit_does_not_stop_the_models(spark, gap):
    """No event for longer than backfill_limit_days, then traffic again: every window re-read the last events
    within its lookback, so it was never empty, last_success never moved, and the models stopped for good."""
    lake, manifests, runs, _ = gap
    assert set(manifests[0].values()) == {T0 + timedelta(seconds=10)}
    # Nothing after last_success up to the backfill limit, and complete folders hold events after it.
    assert runs[1].limits.upper == T0 + timedelta(seconds=10) + 30 * D
    assert set(manifests[1].values()) == {runs[1].limits.upper}
    assert runs[2].limits.state is RunState.STANDARD and set(manifests[2].values()) == {BACK + timedelta(seconds=10)}
    assert [row[0] for row in text_rows(spark, lake, SESSIONS)] == sorted(uid(s) for s in ("a", "b", "n", "y"))
    assert {row[0]: row[5] for row in text_rows(spark, lake, USERS)} == {uid("u1"): "2", uid("u2"): "2"}  # sessions


def test_a_run_folder_whose_name_is_no_time_is_read_by_its_marker(spark, gap):
    """`run=2026-02-30-…` and `run=0000-…` are run folder names (lake.RUN_FOLDER) that the sensor registers and
    the shredder mirrors, but no instant: listed by every run, such a folder failed them all. Its name cannot
    tell when it was cut, so its marker alone decides whether a window reads it."""
    lake, manifests, runs, first_sessions = gap
    assert first_sessions == sorted(uid(s) for s in ("a", "n", "y"))
    # The second run's window reads them again, within its lookback, and passes too.
    assert {"run=2026-02-30-10-00-00", "run=0000-01-01-00-00-00"} <= set(runs[1].window.selection.runs)
    assert set(manifests[1].values()) == {runs[1].limits.upper}
    # The third run's window is after their events: their markers skip them.
    assert (runs[2].window.selection.outside, runs[2].window.selection.runs) == (2, ["run=2026-04-20-09-00-00"])
    assert {row[0]: row[5] for row in text_rows(spark, lake, USERS)} == {uid("u1"): "2", uid("u2"): "2"}


@pytest.mark.parametrize("quiet_after", [10 * H, 40 * D], ids=["standard-window", "window-cut-by-backfill-limit"])
@pytest.mark.parametrize("future_beside_old_events", [False, True], ids=["own-folder", "beside-old-events"])
def test_an_event_collected_in_the_future_is_no_gap_in_the_data(spark, tmp_path, quiet_after, future_beside_old_events):
    """One event with a collector clock set ahead made every quiet run move last_success past the data that had
    arrived, as if complete folders held data past the window: a folder delayed longer than the lookback was
    then read by no window (until 2026-11-28; found by fuzzing). A marker whose events run from before the
    window's end to after now cannot tell whether any lies between: that folder is read."""
    lake, manifest = Lake(str(tmp_path / "lake")), {}
    future = page_view("f/home", "f", "u3", T0 + 400 * D)
    a = page_view("a/home", "a", "u1", T0, pings=(10,))
    write_shredded_run(lake, "run=2026-03-01-09-00-00", a + future if future_beside_old_events else a)
    if not future_beside_old_events:
        write_shredded_run(lake, "run=2026-03-01-09-30-00", future)
    run_all(spark, lake, manifest, T0 + H)
    assert set(manifest.values()) == {T0 + timedelta(seconds=10)}
    quiet = run_all(spark, lake, manifest, T0 + quiet_after)
    assert bool(quiet.window.selection.straddling) == future_beside_old_events
    assert not quiet.window.data_after and set(manifest.values()) == {T0 + timedelta(seconds=10)}
    # Delayed by a stalled pipeline: its event is older than the lookback of a last_success moved past it.
    write_shredded_run(lake, "run=2026-03-01-12-00-00", page_view("d/home", "d", "u2", T0 + 2 * H))
    run_all(spark, lake, manifest, T0 + quiet_after + H)
    assert [row[0] for row in text_rows(spark, lake, SESSIONS)] == sorted(uid(s) for s in ("a", "d"))


def test_a_folder_spanning_the_window_end_and_the_future_is_read_for_events_between(spark, tmp_path):
    """Events between the window's end and now, in a folder that also holds one from the future: a gap in the
    data, which moves last_success to the upper limit, as the gap test above, not by the marker alone."""
    lake, manifest = Lake(str(tmp_path / "lake")), {}
    write_shredded_run(lake, "run=2026-03-01-09-00-00", page_view("a/home", "a", "u1", T0, pings=(10,)))
    run_all(spark, lake, manifest, T0 + H)
    later = page_view("b/home", "b", "u1", T0 + 35 * D) + page_view("f/home", "f", "u3", T0 + 400 * D)
    write_shredded_run(
        lake, "run=2026-03-01-09-30-00", page_view("c/home", "c", "u2", T0 + timedelta(seconds=5)) + later
    )
    quiet = run_all(spark, lake, manifest, T0 + 40 * D)
    assert [f.run for f in quiet.window.selection.straddling] == ["run=2026-03-01-09-30-00"]
    assert quiet.window.data_after and set(manifest.values()) == {quiet.limits.upper}


@pytest.fixture(scope="module")
def years(spark, tmp_path_factory):
    """The series of runs of the two tests below, and one full run over the same folders: the first folder holds
    an event with a year 0 collector_tstamp beside page views with event times in the years 0 and 1; the second,
    more, in the years 0 and 9999. Returns both lakes, and each run's WebRun and manifest, with the latest
    collector_tstamp of its folder's events."""
    folder = tmp_path_factory.mktemp("years")
    lake, full = Lake(str(folder / "incremental")), Lake(str(folder / "full"))
    derived = lambda text: {"extra": {"derived_tstamp": text}}  # noqa: E731
    batches = {
        "run=2026-03-01-09-00-00": (
            [
                *page_view("a/home", "a", "u1", T0, **derived("0001-01-01 00:00:00.000")),
                *page_view("b/home", "b", "u2", T0 + m(5), **derived("0000-06-15 12:00:00.000")),
            ],
            T0 + H,
        ),
        "run=2026-03-01-10-00-00": (
            [
                *page_view("a/next", "a", "u1", T0 + H, pings=(10, 20)),
                *page_view("c/home", "c", "u2", T0 + H, **derived("9999-12-31 23:59:59.999")),
                Event("b/more", T0 + H + m(1), "b", "u2", event="struct", **derived("0000-01-01 00:00:00.000")),
            ],
            T0 + 2 * H,
        ),
    }
    year_0 = Event("year-0", T0, "old", "u9", extra={"collector_tstamp": "0000-06-15 00:00:00.000"})
    manifest: dict = {}
    runs = []
    for run, (events, now) in batches.items():
        written = [*events, year_0] if run == RUN_WITH_YEAR_0 else events
        write_shredded_run(lake, run, written)
        write_shredded_run(full, run, written)
        runs.append((run_all(spark, lake, manifest, now), dict(manifest), max(e.collector for e in events)))
    run_all(spark, full, {}, T0 + 2 * H)
    return lake, full, runs


def test_a_year_0_collector_tstamp_in_a_folder_does_not_stop_the_runs(spark, years):
    """A four-digit year 0 is valid (FORMATS.md §1), and the shredder writes it into the folder's completion
    marker (`0000-06-15T00:00:00.000Z`), which Python's datetime cannot read: every run failed on it."""
    lake, _, runs = years
    first, manifest, _ = runs[0]
    assert first.window.selection.runs == [RUN_WITH_YEAR_0]
    # year 0 is before start_date: the window holds the folder's two page views alone
    assert first.window.counts["events"] == 2 and set(manifest.values()) == {T0 + m(5)}
    assert uid("old") not in [row[0] for row in text_rows(spark, lake, SESSIONS)]


def test_event_times_in_the_years_0_1_and_9999_are_kept_and_change_nothing_else(spark, years):
    """derived_tstamp (the event time of page views and sessions) may be any valid timestamp: a tracker's
    true_tstamp, or a device clock. The upsert's floor, a lookback before the earliest day, fell before the
    year 1, and a day in year 0 was not a Python date: the run failed and so did every later one."""
    lake, full, runs = years
    for _, manifest, latest in runs:
        assert set(manifest.values()) == {latest}
    for model in MODELS:
        assert text_rows(spark, lake, model) == text_rows(spark, full, model), model
    days = lambda model: sorted(table_partitions(LocalFileSystem(), lake, TABLES[model]))  # noqa: E731
    assert days(PAGE_VIEWS) == ["0000-06-15", "0001-01-01", "2026-03-01", "9999-12-31"]
    assert days(SESSIONS) == ["0000-01-01", "0001-01-01", "9999-12-31"]  # b/more moved b to the year 0
    assert days(USERS) == ["0000-01-01", "0001-01-01"]  # u2's first session is b
    assert days(SESSIONS_LIFECYCLE) == ["2026-03-01"]  # by collector_tstamp
    sessions = {row[0]: row for row in text_rows(spark, lake, SESSIONS)}
    assert sessions[uid("b")][2] == "0000-01-01 00:00:00" and sessions[uid("b")][6] == "2"
