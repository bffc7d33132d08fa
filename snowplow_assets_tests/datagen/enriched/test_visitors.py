"""Visitors, sessions and pages: the events look like a JavaScript tracker on a shop site."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

from snowplow_assets.datagen.enriched import GenerationStats
from snowplow_assets_tests.datagen.enriched.read_back import good_fields, value, web_page_id


def test_page_pings_share_the_web_page_id_of_their_page_view(run: tuple[Path, GenerationStats]) -> None:
    _, stats = run
    good = good_fields(stats)
    page_views = {web_page_id(f): f for f in good if value(f, "event") == "page_view"}
    pings = [f for f in good if value(f, "event") == "page_ping"]
    assert len(pings) > len(page_views) > 100
    for ping in pings:
        page_view = page_views[web_page_id(ping)]
        for name in ("domain_sessionid", "domain_userid", "page_url"):
            assert value(ping, name) == value(page_view, name)
        assert value(ping, "dvce_created_tstamp") > value(page_view, "dvce_created_tstamp")
        assert int(value(ping, "pp_yoffset_min")) <= int(value(ping, "pp_yoffset_max"))


def test_events_look_like_a_javascript_tracker_on_a_shop(run: tuple[Path, GenerationStats]) -> None:
    _, stats = run
    good = good_fields(stats)
    kinds = Counter((value(f, "event"), value(f, "event_name")) for f in good)
    assert {("page_view", "page_view"), ("page_ping", "page_ping"), ("struct", "event")} <= set(kinds)
    assert {("unstruct", "link_click"), ("unstruct", "checkout_step")} <= set(kinds)
    for fields in good:
        assert value(fields, "platform") == "web"
        assert value(fields, "v_tracker").startswith("js-3.")
        assert value(fields, "etl_tstamp") > value(fields, "collector_tstamp")
        derived = json.loads(value(fields, "derived_contexts"))["data"]
        assert derived[0]["schema"].endswith("/ua_parser_context/jsonschema/1-0-0")
        if value(fields, "event") == "unstruct":
            unstruct = json.loads(value(fields, "unstruct_event"))["data"]
            assert unstruct["schema"].split("/")[1] == value(fields, "event_name")
        if value(fields, "event") == "struct":
            assert value(fields, "se_category") and value(fields, "se_action")


def test_a_visitors_sessions_are_numbered_in_time_order(run: tuple[Path, GenerationStats]) -> None:
    _, stats = run
    sessions: dict[str, dict[int, str]] = {}
    for fields in good_fields(stats):
        starts = sessions.setdefault(value(fields, "domain_userid"), {})
        index = int(value(fields, "domain_sessionidx"))
        starts[index] = min(starts.get(index, "9"), value(fields, "derived_tstamp"))
    for starts in sessions.values():
        times = [starts[index] for index in sorted(starts)]
        assert times == sorted(times)
