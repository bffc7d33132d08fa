"""The model logic on small hand-made frames: lifecycle merge and cap, page views, sessions and users."""

from datetime import datetime, timedelta

from snowplow_assets.web.page_views import UNINDEXED, indexed, owners, session_page_views
from snowplow_assets.web.sessions import recounted, sessions
from snowplow_assets.web.sessions_lifecycle import merge_lifecycle, touched_sessions
from snowplow_assets.web.users import users

T = datetime(2026, 3, 1, 10, 0, 0)
LIFECYCLE = (
    "session_id STRING, domain_userid STRING, start_tstamp TIMESTAMP, end_tstamp TIMESTAMP, first_event_id STRING"
)
EXISTING = f"{LIFECYCLE}, is_quarantined BOOLEAN, start_date STRING"
EVENTS = (
    "event_id STRING, event STRING, collector_tstamp TIMESTAMP, event_time TIMESTAMP, ping_time TIMESTAMP, "
    "session_id STRING, domain_userid STRING, page_view_id STRING, page_url STRING, page_title STRING"
)


def s(seconds: float) -> datetime:
    return T + timedelta(seconds=seconds)


def test_touched_sessions_take_the_first_event_by_time_then_event_id(spark):
    events = spark.createDataFrame(
        [
            ("e2", s(0), "u-second", "a"),
            ("e1", s(0), "u-first", "a"),  # same instant: the smaller event_id is the first event
            ("e3", s(60), "u-third", "a"),
            ("e4", s(5), "u-b", "b"),
        ],
        "event_id STRING, collector_tstamp TIMESTAMP, domain_userid STRING, domain_sessionid STRING",
    )
    rows = {r.session_id: r for r in touched_sessions(events).collect()}
    assert (rows["a"].domain_userid, rows["a"].first_event_id, rows["a"].start_tstamp) == ("u-first", "e1", s(0))
    assert (rows["a"].end_tstamp, rows["a"].events) == (s(60), 3)
    assert (rows["b"].start_tstamp, rows["b"].end_tstamp, rows["b"].events) == (s(5), s(5), 1)


def test_lifecycle_merges_with_least_and_greatest_and_caps_long_sessions(spark):
    day = 86400
    touched = spark.createDataFrame(
        [
            ("new", "u1", s(0), s(100), "n1"),
            ("later", "u2", s(500), s(900), "l9"),  # events after the known ones
            ("earlier", "u-late", s(-50), s(10), "e0"),  # a late event before the known start
            ("tie", "u-tie-b", s(0), s(0), "t2"),  # same start as the known first event, larger id
            ("long", "u5", s(3 * day + 1), s(3 * day + 1), "x9"),
            ("at-cap", "u6", s(3 * day), s(3 * day), "c9"),
        ],
        LIFECYCLE,
    )
    existing = spark.createDataFrame(
        [
            ("later", "u2", s(0), s(400), "l1", False, "2026-03-01"),
            ("earlier", "u3", s(0), s(300), "e5", False, "2026-03-01"),
            ("tie", "u-tie-a", s(0), s(20), "t1", False, "2026-03-01"),
            ("long", "u5", s(0), s(60), "x1", False, "2026-03-01"),
            ("at-cap", "u6", s(0), s(60), "c1", False, "2026-03-01"),
            ("untouched", "u7", s(0), s(1), "z1", False, "2026-03-01"),
        ],
        EXISTING,
    )
    rows = {r.session_id: r.asDict() for r in merge_lifecycle(touched, existing, max_session_days=3).collect()}
    assert set(rows) == {"new", "later", "earlier", "tie", "long", "at-cap"}

    def view(name):
        r = rows[name]
        return (
            r["domain_userid"],
            r["start_tstamp"],
            r["end_tstamp"],
            r["first_event_id"],
            r["is_quarantined"],
            r["is_new"],
        )

    assert view("new") == ("u1", s(0), s(100), "n1", False, True)
    assert view("later") == ("u2", s(0), s(900), "l1", False, False)
    assert view("earlier") == ("u-late", s(-50), s(300), "e0", False, False)
    assert view("tie") == ("u-tie-a", s(0), s(20), "t1", False, False)
    assert view("long") == ("u5", s(0), s(3 * day), "x1", True, False)
    assert view("at-cap") == ("u6", s(0), s(3 * day), "c1", False, False)


def event(event_id, event, at, session="a", page_view=None, created=None):
    """A session event at `at` seconds; pings bucket by `created` (device time), default the event time."""
    return (event_id, event, s(at), s(at), s(created if created is not None else at), session, f"user-{session}",
            page_view, f"https://shop.example.com/{page_view}", page_view)  # fmt: skip


SESSION_EVENTS = [
    event("v1", "page_view", 0, page_view="home"),
    event("p1", "page_ping", 6, page_view="home", created=5.0),  # bucket 0
    event("p2", "page_ping", 15, page_view="home", created=14.9),  # bucket 1
    event("p3", "page_ping", 16, page_view="home", created=15.0),  # bucket 1
    event("p4", "page_ping", 32, page_view="home", created=31.0),  # bucket 3
    event("v3", "page_view", 40, page_view="shoes"),
    event("v2", "page_view", 40, page_view="shoes"),  # same page view again, same time: v2 < v3 wins
    event("v4", "page_view", 50, page_view=None),  # no web_page context: not a page view
    event("x1", "struct", 55),
    event("w1", "page_view", 100, session="b", page_view="cart"),
    event("q1", "page_ping", 110, session="b", page_view="cart"),
    event("q2", "page_ping", 120, session="b", page_view="cart"),
    event("o1", "page_ping", 130, session="b", page_view="home"),  # a ping of a's page view in session b
    event("y1", "page_view", 200, session="c", page_view="p1"),
    event("y2", "page_view", 210, session="c", page_view="p2"),
]


def page_views(events, heartbeat, min_visit_length):
    """The page views of one run over every event: no other session holds an id."""
    candidates = session_page_views(events, heartbeat, min_visit_length)
    owned, _ = owners(candidates, candidates.limit(0))
    return indexed(owned)


def test_page_views_sessions_and_users(spark):
    events = spark.createDataFrame(SESSION_EVENTS, EVENTS)
    views = page_views(events, heartbeat=10, min_visit_length=5)
    view_rows = {r.page_view_id: r.asDict() for r in views.collect()}
    assert set(view_rows) == {"home", "shoes", "cart", "p1", "p2"}
    home = view_rows["home"]
    assert (home["event_id"], home["page_pings"], home["engaged_time_in_s"]) == ("v1", 4, 10 * (3 - 1) + 5)
    assert (home["start_tstamp"], home["end_tstamp"], home["page_view_in_session_index"]) == (s(0), s(32), 1)
    shoes = view_rows["shoes"]
    assert (shoes["event_id"], shoes["page_pings"], shoes["engaged_time_in_s"]) == ("v2", 0, 0)
    assert (shoes["start_tstamp"], shoes["end_tstamp"], shoes["page_view_in_session_index"]) == (s(40), s(40), 2)
    cart = view_rows["cart"]
    assert (cart["session_id"], cart["page_pings"], cart["engaged_time_in_s"]) == ("b", 2, 10 * (2 - 1) + 5)
    assert (cart["collector_tstamp"], cart["page_url"], cart["domain_userid"]) == (
        s(100),
        "https://shop.example.com/cart",
        "user-b",
    )

    session_rows = {r.session_id: r.asDict() for r in sessions(events, views, heartbeat=10).collect()}
    a, b, c = session_rows["a"], session_rows["b"], session_rows["c"]
    assert (a["page_views"], a["engaged_time_in_s"], a["total_events"], a["is_engaged"]) == (2, 25, 9, True)
    assert (a["start_tstamp"], a["end_tstamp"], a["domain_userid"]) == (s(0), s(55), "user-a")
    assert (b["page_views"], b["engaged_time_in_s"], b["total_events"], b["is_engaged"]) == (1, 15, 4, False)
    assert (c["page_views"], c["engaged_time_in_s"], c["is_engaged"]) == (2, 0, True)

    table = spark.createDataFrame(
        [
            ("s2", "u", s(100), s(200), 3, 30, 9, True, "d"),
            ("s1", "u", s(100), s(150), 1, 5, 2, False, "d"),  # same start: s1 < s2 comes first
            ("s3", "u", s(50), s(60), 0, 0, 1, False, "d"),
            ("s4", "v", s(0), s(10), 2, 0, 2, True, "d"),
        ],
        "session_id STRING, domain_userid STRING, start_tstamp TIMESTAMP, end_tstamp TIMESTAMP, page_views BIGINT, "
        "engaged_time_in_s BIGINT, total_events BIGINT, is_engaged BOOLEAN, start_date STRING",
    )
    user_rows = {r.domain_userid: tuple(r) for r in users(table).collect()}
    assert user_rows["u"] == ("u", s(50), s(200), "s3", "s2", 3, 4, 35)
    assert user_rows["v"] == ("v", s(0), s(10), "s4", "s4", 1, 2, 0)


def test_an_id_belongs_to_its_earliest_page_view_among_the_sessions_built_and_those_held(spark):
    """owners(): within the candidates, the earliest by (start, event_id) owns an id; a held row (a session not
    rebuilt) owns it when it is earlier, and loses it, to be removed, when a candidate is."""
    events = spark.createDataFrame(
        [
            event("a1", "page_view", 10, session="a", page_view="tie"),
            event("b1", "page_view", 10, session="b", page_view="tie"),  # same start: a1 < b1
            event("a2", "page_view", 20, session="a", page_view="held-earlier"),
            event("b2", "page_view", 30, session="b", page_view="run-earlier"),
            event("b3", "page_view", 40, session="b", page_view="own"),
        ],
        EVENTS,
    )
    candidates = session_page_views(events, heartbeat=10, min_visit_length=5)
    held_rows = [("held-earlier", "h1", 5, "h"), ("run-earlier", "h2", 35, "h"), ("other", "h3", 0, "h")]
    held = candidates.limit(0).unionByName(
        spark.createDataFrame(
            [
                (view, event_id, session, "user-h", "u", "t", s(at), s(at), s(at), 0, 0)
                for view, event_id, at, session in held_rows
            ],
            candidates.schema,
        )
    )
    owned, lost = owners(candidates, held)
    assert sorted((r.page_view_id, r.event_id) for r in owned.collect()) == [
        ("own", "b3"),
        ("run-earlier", "b2"),
        ("tie", "a1"),
    ]
    assert [(r.page_view_id, r.event_id) for r in lost.collect()] == [("run-earlier", "h2")]
    assert lost.columns == UNINDEXED


def test_sessions_whose_page_views_changed_are_counted_again_and_only_those(spark):
    """recounted(): a sessions-table row is counted again from the page-views rows of its session when its
    page_views or engaged time differ; start, end, user and total_events stay the row's."""
    table = spark.createDataFrame(
        [
            ("lost-one", "u", s(0), s(90), 2, 20, 7, True, "d"),  # one of its two page views went elsewhere
            ("same", "v", s(0), s(10), 1, 5, 3, False, "d"),
            ("lost-all", "w", s(0), s(10), 1, 5, 2, False, "d"),
        ],
        "session_id STRING, domain_userid STRING, start_tstamp TIMESTAMP, end_tstamp TIMESTAMP, page_views BIGINT, "
        "engaged_time_in_s BIGINT, total_events BIGINT, is_engaged BOOLEAN, start_date STRING",
    )
    views = spark.createDataFrame([("lost-one", 15), ("same", 5)], "session_id STRING, engaged_time_in_s BIGINT")
    rows = {r.session_id: tuple(r) for r in recounted(table, views, heartbeat=10).collect()}
    assert rows == {
        "lost-one": ("lost-one", "u", s(0), s(90), 1, 15, 7, False),
        "lost-all": ("lost-all", "w", s(0), s(10), 0, 0, 2, False),
    }
