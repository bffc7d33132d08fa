"""WebRun: item 7, the same events split over many incremental runs give exactly the tables of one full run;
and existing sessions are matched within session_lookback_days. (Models built from real shred output are
checked against its events end to end, through `process`: cli/test_web_models.py.)

The events arrive in six batches, and the models run after batches land, through every state of the run
limits: the first run, standard runs, a model added later (users, backfilled from start_date while the others
write nothing), and a failure of sessions that leaves sessions and users behind until an out-of-sync run
catches them up. The batches hold the awkward cases: a session split across runs, events that arrive in a
later batch than events collected after them (within the lookback window), one that moves a session's start
earlier, a cross-batch duplicate, an event sent days after it was created, events without a session, a bot
session that outlives max_session_days (in the run where sessions fails) and keeps sending after it is
quarantined, and pings of a page view in another session.
"""

from datetime import date, timedelta

import pytest
from pyspark.sql import functions as F

from snowplow_assets.lake import Lake
from snowplow_assets.storage import LocalFileSystem
from snowplow_assets.web.checks import (
    PAGE_VIEW_COUNTS_AGREE,
    QUARANTINED_SESSIONS_FROZEN,
    quarantined_sessions_gain_no_events,
)
from snowplow_assets.web.pipeline import TABLES, WebRun
from snowplow_assets.web.run_limits import RunState
from snowplow_assets.web.upsert import read_table
from snowplow_assets.web.variables import (
    MODELS,
    PAGE_VIEWS,
    QUARANTINED_SESSIONS,
    SESSIONS,
    SESSIONS_LIFECYCLE,
    USERS,
    WebVariables,
)
from snowplow_assets_tests.web.killed import Killed, KilledAfterMovingAside
from snowplow_assets_tests.web.shredded import Event, ts, uid, write_shredded_run

VARIABLES = WebVariables(start_date=date(2026, 3, 1))
T0 = ts("2026-03-01 08:00:00")
H, D = timedelta(hours=1), timedelta(days=1)
CAP = T0 + timedelta(minutes=10) + 3 * D  # the bot session's start + max_session_days


def page_view(name: str, session: str, user: str, at, pings=(), **kwargs) -> list[Event]:
    """A page view and its pings, `pings` seconds after it."""
    events = [Event(name, at, session, user, page_view=name, **kwargs)]
    events += [
        Event(f"{name}/ping{i}", at + timedelta(seconds=s), session, user, event="page_ping", page_view=name)
        for i, s in enumerate(pings)
    ]
    return events


def m(minutes: float) -> timedelta:
    return timedelta(minutes=minutes)


BATCHES = {
    "run=2026-03-01-09-00-00": [
        *page_view("s1/home", "s1", "u1", T0, pings=(12, 25)),
        *page_view("s1/shoes", "s1", "u1", T0 + m(5), pings=(11, 22, 41)),
        # created four days before it was sent: dropped as late (days_late_allowed = 3)
        Event(
            "s1/stale",
            T0 + m(7),
            "s1",
            "u1",
            event="struct",
            created=T0 + m(7) - 4 * D,
            sent=T0 + m(7) - timedelta(seconds=1),
        ),
        Event("anonymous", T0 + m(8), None, None),
        Event("before-start-date", ts("2026-02-28 23:00:00"), "s0", "u9"),
        *page_view("s3/home", "s3", "u2", T0 + m(50), pings=(10, 20)),
        *page_view("bot/1", "bot", "u4", T0 + m(10)),
    ],
    "run=2026-03-01-11-05-00": [
        # collected before the previous batch was cut, delivered with this one
        Event("s3/home/late-ping", T0 + m(50.5), "s3", "u2", event="page_ping", page_view="s3/home"),
        *page_view("s3/cart", "s3", "u2", T0 + m(70), pings=(10, 20, 30)),
        *page_view("s4/home", "s4", "u3", T0 + m(100), pings=(10,)),
        *page_view("s5/sale", "s5", "u3", T0 + m(180), pings=(10, 20)),
        # the same page view again, enriched later: a cross-batch duplicate
        Event("s1/shoes", T0 + m(5), "s1", "u1", page_view="s1/shoes", etl=T0 + 2 * H),
    ],
    "run=2026-03-02-08-00-00": [
        Event("s4/late", T0 + m(110), "s4", "u3", page_view="s4/more"),  # late, extends s4
        Event("s5/early", T0 + m(178), "s5", "u3", event="struct"),  # late, moves s5's start earlier
        *page_view("bot/2", "bot", "u4", T0 + 12 * H),
        *page_view("s2/home", "s2", "u1", T0 + 20 * H, pings=(10, 20, 30, 40)),
    ],
    "run=2026-03-05-08-00-00": [
        Event("s2/before", T0 + 20 * H - m(2), "s2", "u1", event="struct"),  # late by 2 minutes, within lookback
        *page_view("bot/3", "bot", "u4", T0 + D + 12 * H),
        *page_view("s7/home", "s7", "u5", T0 + D + 20 * H, pings=(10,)),
        Event("s7/untracked-page", T0 + D + 21 * H, "s7", "u5"),  # a page_view without a web_page context
        *page_view("bot/4", "bot", "u4", T0 + 2 * D + 12 * H),
        *page_view("bot/5", "bot", "u4", CAP + H),  # past the cap: the session is quarantined
    ],
    "run=2026-03-06-08-00-00": [
        *page_view("bot/6", "bot", "u4", T0 + 4 * D),  # quarantined: never folded in
        *page_view("s8/home", "s8", "u5", T0 + 4 * D, pings=(10, 20)),
        # a ping without device times (a webhook's): bucketed by its derived_tstamp
        Event(
            "s8/home/server-ping",
            T0 + 4 * D + timedelta(seconds=30),
            "s8",
            "u5",
            event="page_ping",
            page_view="s8/home",
            extra={"dvce_created_tstamp": "", "dvce_sent_tstamp": ""},
        ),
    ],
    "run=2026-03-07-08-00-00": [
        *page_view("bot/7", "bot", "u4", T0 + 5 * D + 12 * H),
        *page_view("s9/home", "s9", "u1", T0 + 5 * D + 20 * H, pings=(10,)),
        # a tab left open: pings of s1's page view, in a new session
        Event("s9/old-tab", T0 + 5 * D + 20 * H + m(1), "s9", "u1", event="page_ping", page_view="s1/home"),
    ],
}
RUNS = list(BATCHES)

# (batches landed before the run, now, models built): users starts in the third run; in the fourth, which
# quarantines the bot session, sessions "fails" and so users is not built either.
SCHEDULE = [
    (RUNS[:1], T0 + H, MODELS[:4]),
    (RUNS[1:3], T0 + D, MODELS[:4]),
    ([], T0 + D, MODELS),
    (RUNS[3:4], T0 + 4 * D, MODELS[:3]),
    ([], T0 + 4 * D, MODELS),
    (RUNS[4:], T0 + 6 * D, MODELS),
]


def table_rows(spark, lake: Lake, model: str) -> list[tuple]:
    return sorted(tuple(row) for row in read_table(spark, LocalFileSystem(), lake, TABLES[model]).collect())


@pytest.fixture(scope="module")
def incremental(spark, tmp_path_factory):
    lake = Lake(str(tmp_path_factory.mktemp("incremental") / "lake"))
    fs = LocalFileSystem()
    manifest: dict = {}
    history = []
    for landed, now, models in SCHEDULE:
        for run in landed:
            write_shredded_run(lake, run, BATCHES[run], raw_lines=["not\tan\tevent"] if run == RUNS[0] else [])
        enabled = MODELS if USERS in manifest or models == MODELS else MODELS[:4]
        with WebRun(spark, fs, lake, VARIABLES, enabled, manifest, now) as web:
            results = {model: web.build(model) for model in models}
            if now == SCHEDULE[-1][1]:
                history.append(("checks", [c for model in MODELS for c in web.check(model)]))
        manifest.update({model: r.last_success for model, r in results.items()})
        history.append((web.limits, results))
    return lake, history


@pytest.fixture(scope="module")
def full(spark, tmp_path_factory):
    lake = Lake(str(tmp_path_factory.mktemp("full") / "lake"))
    for run, events in BATCHES.items():
        write_shredded_run(lake, run, events, raw_lines=["not\tan\tevent"] if run == RUNS[0] else [])
    with WebRun(spark, LocalFileSystem(), lake, VARIABLES, MODELS, {}, T0 + 6 * D) as web:
        results = {model: web.build(model) for model in MODELS}
    return lake, web.limits, results


def test_the_runs_go_through_every_state(incremental):
    _, history = incremental
    states = [limits.state for limits, _ in history if limits != "checks"]
    assert states == [
        RunState.FIRST_RUN, RunState.STANDARD, RunState.NEW_MODEL, RunState.STANDARD, RunState.OUT_OF_SYNC,
        RunState.STANDARD,
    ]  # fmt: skip
    new_model_limits, new_model = history[2]
    # users is backfilled from start_date while the others, already there, write nothing
    assert new_model_limits.lower == ts("2026-03-01 00:00:00")
    assert {m: r.ran for m, r in new_model.items()} == {**dict.fromkeys(MODELS[:4], False), USERS: True}
    assert new_model[USERS].rows == 4 and all(new_model[m].rows == 0 for m in MODELS[:4])
    # after sessions "failed", the out-of-sync run rebuilds only sessions and users, up to the others
    catch_up_limits, catch_up = history[4]
    assert {m for m, r in catch_up.items() if r.ran} == {SESSIONS, USERS}
    assert catch_up_limits.upper == history[3][1][PAGE_VIEWS].last_success
    assert len({r.last_success for r in catch_up.values()}) == 1


def test_incremental_runs_equal_one_full_run(spark, incremental, full):
    incremental_lake, _ = incremental
    full_lake, limits, results = full
    assert limits.state is RunState.FIRST_RUN and all(r.ran for r in results.values())
    for model in MODELS:
        expected = table_rows(spark, full_lake, model)
        assert expected, model
        assert table_rows(spark, incremental_lake, model) == expected, model


def test_the_last_successes_agree_and_checks_pass(incremental, full):
    _, history = incremental
    _, _, results = full
    final = history[-1][1]
    assert {r.last_success for r in final.values()} == {results[USERS].last_success}
    assert results[USERS].last_success == T0 + 5 * D + 20 * H + m(1)
    [(_, outcomes)] = [entry for entry in history if entry[0] == "checks"]
    assert all(o.passed for o in outcomes), [o for o in outcomes if not o.passed]


def test_models_at_the_upper_limit_keep_their_last_success(incremental):
    _, history = incremental
    _, new_model_run = history[2]
    _, before = history[1]
    for model in MODELS[:4]:
        assert new_model_run[model].last_success == before[model].last_success


def test_a_window_without_events_leaves_last_success_alone_unless_data_lies_beyond_it(spark, tmp_path):
    lake, fs = Lake(str(tmp_path / "lake")), LocalFileSystem()
    variables = WebVariables(start_date=date(2026, 3, 1), backfill_limit_days=1)
    enabled, manifest = (MODELS[0],), {MODELS[0]: T0 + 2 * D}
    # Cut before the window [03-03 02:00, 03-04 08:00]: never opened.
    write_shredded_run(lake, "run=2026-03-02-09-00-00", [Event("early", T0 + D, "s1", "u1")])
    with WebRun(spark, fs, lake, variables, enabled, manifest, T0 + 10 * D) as web:
        quiet = web.build(MODELS[0])
    assert (quiet.ran, quiet.rows, quiet.last_success) == (True, 0, T0 + 2 * D)
    assert quiet.note == "no new events in the window: nothing written, last_success unchanged"

    # A gap in the data: a complete folder holds events after the window, so the window moves past it.
    write_shredded_run(lake, "run=2026-03-08-09-00-00", [Event("later", T0 + 7 * D, "s2", "u1")])
    with WebRun(spark, fs, lake, variables, enabled, manifest, T0 + 10 * D) as web:
        gap = web.build(MODELS[0])
    assert (gap.rows, gap.last_success) == (0, T0 + 3 * D) and "later run folders hold events" in gap.note


def test_what_the_first_window_dropped_is_counted(incremental):
    _, history = incremental
    counts = history[0][1][MODELS[0]].counts
    # 14 lines in the window: 13 events collected after start_date and one line without fields
    assert counts["events"] == 14
    assert (counts["malformed"], counts["duplicate"], counts["late"], counts["unidentified"]) == (1, 0, 1, 1)
    assert counts["valid"] == 11 == counts["events"] - 3
    assert counts["new_sessions"] == 3 and counts["sessions_touched"] == 3


def test_quarantined_bot_session_is_capped_and_frozen(spark, incremental):
    lake, history = incremental
    quarantined = table_rows(spark, lake, "quarantined_sessions")
    assert [(row[0], row[2], row[3]) for row in quarantined] == [
        (uid("bot"), T0.replace(tzinfo=None) + m(10), CAP.replace(tzinfo=None))
    ]
    sessions = {row[0]: row for row in table_rows(spark, lake, SESSIONS)}
    bot = sessions[uid("bot")]
    assert (bot[4], bot[6]) == (4, 4)  # page views, events: bot/1 to bot/4; bot/5 onwards are past the cap
    last_counts = history[-1][1][MODELS[0]].counts
    # bot/5, read again within the lookback window, bot/6 and bot/7
    assert last_counts["quarantined_events"] == 3 and last_counts["quarantined_sessions_seen"] == 1
    # the derived models built the bot session up to its cap while catching up, and skip it since
    [(_, outcomes)] = [entry for entry in history if entry[0] == "checks"]
    assert [o.metadata for o in outcomes if o.name == "quarantined_sessions_gain_no_events"] == [
        {"page_views_after_cap": 0, "sessions": 0}
    ]
    # The check reads the tables as written: a page view of the bot collected past its cap fails it.
    views = read_table(spark, LocalFileSystem(), lake, TABLES[PAGE_VIEWS])
    quarantine = read_table(spark, LocalFileSystem(), lake, TABLES["quarantined_sessions"])
    past_cap = (
        views.where(f"session_id = '{uid('bot')}'")
        .limit(1)
        .withColumn("collector_tstamp", F.lit(CAP.replace(tzinfo=None) + timedelta(seconds=1)))
    )
    late = quarantined_sessions_gain_no_events(quarantine, views.unionByName(past_cap))
    assert (late.passed, late.metadata) == (False, {"page_views_after_cap": 1, "sessions": 1})


def test_late_events_and_duplicates_land_where_they_belong(spark, incremental):
    lake, _ = incremental
    lifecycle = {row[0]: row for row in table_rows(spark, lake, "sessions_lifecycle")}
    assert lifecycle[uid("s5")][2] == (T0 + m(178)).replace(tzinfo=None)  # start moved to the late event
    assert lifecycle[uid("s5")][4] == uid("s5/early")
    assert lifecycle[uid("s2")][2] == (T0 + 20 * H - m(2)).replace(tzinfo=None)
    sessions = {row[0]: row for row in table_rows(spark, lake, SESSIONS)}
    assert sessions[uid("s1")][6] == 7  # 2 page views, 5 pings; the stale event and the duplicate are not there
    assert sessions[uid("s4")][4:7] == (2, 5, 3)  # s4/home with a ping, and the late page view
    assert uid("s0") not in sessions and uid("u9") not in {row[1] for row in sessions.values()}
    views = {row[0]: row for row in table_rows(spark, lake, PAGE_VIEWS)}
    assert views[uid("s3/home")][10] == 3  # two pings in the first batch, one late one
    assert views[uid("s1/home")][10] == 2  # the old tab's ping in s9 does not count here
    assert views[uid("s8/home")][10:12] == (3, 10 * (3 - 1) + 5)  # three buckets: the server's ping counts
    assert uid("s7/untracked-page") not in {row[1] for row in views.values()}
    users = {row[0]: row for row in table_rows(spark, lake, USERS)}
    assert users[uid("u1")][3:6] == (uid("s1"), uid("s9"), 3)


def test_sessions_are_matched_within_session_lookback_days(spark, tmp_path):
    """A session seen again within session_lookback_days of the window is merged; one seen again later starts
    a new lifecycle row. When the old row is also older than the upsert's days, both stay, and the unique_keys
    check reports the key (README: known limits)."""
    lake, fs = Lake(str(tmp_path / "lake")), LocalFileSystem()
    variables = WebVariables(
        start_date=date(2026, 3, 1), max_session_days=3, session_lookback_days=3, upsert_lookback_days=0
    )
    enabled = (MODELS[0],)
    write_shredded_run(lake, "run=2026-03-03-09-00-00", [
        Event("old/1", T0, "old", "u1"), Event("recent/1", T0 + 2 * D, "recent", "u2"),
    ])  # fmt: skip
    with WebRun(spark, fs, lake, variables, enabled, {}, T0 + 2 * D + H) as web:
        web.build(MODELS[0])
    # As if later runs had found nothing for these sessions: the window starts on 03-05, and the lifecycle
    # is searched from 03-02 on, which holds recent's row (03-03) and not old's (03-01).
    write_shredded_run(lake, "run=2026-03-05-09-00-00", [
        Event("old/2", T0 + 4 * D, "old", "u1"), Event("recent/2", T0 + 4 * D, "recent", "u2"),
    ])  # fmt: skip
    with WebRun(spark, fs, lake, variables, enabled, {MODELS[0]: T0 + 4 * D - H}, T0 + 4 * D + H) as web:
        result = web.build(MODELS[0])
        [unique] = web.check(MODELS[0])
    assert (result.counts["new_sessions"], result.counts["sessions_touched"]) == (1, 2)
    rows = sorted(
        (r.session_id, r.start_tstamp, r.end_tstamp) for r in read_table(spark, fs, lake, TABLES[MODELS[0]]).collect()
    )
    naive = lambda moment: moment.replace(tzinfo=None)  # noqa: E731
    assert rows == sorted([
        (uid("recent"), naive(T0 + 2 * D), naive(T0 + 4 * D)),
        (uid("old"), naive(T0), naive(T0)),
        (uid("old"), naive(T0 + 4 * D), naive(T0 + 4 * D)),
    ])  # fmt: skip
    assert not unique.passed and unique.metadata["repeated_keys"] == 1


def runs_against_one_full_run(spark, tmp_path, variables, runs) -> dict[str, tuple[list, list]]:
    """Each (folders, now) of `runs` lands its folders and runs every model; then one full run over all the
    folders on a lake of its own. Per model: (rows after the runs, rows of the full run)."""
    fs = LocalFileSystem()
    incremental_lake, full_lake = Lake(str(tmp_path / "incremental")), Lake(str(tmp_path / "full"))
    manifest: dict = {}
    for folders, now in runs:
        for run, events in folders.items():
            write_shredded_run(incremental_lake, run, events)
            write_shredded_run(full_lake, run, events)
        with WebRun(spark, fs, incremental_lake, variables, MODELS, manifest, now) as web:
            manifest.update({model: web.build(model).last_success for model in MODELS})
            failed = [c for model in MODELS for c in web.check(model) if not c.passed]
        assert not failed, failed
    with WebRun(spark, fs, full_lake, variables, MODELS, {}, runs[-1][1]) as web:
        for model in MODELS:
            web.build(model)
    return {
        model: (table_rows(spark, incremental_lake, model), table_rows(spark, full_lake, model)) for model in MODELS
    }


# A user's sessions more than session_lookback_days apart, and a users upsert without a lookback of its own.
RETURNING_VARIABLES = WebVariables(start_date=date(2026, 3, 1), session_lookback_days=3, upsert_lookback_days=0)


@pytest.fixture(scope="module")
def three_cases(spark, tmp_path_factory) -> dict[str, tuple[list, list]]:
    """runs_against_one_full_run of three cases, in sessions and users of their own, so that one series of
    runs serves the three tests below (each docstring says what its case proves).

    Session q: the models pass its cap (x), then one run brings a late event of q up to the cap, within the
    lookback, and one past it. Session s: first seen as u1's in the second run, it gets a late event of u2's,
    earlier than its first event, in the third; s/home is before x, so x alone sets the third run's window.
    User u5: session a in the first run, then b more than session_lookback_days later, once `other` has moved
    the window on. The variables are the ones u5's case needs; q's and s's do not depend on them: the windows
    that touch q or s open on 03-04, so they search the lifecycle from 03-01 on, the day q's row starts (s's
    starts on 03-04); and the rows replaced in their runs start on the same days as the rows replacing them,
    so an upsert without a lookback reaches them."""
    at = ts("2026-03-01 10:00:00")
    s_home = at + 3.05 * D - m(30)
    return runs_against_one_full_run(spark, tmp_path_factory.mktemp("three_cases"), RETURNING_VARIABLES, [
        ({"run=2026-03-03-22-00-00": [
            *page_view("q/home", "q", "uq", at), Event("q/1", at + 2.9 * D, "q", "uq", event="struct"),
            *page_view("a/home", "a", "u5", at),
        ]}, at + 2.9 * D + m(10)),
        ({"run=2026-03-04-11-15-00": [
            Event("x", at + 3.05 * D, "x", "u9"), *page_view("s/home", "s", "u1", s_home),
        ]}, at + 3.05 * D + m(10)),
        ({"run=2026-03-04-12-30-00": [
            Event("q/late", at + 2.98 * D, "q", "uq", event="struct"),  # 1.7 hours behind the window's start
            Event("q/past-cap", at + 3.1 * D, "q", "uq", event="struct"),
            Event("s/earlier", s_home - m(1), "s", "u2", event="struct"),
        ]}, at + 3.1 * D + m(10)),
        ({"run=2026-03-05-10-05-00": [Event("other", at + 4 * D, "other", "u8")]}, at + 4 * D + m(10)),
        ({"run=2026-03-06-10-05-00": page_view("b/home", "b", "u5", at + 5 * D)}, at + 5 * D + m(10)),
    ])  # fmt: skip


def test_a_session_handed_to_another_user_leaves_the_old_user(three_cases):
    """A late event earlier than the session's first event gives the session its user: the user the session
    had before is rebuilt too, and loses its row when it has no session left."""
    after_runs, full_run = three_cases[USERS]
    assert after_runs == full_run
    assert sorted(row[0] for row in after_runs) == sorted(uid(u) for u in ("u2", "u5", "u8", "uq", "u9"))  # no u1
    assert [(row[0], row[3], row[5]) for row in after_runs if row[0] == uid("u2")] == [(uid("u2"), uid("s"), 1)]


def test_a_user_returning_after_session_lookback_days_keeps_their_first_session(three_cases):
    """A user's row covers every session of theirs, however long ago (dbt-snowplow-web reads a user's sessions
    from the first on, and upserts users without a lookback), so it neither loses the old ones nor leaves the
    old row behind."""
    after_runs, full_run = three_cases[USERS]
    assert after_runs == full_run
    users = {row[0]: row for row in after_runs}
    assert users[uid("u5")][3:6] == (uid("a"), uid("b"), 2)


def test_the_run_that_quarantines_a_session_builds_it_with_its_late_events_up_to_the_cap(three_cases):
    """The models had passed the session's cap before a late event up to the cap arrived, within the lookback,
    in the same run as the event past the cap that quarantines the session: the session is built from every
    event up to its cap, as one run over the same events builds it."""
    for model in (SESSIONS_LIFECYCLE, QUARANTINED_SESSIONS, SESSIONS, USERS):
        after_runs, full_run = three_cases[model]
        assert after_runs == full_run, model
    sessions = {row[0]: row for row in three_cases[SESSIONS][0]}
    assert sessions[uid("q")][6] == 3  # q/home, q/1 and q/late; not q/past-cap
    assert [row[0] for row in three_cases[QUARANTINED_SESSIONS][0]] == [uid("q")]


def test_a_page_view_id_seen_in_several_sessions_is_one_page_view_of_the_earliest(spark, tmp_path):
    """A page view id belongs to the session of its earliest page_view event, within a run and across runs
    (page_views.py): r1 and r2 share P in one run; a late event of `late`, collected hours after h1 is built but
    timed (derived_tstamp) before h1's page view, takes Q from h1, which is not rebuilt and counts one page
    view less, as its user does; `again`, later, sees P and Q once more and gets neither. The runs pass every
    check, unique_keys and page_view_counts_agree among them, and end as one run over the same events."""
    at = ts("2026-03-01 10:00:00")
    shared = lambda name, session, user, moment, view, **kw: Event(name, moment, session, user, page_view=view, **kw)  # noqa: E731
    tables = runs_against_one_full_run(spark, tmp_path, VARIABLES, [
        ({"run=2026-03-01-11-00-00": [
            shared("r1/p", "r1", "ur1", at, "P"),
            *page_view("r2/own", "r2", "ur2", at + m(12)),
            shared("r2/p", "r2", "ur2", at + m(10), "P"),
            Event("r2/p/ping", at + m(10.5), "r2", "ur2", event="page_ping", page_view="P"),
            shared("h1/q", "h1", "uh", at + m(30), "Q"),
            *page_view("h1/other", "h1", "uh", at + m(31)),
        ]}, at + H),
        ({"run=2026-03-02-06-30-00": [Event("other", at + 20 * H, "other", "uo")]}, at + 21 * H),
        ({"run=2026-03-02-07-30-00": [
            shared("late/q", "late", "ul", at + 21 * H, "Q", derived=at + m(29)),
        ]}, at + 22 * H),
        ({"run=2026-03-02-10-30-00": [
            shared("again/p", "again", "ua", at + D, "P"),
            shared("again/q", "again", "ua", at + D + m(1), "Q"),
            *page_view("again/own", "again", "ua", at + D + m(2)),
        ]}, at + D + H),
    ])  # fmt: skip
    for model in (PAGE_VIEWS, SESSIONS, USERS):
        after_runs, full_run = tables[model]
        assert after_runs == full_run, model
    views = {row[0]: row for row in tables[PAGE_VIEWS][0]}
    assert len(views) == len(tables[PAGE_VIEWS][0])
    assert (views[uid("P")][1:3], views[uid("P")][10]) == ((uid("r1/p"), uid("r1")), 0)  # r2's ping is not P's
    assert views[uid("Q")][1:3] == (uid("late/q"), uid("late"))
    assert views[uid("h1/other")][4] == 1  # first in h1 now that Q is gone
    sessions = {row[0]: row[4] for row in tables[SESSIONS][0]}
    assert (sessions[uid("r1")], sessions[uid("r2")], sessions[uid("h1")], sessions[uid("again")]) == (1, 1, 1, 1)
    users = {row[0]: row[6] for row in tables[USERS][0]}
    assert (users[uid("uh")], users[uid("ul")], users[uid("ua")]) == (1, 1, 1)


def test_a_page_view_the_page_views_model_has_not_seen_does_not_stop_sessions_catching_up(spark, tmp_path):
    """Sessions count the page views the page-views table holds (sessions.py). A run builds page views without
    sessions (a failure, or a launchpad subset); then s/b lands, collected between s's page views, within the
    lookback. The catch-up run rebuilds s from its events, which hold s/b, while page views, ahead, is not built:
    counted from the events, s had four page views against three rows, the blocking check failed, users never
    caught up, and the window never moved again. Now every check passes, the next standard run adds s/b to
    both, and the tables are one full run's."""
    fs = LocalFileSystem()
    lake, full_lake = Lake(str(tmp_path / "incremental")), Lake(str(tmp_path / "full"))
    batches = {
        "run=2026-03-01-09-00-00": [*page_view("s/a", "s", "u1", T0), *page_view("s/c", "s", "u1", T0 + m(30))],
        "run=2026-03-01-12-00-00": page_view("s/d", "s", "u1", T0 + 3 * H),
        "run=2026-03-01-13-00-00": page_view("s/b", "s", "u1", T0 + 2 * H),  # late
    }
    schedule = [(list(batches)[:1], T0 + H, MODELS), (list(batches)[1:2], T0 + 4 * H, MODELS[:3]),
                (list(batches)[2:], T0 + 5 * H, MODELS), ([], T0 + 6 * H, MODELS)]  # fmt: skip
    manifest: dict = {}
    states, page_view_counts = [], []
    for landed, now, models in schedule:
        for run in landed:
            write_shredded_run(lake, run, batches[run])
        with WebRun(spark, fs, lake, VARIABLES, MODELS, manifest, now) as web:
            states.append(web.limits.state)
            manifest.update({model: web.build(model).last_success for model in models})
            failed = [c for model in models for c in web.check(model) if not c.passed]
        assert not failed, failed
        page_view_counts.append({row[0]: row[4] for row in table_rows(spark, lake, SESSIONS)}[uid("s")])
    assert states == [RunState.FIRST_RUN, RunState.STANDARD, RunState.OUT_OF_SYNC, RunState.STANDARD]
    assert page_view_counts == [2, 2, 3, 4]  # s/b counts once the page-views model has it
    for run, events in batches.items():
        write_shredded_run(full_lake, run, events)
    with WebRun(spark, fs, full_lake, VARIABLES, MODELS, {}, schedule[-1][1]) as web:
        for model in MODELS:
            web.build(model)
    for model in MODELS:
        assert table_rows(spark, lake, model) == table_rows(spark, full_lake, model), model


def test_a_run_killed_in_a_day_swap_loses_no_row_and_the_next_run_catches_up(spark, tmp_path):
    """Killed once sessions moved the old day aside: page views have their new last_success, sessions and users
    keep theirs. The next run reads the whole old day back, with s1, whose events are before its window, catches
    sessions and users up and removes the killed run's staging; the tables are one full run's."""
    day = ts("2026-03-01 00:00:00")
    batches = {
        "run=2026-03-01-00-45-00": (page_view("s1/home", "s1", "u1", day + m(30)), day + H),
        "run=2026-03-01-12-15-00": (page_view("s2/home", "s2", "u2", day + 12 * H), day + 12 * H + m(30)),
        "run=2026-03-01-20-15-00": (page_view("s3/home", "s3", "u3", day + 20 * H), day + 20 * H + m(30)),
    }
    fs = LocalFileSystem()
    lake, full_lake = Lake(str(tmp_path / "incremental")), Lake(str(tmp_path / "full"))
    manifest: dict = {}
    for run, (events, now) in batches.items():
        write_shredded_run(full_lake, run, events)
        write_shredded_run(lake, run, events)
        if run != list(batches)[-1]:
            with WebRun(spark, fs, lake, VARIABLES, MODELS, manifest, now) as web:
                manifest.update({model: web.build(model).last_success for model in MODELS})
    killed = WebRun(spark, KilledAfterMovingAside(lake.web_model("sessions")), lake, VARIABLES, MODELS, manifest, now)
    with pytest.raises(Killed):
        for model in MODELS:
            manifest[model] = killed.build(model).last_success
    assert manifest == {**dict.fromkeys(MODELS[:3], day + 20 * H), **dict.fromkeys(MODELS[3:], day + 12 * H)}
    assert killed.limits.lower > day + m(30)  # s1 is not rebuilt
    assert fs.exists(killed.staging)  # a killed run closes nothing

    with WebRun(spark, fs, lake, VARIABLES, MODELS, manifest, now) as web:
        assert web.limits.state is RunState.OUT_OF_SYNC
        assert {model: web.build(model).ran for model in MODELS} == {**dict.fromkeys(MODELS[:3], False),
                                                                     SESSIONS: True, USERS: True}  # fmt: skip
        outcomes = [c for model in MODELS for c in web.check(model)]
        # The checks a run selects, and only those, are evaluated (a deselected one stops nothing).
        only = web.check(SESSIONS, {QUARANTINED_SESSIONS_FROZEN})
        assert [(c.name, c.passed) for c in only] == [(QUARANTINED_SESSIONS_FROZEN, True)]
        with pytest.raises(KeyError, match="page_views has no checks \\['page_view_counts_agree'\\]"):
            web.check(PAGE_VIEWS, {PAGE_VIEW_COUNTS_AGREE})
    with WebRun(spark, fs, full_lake, VARIABLES, MODELS, {}, now) as web:
        for model in MODELS:
            web.build(model)
    assert sorted(row[0] for row in table_rows(spark, lake, SESSIONS)) == sorted(uid(s) for s in ("s1", "s2", "s3"))
    for model in MODELS:
        assert table_rows(spark, lake, model) == table_rows(spark, full_lake, model), model
    assert all(c.passed for c in outcomes), [c for c in outcomes if not c.passed]
    assert [e.name for e in fs.list_dir(lake.web_model("sessions"))] == ["start_date=2026-03-01"]
    assert not fs.exists(lake.uri("web", ".staging"))
