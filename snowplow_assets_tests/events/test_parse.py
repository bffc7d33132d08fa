import json
from datetime import datetime

import pytest

from snowplow_assets.events.enriched_schema import FIELD_COUNT, FIELD_NAMES
from snowplow_assets.events.parse import parse_enriched
from snowplow_assets_tests.events.builders import LINK_CLICK, UA_PARSER, WEB_PAGE, event_line, link_click

# Every line the tests look at is registered here while the module is collected and parsed in one Spark
# job; each test then reads its own row.
_LINES: list[str] = []


def line(text: str) -> str:
    _LINES.append(text)
    return text


@pytest.fixture(scope="module")
def parsed(spark) -> dict:
    df = spark.createDataFrame(list(enumerate(dict.fromkeys(_LINES))), "row_id BIGINT, line STRING")
    return {row.line: row for row in parse_enriched(df).collect()}


def decoding_errors(row) -> dict[str, dict]:
    assert row.failure is not None and row.failure.type == "RowDecodingError", row.failure
    return {e.key: e.asDict() for e in row.failure.errors}


GOOD = line(event_line(txn_id="-42", se_value="1.5e3", true_tstamp="2026-03-01T10:00:00.5Z"))


def test_good_line_has_all_131_fields_typed(parsed):
    row = parsed[GOOD]
    assert row.failure is None
    assert len(FIELD_NAMES) == FIELD_COUNT == 131 and all(name in row.asDict() for name in FIELD_NAMES)
    assert row.collector_tstamp == datetime(2026, 3, 1, 10, 0, 0, 123000)
    assert row.true_tstamp == datetime(2026, 3, 1, 10, 0, 0, 500000)
    assert row.domain_sessionidx == 3 and row.txn_id == -42 and row.dvce_screenwidth == 1920
    assert row.geo_latitude == pytest.approx(52.3731) and row.se_value == 1500.0
    assert row.dvce_ismobile is False
    assert row.user_id is None  # empty string is null
    assert row.event_id == "c6ef3124-b53a-4b13-a233-0088f79dcbcb"


UNSTRUCT = line(event_line(unstruct_event=link_click("https://a.example/x"), event="unstruct"))


def test_entities_carry_their_iglu_parts_and_data(parsed):
    row = parsed[UNSTRUCT]
    assert row.unstruct_event.schema == LINK_CLICK
    assert (row.unstruct_event.vendor, row.unstruct_event.name, row.unstruct_event.version) == (
        "com.snowplowanalytics.snowplow",
        "link_click",
        "1-0-1",
    )
    assert json.loads(row.unstruct_event.data) == {"targetUrl": "https://a.example/x"}
    assert [e.schema for e in row.contexts] == [WEB_PAGE]
    assert [e.schema for e in row.derived_contexts] == [UA_PARSER]


NO_JSON = line(event_line(contexts="", derived_contexts=""))


def test_absent_json_fields_are_empty(parsed):
    row = parsed[NO_JSON]
    assert row.failure is None and row.contexts == [] and row.derived_contexts == [] and row.unstruct_event is None


NOT_TSV = line("just some text")


def test_line_without_tab_is_not_tsv(parsed):
    row = parsed[NOT_TSV]
    assert row.failure.type == "NotTSV" and row.failure.fieldCount is None and row.failure.errors is None
    assert row.event_id is None


WRONG_COUNTS = [(n, line("\t".join(["x"] * n))) for n in (2, 130, 132)]


@pytest.mark.parametrize(("fields", "text"), WRONG_COUNTS)
def test_wrong_field_count(parsed, fields, text):
    assert (parsed[text].failure.type, parsed[text].failure.fieldCount) == ("FieldNumberMismatch", fields)
    assert parsed[text].event_id is None


TRAILING_EMPTY = line(event_line(true_tstamp="", event_fingerprint=""))


def test_trailing_empty_fields_are_kept(parsed):
    assert parsed[TRAILING_EMPTY].failure is None


INVALID_VALUES = [
    (field, value, message, line(event_line(**{field: value})))
    for field, value, message in [
        ("collector_tstamp", "not-a-date", "timestamp"),
        ("etl_tstamp", "2026-13-01 00:00:00", "timestamp"),
        ("event_id", "not-a-uuid", "UUID"),
        ("dvce_screenwidth", "wide", "integer"),
        ("dvce_screenwidth", "2147483648", "integer"),
        ("txn_id", "1.5", "integer"),
        ("geo_latitude", "north", "decimal"),
        ("geo_latitude", "NaN", "decimal"),
        ("dvce_ismobile", "yes", "boolean"),
        ("br_cookies", "true", "boolean"),
        # A final line terminator is not the end of the value (snowplow_assets/patterns.py).
        ("event_id", "c6ef3124-b53a-4b13-a233-0088f79dcbcb\u2028", "UUID"),
        ("dvce_screenwidth", "1920\u0085", "integer"),
        ("collector_tstamp", "2026-03-01 10:00:00.123\r", "timestamp"),
        # Numbers a double cannot hold: they would read as an infinity, or as 0.
        ("geo_latitude", "1e400", "out of the range of a double"),
        ("tr_total", "-1e309", "out of the range of a double"),
        ("se_value", "1e-400", "out of the range of a double"),
    ]
]


@pytest.mark.parametrize(("field", "value", "message", "text"), INVALID_VALUES)
def test_invalid_typed_value_names_the_field(parsed, field, value, message, text):
    errors = decoding_errors(parsed[text])
    assert set(errors) == {field}
    assert errors[field]["value"] == value and message in errors[field]["message"]
    assert errors[field]["type"] == "InvalidValue"


REQUIRED = [
    (field, line(event_line(**{field: ""}))) for field in ("collector_tstamp", "event_id", "v_collector", "v_etl")
]


@pytest.mark.parametrize(("field", "text"), REQUIRED)
def test_required_fields(parsed, field, text):
    assert decoding_errors(parsed[text])[field]["message"] == "Field is required but empty"


SEVERAL = line(event_line(dvce_ismobile="maybe", collector_tstamp="", contexts="{oops"))


def test_every_failing_field_is_reported_in_tsv_order(parsed):
    assert [e.key for e in parsed[SEVERAL].failure.errors] == ["collector_tstamp", "contexts", "dvce_ismobile"]


_CTX = "iglu:com.snowplowanalytics.snowplow/contexts/jsonschema/1-0-1"
_UE = "iglu:com.snowplowanalytics.snowplow/unstruct_event/jsonschema/1-0-0"
_X = "iglu:com.acme/x/jsonschema/1-0-0"
_TOO_LONG = "iglu:com.acme/" + "n" * 170 + "/jsonschema/1-0-0"  # 201 characters: one too many (iglu.py)


def _x_context(data: str) -> str:
    """A contexts field of one entity, `_X`, with the given data."""
    return f'{{"schema":"{_CTX}","data":[{{"schema":"{_X}","data":{data}}}]}}'


def _x_event(data: str) -> str:
    return f'{{"schema":"{_UE}","data":{{"schema":"{_X}","data":{data}}}}}'


_BEYOND = "a number in an entity's data is out of the range of a double"
_TEXT_AFTER = "invalid JSON: text after the self-describing JSON"
_OWN = "is the shredder's own: it adds such a context to each event it renames"
INVALID_JSON = [
    (field, text, message, line(event_line(**{field: text})))
    for field, text, message in [
        ("contexts", "{not json", "invalid JSON"),
        ("derived_contexts", "[1, 2]", "invalid JSON"),
        ("unstruct_event", "nope", "invalid JSON"),
        ("contexts", f'{{"schema":"{_CTX}","data":{{"a":1}}}}', "invalid JSON"),
        ("contexts", '{"schema":"iglu:com.acme/contexts/jsonschema/1-0-0","data":[]}', "wrapper schema"),
        (
            "unstruct_event",
            f'{{"schema":"{_CTX}","data":{{"schema":"iglu:a/b/jsonschema/1-0-0","data":{{}}}}}}',
            "wrapper schema",
        ),
        (
            "contexts",
            f'{{"schema":"{_CTX}","data":[{{"schema":"iglu:com.acme/../../etc/jsonschema/1-0-0","data":{{}}}}]}}',
            "not a valid Iglu URI",
        ),
        ("contexts", f'{{"schema":"{_CTX}","data":[{{"schema":"iglu:bad","data":{{}}}}]}}', "not a valid Iglu URI"),
        (
            "contexts",
            f'{{"schema":"{_CTX}","data":[{{"schema":"iglu:com.acme/x/jsonschema/1-0-0\\n","data":{{}}}}]}}',
            "not a valid Iglu URI",
        ),
        ("contexts", f'{{"schema":"{_CTX}\\u2028","data":[]}}', "wrapper schema"),
        (
            "contexts",
            f'{{"schema":"{_CTX}","data":[{{"schema":"iglu:com.acme/x/jsonschema/1-0-0","data":"text"}}]}}',
            "not a JSON object",
        ),
        ("contexts", f'{{"schema":"{_CTX}","data":[null]}}', "entity is null"),
        # A JSON string is no object, whatever text it holds.
        (
            "contexts",
            f'{{"schema":"{_CTX}","data":[{{"schema":"{WEB_PAGE}","data":{{}}}},{{"schema":"{_X}","data":"{{oops"}}]}}',
            f"data of entity {_X} is not a JSON object",
        ),
        ("contexts", f'{{"schema":"{_CTX}","data":[{{"schema":"{_X}","data":"{{\\"a\\":1}}"}}]}}', "not a JSON object"),
        (
            "contexts",
            f'{{"schema":"{_CTX}","data":[{{"schema":"{_X}","data":{{}},"data":"{{oops"}}]}}',
            "not a JSON object",
        ),
        ("unstruct_event", f'{{"schema":"{_UE}","data":{{"schema":"{_X}","data":"{{}}"}}}}', "not a JSON object"),
        (
            "contexts",
            f'{{"schema":"{_CTX}","data":[{{"schema":"{_TOO_LONG}","data":{{}}}}]}}',
            f"entity schema '{_TOO_LONG}' is longer than 200 characters",
        ),
        (
            "unstruct_event",
            '{"schema":"iglu:com.snowplowanalytics.snowplow/unstruct_event/jsonschema/1-0-0",'
            '"data":{"schema":"iglu:com.acme/e/jsonschema/0-1-0","data":{}}}',
            "not a valid Iglu URI",
        ),
        # Not numbers in JSON, whatever Spark's reader would take for one.
        *(
            ("contexts", _x_context(f'{{"n":{v}}}'), "invalid JSON")
            for v in ("NaN", "Infinity", "-Infinity", "+Infinity", "-INF", "+INF")
        ),
        ("unstruct_event", _x_event('{"n":[1,NaN]}'), "invalid JSON"),
        ("derived_contexts", _x_context('{"n":Infinity}'), "invalid JSON"),
        # Numbers a double cannot hold: Spark would write "Infinity" or 0.0 for them.
        *(
            ("contexts", _x_context(f'{{"n":{v}}}'), _BEYOND)
            for v in ("1e999", "-1E+999", "1.7976931348623159e308", "1.5e-400", "-1.5e-400", "2.4e-324")
        ),
        ("contexts", _x_context('{"n":' + "9" * 309 + ".5}"), _BEYOND),
        ("contexts", _x_context('{"n":0.' + "0" * 400 + "1}"), _BEYOND),
        ("unstruct_event", _x_event('{"a":[1,{"b":"1e999","c":1e999}]}'), _BEYOND),
        ("derived_contexts", _x_context('{"n":1e-400}'), _BEYOND),
        # The field's text is searched as a whole where an entity's data holds what such a number leaves there
        # ("Infinity" or 0.0), so beside one, a number in a key the reader skips counts too.
        (
            "contexts",
            f'{{"schema":"{_CTX}","data":[{{"schema":"{_X}","data":{{"s":"Infinity"}},"x":[1e999]}}]}}',
            _BEYOND,
        ),
        # One JSON value per field: Spark's reader took the first and ignored the rest.
        *(
            ("contexts", _x_context('{"n":1}') + junk, _TEXT_AFTER)
            for junk in (" 1e999", " trailing", "}", "]", ',"x":1', "]}", '],"x":1}', _x_context("{}"), " {}")
        ),
        ("unstruct_event", _x_event("{}") + "}", _TEXT_AFTER),
        ("derived_contexts", _x_context("{}") + "]", _TEXT_AFTER),
        # The shredder's own duplicate context, in any version and field: only the shredder may add one.
        *(
            (field, text.replace(_X, f"iglu:com.snowplowanalytics.snowplow/duplicate/jsonschema/{version}"), _OWN)
            for field, text in (
                ("contexts", _x_context('{"originalEventId":"c6ef3124-b53a-4b13-a233-0088f79dcbcb"}')),
                ("derived_contexts", _x_context("{}")),
                ("unstruct_event", _x_event("{}")),
            )
            for version in ("1-0-0", "2-0-0")
        ),
    ]
]


@pytest.mark.parametrize(("field", "text", "message", "whole_line"), INVALID_JSON)
def test_invalid_json_fields_make_the_line_bad(parsed, field, text, message, whole_line):
    errors = decoding_errors(parsed[whole_line])
    assert set(errors) == {field} and message in errors[field]["message"], errors
    assert errors[field]["value"] == text


# Numbers a double holds, text that only looks like a number beyond its range, and such a number where the
# reader skips it: data as Spark writes it. White space around the JSON is no text after it.
GOOD_NUMBERS = [
    (contexts, written, line(event_line(contexts=contexts)))
    for contexts, written in [
        (_x_context(data), written)
        for data, written in [
            ('{"n":1,"m":-0.5,"e":1e10,"s":1.5e-30}', '{"n":1,"m":-0.5,"e":1.0E10,"s":1.5E-30}'),
            ('{"n":123456789012345678901234567890}', '{"n":123456789012345678901234567890}'),
            ('{"n":1234567890.12345678901234567890}', '{"n":1.2345678901234567E9}'),
            ('{"a":0.0e-5,"b":0e999,"c":-0e-999,"d":0.0}', '{"a":0.0,"b":0.0,"c":-0.0,"d":0.0}'),
            ('{"min":4.9e-324,"max":1.7976931348623157e308}', '{"min":4.9E-324,"max":1.7976931348623157E308}'),
            ('{"n":1' + "0" * 400 + "}", '{"n":1' + "0" * 400 + "}"),  # an integer keeps its digits
            ('{"s":"Infinity","t":"-Infinity","z":0.0}', '{"s":"Infinity","t":"-Infinity","z":0.0}'),
            (
                '{"i":"Infinity","1e999":"x:1e999","q":"\\":1e999","s":\'y:1e999\'}',
                '{"i":"Infinity","1e999":"x:1e999","q":"\\":1e999","s":"y:1e999"}',
            ),
        ]
    ]
    + [
        (f'{{"schema":"{_CTX}","data":[{{"schema":"{_X}","data":{{"n":1}},"x":[1e999]}}]}}', '{"n":1}'),
        ("  " + _x_context('{"n":1}') + " ", '{"n":1}'),
    ]
]


@pytest.mark.parametrize(("contexts", "written", "text"), GOOD_NUMBERS)
def test_numbers_a_double_holds_are_good(parsed, contexts, written, text):
    row = parsed[text]
    assert row.failure is None, row.failure
    assert [e.data for e in row.contexts] == [written]


OLD_WRAPPER = line(
    event_line(contexts='{"schema":"iglu:com.snowplowanalytics.snowplow/contexts/jsonschema/1-0-0","data":[]}')
)


def test_contexts_wrapper_1_0_0_is_accepted(parsed):
    assert parsed[OLD_WRAPPER].failure is None


def test_parsing_runs_no_python_udf(spark):
    df = parse_enriched(spark.createDataFrame([(0, GOOD)], "row_id BIGINT, line STRING"))
    plan = df._jdf.queryExecution().executedPlan().toString()
    assert "Python" not in plan and "ArrowEval" not in plan
