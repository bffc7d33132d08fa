"""Enriched TSV lines and self-describing JSON texts, as the test builders use them too."""

from __future__ import annotations

import json

import pytest

from snowplow_assets.datagen.enriched import CONTEXTS_SCHEMA, WEB_PAGE_SCHEMA, contexts_json, make_line, unstruct_json
from snowplow_assets.events.enriched_schema import FIELD_COUNT, FIELD_INDEX


def test_make_line_places_values_by_field_name() -> None:
    line = make_line({"app_id": "shop", "event_id": "e1", "true_tstamp": "2026-03-01 10:00:00.000", "user_id": None})
    fields = line.split("\t")
    assert len(fields) == FIELD_COUNT
    assert fields[0] == "shop"
    assert fields[FIELD_INDEX["event_id"]] == "e1"
    assert fields[-1] == "2026-03-01 10:00:00.000"
    assert fields[FIELD_INDEX["user_id"]] == ""
    assert {i for i, value in enumerate(fields) if value} == {0, FIELD_INDEX["event_id"], FIELD_COUNT - 1}


def test_make_line_refuses_unknown_fields_and_tabs() -> None:
    with pytest.raises(KeyError, match="no_such_field"):
        make_line({"no_such_field": "x"})
    with pytest.raises(ValueError, match="page_title"):
        make_line({"page_title": "a\tb"})


def test_json_helpers_write_compact_self_describing_json() -> None:
    contexts = contexts_json([(WEB_PAGE_SCHEMA, {"id": "p1"}), ("iglu:com.acme/x/jsonschema/1-0-0", {"a": 1})])
    assert " " not in contexts
    assert json.loads(contexts) == {
        "schema": CONTEXTS_SCHEMA,
        "data": [
            {"schema": WEB_PAGE_SCHEMA, "data": {"id": "p1"}},
            {"schema": "iglu:com.acme/x/jsonschema/1-0-0", "data": {"a": 1}},
        ],
    }
    unstruct = unstruct_json("iglu:com.acme/checkout_step/jsonschema/1-0-0", {"step": 2, "basketValue": 19.5})
    assert unstruct == (
        '{"schema":"iglu:com.snowplowanalytics.snowplow/unstruct_event/jsonschema/1-0-0",'
        '"data":{"schema":"iglu:com.acme/checkout_step/jsonschema/1-0-0","data":{"step":2,"basketValue":19.5}}}'
    )
