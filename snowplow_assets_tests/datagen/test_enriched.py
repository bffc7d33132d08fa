"""The synthetic enriched-event generator: layout, exact defect counts, determinism and realism."""

from __future__ import annotations

import gzip
import json
import re
from collections import Counter
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

import pytest

from snowplow_assets.datagen.enriched import (
    BAD_LINE_KINDS,
    CONTEXTS_SCHEMA,
    SUCCESS_MARKER,
    UNSTRUCT_EVENT_SCHEMA,
    WEB_PAGE_SCHEMA,
    GenerationOptions,
    GenerationStats,
    contexts_json,
    generate_run_folder,
    make_line,
    run_folder_name,
    unstruct_json,
)
from snowplow_assets.events.enriched_schema import ENRICHED_FIELDS, FIELD_COUNT, FIELD_INDEX, FieldType

# 900 events: 18 natural and 9 synthetic duplicates, and 9 bad lines, one of each kind
OPTIONS = GenerationOptions(events=900, files=3, seed=11)

_UUID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$")
_TIMESTAMP = re.compile(r"^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}\.\d{3}$")
_INT = re.compile(r"^-?\d{1,10}$")
_DOUBLE = re.compile(r"^-?\d+(\.\d+)?$")
_IGLU_URI = re.compile(r"^iglu:[a-zA-Z0-9\-_.]+/[a-zA-Z0-9\-_]+/[a-zA-Z0-9\-_]+/[1-9]\d*-\d+-\d+$")


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, GenerationStats]:
    folder = tmp_path_factory.mktemp("lake") / "run=2026-03-01-10-00-00"
    return folder, generate_run_folder(folder, OPTIONS)


def _lines(stats: GenerationStats) -> list[str]:
    lines: list[str] = []
    for path in stats.files:
        opener = gzip.open if path.suffix == ".gz" else open
        with opener(path, "rt", encoding="utf-8", newline="") as f:  # type: ignore[operator]
            lines += f.read().splitlines(keepends=True)
    return lines


def _defect(line: str) -> str | None:
    """The bad line kind of a line, judged independently of the generator; None for a good line."""
    if "\t" not in line:
        return "not_tsv"
    fields = line.removesuffix("\n").split("\t")
    if len(fields) != FIELD_COUNT:
        return "truncated"
    for field in ENRICHED_FIELDS:
        value = fields[field.index]
        if field.type is FieldType.UUID and not _UUID.match(value):
            return "invalid_uuid"
        if field.type is FieldType.TIMESTAMP and value and not _TIMESTAMP.match(value):
            return "invalid_timestamp"
        if field.type is FieldType.INT and value and not _INT.match(value):
            return "invalid_int"
        if field.type is FieldType.BOOLEAN and value not in ("", "0", "1"):
            return "invalid_boolean"
        if field.type is FieldType.DOUBLE and value and not _DOUBLE.match(value):
            return "invalid_double"
        if field.type is FieldType.JSON and value:
            try:
                wrapper = json.loads(value)
            except json.JSONDecodeError:
                return "invalid_json"
            expected = UNSTRUCT_EVENT_SCHEMA if field.name == "unstruct_event" else CONTEXTS_SCHEMA
            if wrapper["schema"] != expected:
                return "wrong_wrapper_schema"
            entities = [wrapper["data"]] if field.name == "unstruct_event" else wrapper["data"]
            if not all(_IGLU_URI.match(entity["schema"]) and isinstance(entity["data"], dict) for entity in entities):
                return "invalid_iglu_uri"
    return None


def _good_fields(stats: GenerationStats) -> list[list[str]]:
    return [line.removesuffix("\n").split("\t") for line in _lines(stats) if _defect(line) is None]


def _value(fields: list[str], name: str) -> str:
    return fields[FIELD_INDEX[name]]


def _web_page_id(fields: list[str]) -> str:
    contexts = json.loads(_value(fields, "contexts"))["data"]
    return next(entity["data"]["id"] for entity in contexts if entity["schema"] == WEB_PAGE_SCHEMA)


def test_writes_the_part_files_and_then_the_success_marker(run: tuple[Path, GenerationStats]) -> None:
    folder, stats = run
    assert stats.files == [folder / f"part-{i:05d}" for i in range(3)]
    marker = folder / SUCCESS_MARKER
    assert marker.read_bytes() == b""
    assert all(marker.stat().st_mtime_ns >= part.stat().st_mtime_ns for part in stats.files)
    assert sorted(p.name for p in folder.iterdir()) == ["_SUCCESS", "part-00000", "part-00001", "part-00002"]


def test_spreads_lines_evenly_over_the_part_files(run: tuple[Path, GenerationStats]) -> None:
    _, stats = run
    counts = [len(path.read_bytes().splitlines()) for path in stats.files]
    assert sum(counts) == stats.lines_written
    assert max(counts) - min(counts) <= 1


def test_every_good_line_has_131_fields_of_valid_types(run: tuple[Path, GenerationStats]) -> None:
    _, stats = run
    lines = _lines(stats)
    good = [line for line in lines if _defect(line) is None]
    assert len(good) == stats.events + stats.natural_duplicates + stats.synthetic_duplicates
    assert all(line.endswith("\n") and line.count("\t") == FIELD_COUNT - 1 for line in good)


def test_counts_are_exact(run: tuple[Path, GenerationStats]) -> None:
    _, stats = run
    assert (stats.events, stats.natural_duplicates, stats.synthetic_duplicates, stats.bad_lines) == (900, 18, 9, 9)
    assert stats.lines_written == 900 + 18 + 9 + 9 == len(_lines(stats))

    good = _good_fields(stats)
    pairs = Counter((_value(f, "event_id"), _value(f, "event_fingerprint")) for f in good)
    ids = {event_id for event_id, _ in pairs}
    assert len(ids) == stats.events
    assert sum(count - 1 for count in pairs.values()) == stats.natural_duplicates
    assert len(pairs) - len(ids) == stats.synthetic_duplicates


def test_bad_lines_are_one_of_each_kind(run: tuple[Path, GenerationStats]) -> None:
    _, stats = run
    found = Counter(kind for line in _lines(stats) if (kind := _defect(line)) is not None)
    assert found == Counter(stats.bad_line_kinds)
    assert stats.bad_line_kinds == {kind: 1 for kind in BAD_LINE_KINDS}


def test_some_natural_duplicates_were_enriched_later(run: tuple[Path, GenerationStats]) -> None:
    _, stats = run
    etl_times: dict[tuple[str, str], list[str]] = {}
    for fields in _good_fields(stats):
        key = (_value(fields, "event_id"), _value(fields, "event_fingerprint"))
        etl_times.setdefault(key, []).append(_value(fields, "etl_tstamp"))
    copies = [times for times in etl_times.values() if len(times) > 1]
    assert any(len(set(times)) > 1 for times in copies)
    assert any(len(set(times)) == 1 for times in copies)


def test_synthetic_duplicates_differ_in_payload(run: tuple[Path, GenerationStats]) -> None:
    _, stats = run
    by_id: dict[str, set[tuple[str, ...]]] = {}
    for fields in _good_fields(stats):
        enrichment = (FIELD_INDEX["etl_tstamp"], FIELD_INDEX["event_fingerprint"])
        payload = tuple(value for index, value in enumerate(fields) if index not in enrichment)
        by_id.setdefault(_value(fields, "event_id"), set()).add(payload)
    assert sum(len(payloads) - 1 for payloads in by_id.values()) == stats.synthetic_duplicates


def test_duplicates_are_scattered_over_the_files(run: tuple[Path, GenerationStats]) -> None:
    _, stats = run
    places: dict[str, list[tuple[int, int]]] = {}  # event id -> (file, line) of each good line with that id
    line_number = 0
    for file_number, path in enumerate(stats.files):
        for line in path.read_text(encoding="utf-8").splitlines(keepends=True):
            line_number += 1
            if _defect(line) is None:
                places.setdefault(line.split("\t")[FIELD_INDEX["event_id"]], []).append((file_number, line_number))
    shared = [sorted(p) for p in places.values() if len(p) > 1]
    assert len(shared) > 20
    assert sum(1 for p in shared if p[1][1] - p[0][1] == 1) <= 1
    assert any(p[0][0] != p[-1][0] for p in shared)


def test_is_deterministic_for_a_seed(tmp_path: Path) -> None:
    options = GenerationOptions(events=300, seed=5)
    first = generate_run_folder(tmp_path / "a", options)
    second = generate_run_folder(tmp_path / "b", options)
    other = generate_run_folder(tmp_path / "c", GenerationOptions(events=300, seed=6))
    assert [p.read_bytes() for p in first.files] == [p.read_bytes() for p in second.files]
    assert [p.read_bytes() for p in first.files] != [p.read_bytes() for p in other.files]


def test_gzip_output_holds_the_same_lines(tmp_path: Path) -> None:
    plain = generate_run_folder(tmp_path / "plain", GenerationOptions(events=300, seed=3))
    zipped = generate_run_folder(tmp_path / "zipped", GenerationOptions(events=300, seed=3, gzip=True))
    assert [p.name for p in zipped.files] == ["part-00000.gz", "part-00001.gz"]
    assert [gzip.decompress(p.read_bytes()) for p in zipped.files] == [p.read_bytes() for p in plain.files]
    again = generate_run_folder(tmp_path / "again", GenerationOptions(events=300, seed=3, gzip=True))
    assert [p.read_bytes() for p in again.files] == [p.read_bytes() for p in zipped.files]


def test_no_events_still_completes_the_folder(tmp_path: Path) -> None:
    stats = generate_run_folder(tmp_path / "run", GenerationOptions(events=0))
    assert stats.lines_written == 0
    assert [p.read_bytes() for p in stats.files] == [b"", b""]
    assert (tmp_path / "run" / SUCCESS_MARKER).exists()


def test_page_pings_share_the_web_page_id_of_their_page_view(run: tuple[Path, GenerationStats]) -> None:
    _, stats = run
    good = _good_fields(stats)
    page_views = {_web_page_id(f): f for f in good if _value(f, "event") == "page_view"}
    pings = [f for f in good if _value(f, "event") == "page_ping"]
    assert len(pings) > len(page_views) > 100
    for ping in pings:
        page_view = page_views[_web_page_id(ping)]
        for name in ("domain_sessionid", "domain_userid", "page_url"):
            assert _value(ping, name) == _value(page_view, name)
        assert _value(ping, "dvce_created_tstamp") > _value(page_view, "dvce_created_tstamp")
        assert int(_value(ping, "pp_yoffset_min")) <= int(_value(ping, "pp_yoffset_max"))


def test_events_look_like_a_javascript_tracker_on_a_shop(run: tuple[Path, GenerationStats]) -> None:
    _, stats = run
    good = _good_fields(stats)
    kinds = Counter((_value(f, "event"), _value(f, "event_name")) for f in good)
    assert {("page_view", "page_view"), ("page_ping", "page_ping"), ("struct", "event")} <= set(kinds)
    assert {("unstruct", "link_click"), ("unstruct", "checkout_step")} <= set(kinds)
    for fields in good:
        assert _value(fields, "platform") == "web"
        assert _value(fields, "v_tracker").startswith("js-3.")
        assert _value(fields, "etl_tstamp") > _value(fields, "collector_tstamp")
        derived = json.loads(_value(fields, "derived_contexts"))["data"]
        assert derived[0]["schema"].endswith("/ua_parser_context/jsonschema/1-0-0")
        if _value(fields, "event") == "unstruct":
            unstruct = json.loads(_value(fields, "unstruct_event"))["data"]
            assert unstruct["schema"].split("/")[1] == _value(fields, "event_name")
        if _value(fields, "event") == "struct":
            assert _value(fields, "se_category") and _value(fields, "se_action")


def test_a_visitors_sessions_are_numbered_in_time_order(run: tuple[Path, GenerationStats]) -> None:
    _, stats = run
    sessions: dict[str, dict[int, str]] = {}
    for fields in _good_fields(stats):
        starts = sessions.setdefault(_value(fields, "domain_userid"), {})
        index = int(_value(fields, "domain_sessionidx"))
        starts[index] = min(starts.get(index, "9"), _value(fields, "derived_tstamp"))
    for starts in sessions.values():
        times = [starts[index] for index in sorted(starts)]
        assert times == sorted(times)


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


def test_run_folder_name_is_utc() -> None:
    assert run_folder_name(datetime(2026, 3, 1, 10, 0, 5, tzinfo=UTC)) == "run=2026-03-01-10-00-05"
    assert run_folder_name(datetime(2026, 3, 1, 10, 0, 5)) == "run=2026-03-01-10-00-05"
    one_hour_east = timezone(timedelta(hours=1))
    assert run_folder_name(datetime(2026, 3, 1, 11, 0, 5, tzinfo=one_hour_east)) == "run=2026-03-01-10-00-05"


@pytest.mark.parametrize(
    "bad_options",
    [{"events": -1}, {"files": 0}, {"users": 0}, {"natural_duplicate_rate": 1.5}, {"bad_line_rate": -0.1}],
)
def test_options_are_validated(bad_options: dict) -> None:
    with pytest.raises(ValueError):
        GenerationOptions(**bad_options)


def test_options_default_to_one_visitor_per_40_events() -> None:
    assert GenerationOptions(events=1000).users == 25
    assert GenerationOptions(events=10).users == 1
