"""Landing normalisation (landing.py) and the three contracts (contracts.py), every rule in one Spark job."""

import json
from collections.abc import Iterable
from datetime import UTC, datetime

import pytest

from snowplow_assets.cdc.contracts import DOUBLE_BEYOND_EXACT, classify
from snowplow_assets.cdc.landing import UNPAIRED_SURROGATE, parse_envelopes
from snowplow_assets.cdc.models import CdcModels, key_text
from snowplow_assets_tests.cdc.builders import (
    DEBEZIUM,
    EVENT,
    ISSUE_MODELS_YAML,
    LINES_DEBEZIUM,
    LINES_EVENT,
    LINES_PARTIAL,
    ORDER_LINES_YAML,
    PARTIAL,
    models,
    raw_record,
    record,
)

ROW = {"email": "a@example.com", "state": "active"}
T = 1_772_359_200_000  # 2026-03-01T10:00:00Z
_BEYOND_DOUBLE = "a number beyond a double's range (0, or 4.9E-324 to 1.7976931348623157E308 in magnitude)"
# A line is one JSON object, and a string value one JSON value: what else Spark's reader takes is a bad row that
# says what is wrong. line -> (bad reason, message)
# fmt: off
NOT_ONE_JSON_OBJECT = {
    # A missing newline: two records on one line were read as the first alone, the second lost.
    record(PARTIAL, {"id": 46}, "46", T, 46) + record(PARTIAL, {"id": 47}, "47", T, 47): ("invalid_json", "the line has text after its JSON object (one record per line)"),
    record(PARTIAL, {"id": 48}, "48", T, 48) + " trailing": ("invalid_json", "the line has text after its JSON object (one record per line)"),
    record(PARTIAL, {"id": 49}, "49", T, 49) + "]" + record(PARTIAL, {"id": 50}, "50", T, 50): ("invalid_json", "the line has text after its JSON object (one record per line)"),
    record(PARTIAL, {"id": 51}, "51", T, 51) + "}": ("invalid_json", "the line has text after its JSON object (one record per line)"),
    record(PARTIAL, {"id": 52}, "52", T, 52) + "," + record(PARTIAL, {"id": 53}, "53", T, 53): ("invalid_json", "the line has text after its JSON object (one record per line)"),
    record(PARTIAL, {"id": 54}, "54", T, 54)[:-1] + ', "__x": 1}]}': ("invalid_json", "the line has text after its JSON object (one record per line)"),
    record(PARTIAL, {"id": 55}, "55", T, 55) + "],\"__x\": 1}": ("invalid_json", "the line has text after its JSON object (one record per line)"),
    # NaN and Infinity are no JSON; nor are single quotes
    raw_record(PARTIAL, '{"id": 56, "n": NaN}', "56", T, 56): ("invalid_json", "the line holds NaN or Infinity, which are not JSON numbers"),
    raw_record(PARTIAL, '{"id": 57, "n": [1, -Infinity]}', "57", T, 57): ("invalid_json", "the line holds NaN or Infinity, which are not JSON numbers"),
    record(PARTIAL, {"id": 58}, "58", T, 58).replace('"__offset": 58', '"__offset": NaN'): ("invalid_json", "the line holds NaN or Infinity, which are not JSON numbers"),
    record(PARTIAL, {"id": 59}, "59", T, 59).replace('"', "'"): ("invalid_json", "the line is not a JSON object"),
    # Numbers a double cannot hold: Spark read them as "Infinity" or 0.0
    raw_record(PARTIAL, '{"id": 60, "n": 1e400}', "60", T, 60): ("invalid_json", f"the line holds {_BEYOND_DOUBLE}"),
    raw_record(PARTIAL, '{"id": 61, "n": {"m": [-1.5e-400]}}', "61", T, 61): ("invalid_json", f"the line holds {_BEYOND_DOUBLE}"),
    raw_record(PARTIAL, '{"id": 62, "n": 1' + "0" * 400 + "}", "62", T, 62): ("invalid_json", f"the line holds {_BEYOND_DOUBLE}"),
    record(PARTIAL, {"id": 63}, "@", T, 63).replace('"@"', "1e400"): ("invalid_json", f"the line holds {_BEYOND_DOUBLE}"),
    record(PARTIAL, {"id": 64}, "64", T, 64, partition=9).replace('"__partition": 9', '"__partition": 1.5e-400'): ("invalid_json", f"the line holds {_BEYOND_DOUBLE}"),
    # A repeated key in the value (read as a VARIANT, which refuses one)
    raw_record(PARTIAL, '{"id": 65, "a": 1, "a": 2}', "65", T, 65): ("invalid_json", "a key appears twice in __value"),
    # A string value holds exactly one JSON value, as JSON
    record(PARTIAL, '{"id": 66} trailing', "66", T, 66): ("invalid_value", "__value is a string with text after its JSON value"),
    record(PARTIAL, '{"id": 67}]', "67", T, 67): ("invalid_value", "__value is a string with text after its JSON value"),
    record(PARTIAL, '{"id": 68}}', "68", T, 68): ("invalid_value", "__value is a string with text after its JSON value"),
    record(PARTIAL, '{"id": 69}{"id": 70}', "69", T, 69): ("invalid_value", "__value is a string with text after its JSON value"),
    record(PARTIAL, '{"id": 71, "n": NaN}', "71", T, 71): ("invalid_value", "__value is a string holding NaN or Infinity, which are not JSON numbers"),
    record(PARTIAL, '{"id": 72, "n": 1e400}', "72", T, 72): ("invalid_value", f"__value holds {_BEYOND_DOUBLE}"),
    record(EVENT, '{"changeType": "INSERT", "data": {"customerId": 75, "n": [1.5e-400]}}', "x", T, 75): ("invalid_value", f"data holds {_BEYOND_DOUBLE}"),
    record(PARTIAL, '{"id": 73, "a": 1, "a": 2}', "73", T, 73): ("invalid_value", "__value is a string whose JSON has a key twice"),
    record(PARTIAL, "{'id': 74}", "74", T, 74): ("invalid_value", "__value is a string that is not JSON"),
}
# fmt: on
# line -> (output, key, kind, row or None, bad reason)
# fmt: off
CASES = {
    # partial: the value is the row; a null value (JSON null or the string "null") deletes __key
    record(PARTIAL, {"state": "active", "id": 1, "email": "a@example.com"}, "1", T, 1): ("history", "1", "update", {"id": 1, **ROW}, None),
    record(PARTIAL, json.dumps({"id": 2, **ROW}), "2", T, 2): ("history", "2", "update", {"id": 2, **ROW}, None),
    record(PARTIAL, None, "3", T, 3): ("deletes", "3", "delete", None, None),
    record(PARTIAL, "null", "4", T, 4): ("deletes", "4", "delete", None, None),
    record(PARTIAL, {"id": 5}, json.dumps({"id": 55}), T, 5): ("history", "55", "update", {"id": 5}, None),
    record(PARTIAL, None, 66, T, 6): ("deletes", "66", "delete", None, None),
    record(PARTIAL, {"id": 7}, "", T, 7): ("bad", None, None, None, "no_id"),
    record(PARTIAL, 12, "8", T, 8): ("bad", None, None, None, "invalid_value"),
    # Debezium's ExtractNewRecordState writes a delete as the row with `__deleted: "true"` (rewrite mode)
    record(PARTIAL, {"id": 90, "email": "x", "__deleted": "true"}, '{"id": 90}', T, 90): ("deletes", "90", "delete", None, None),
    record(PARTIAL, json.dumps({"id": 91, "__deleted": True}), "91", T, 91): ("deletes", "91", "delete", None, None),
    record(PARTIAL, {"id": 92, "__deleted": "false"}, "92", T, 92): ("history", "92", "update", {"id": 92, "__deleted": "false"}, None),
    # Kafka Connect's JSON envelope (schemas.enable): exactly an object `schema` and the row, or null, as `payload`
    record(PARTIAL, {"schema": {"type": "struct"}, "payload": {"id": 93, "email": "y"}}, "93", T, 93): ("history", "93", "update", {"id": 93, "email": "y"}, None),
    record(PARTIAL, json.dumps({"schema": {"type": "struct"}, "payload": None}), "94", T, 94): ("deletes", "94", "delete", None, None),
    record(PARTIAL, {"schema": {"type": "struct"}, "payload": {"id": 95, "__deleted": "true"}}, "95", T, 95): ("deletes", "95", "delete", None, None),
    record(PARTIAL, {"schema": "public", "payload": {"a": 1}}, "96", T, 96): ("history", "96", "update", {"schema": "public", "payload": {"a": 1}}, None),
    record(PARTIAL, {"schema": {}, "payload": {"a": 1}, "id": 97}, "97", T, 97): ("history", "97", "update", {"schema": {}, "payload": {"a": 1}, "id": 97}, None),
    record(PARTIAL, {"schema": {"type": "struct"}, "payload": [1]}, "98", T, 98): ("history", "98", "update", {"schema": {"type": "struct"}, "payload": [1]}, None),
    record(PARTIAL, "hello", "9", T, 9): ("bad", None, None, None, "invalid_value"),
    # debezium: c and r insert, u updates, d deletes; wrapped or bare; tombstones delete the Kafka key
    record(DEBEZIUM, {"payload": {"op": "c", "before": None, "after": {"id": 10, **ROW}}}, '{"id": 10}', T, 10): ("history", "10", "insert", {"id": 10, **ROW}, None),
    record(DEBEZIUM, {"op": "r", "after": {"id": 11}}, '{"id": 11}', T, 11): ("history", "11", "insert", {"id": 11}, None),
    record(DEBEZIUM, {"op": "u", "before": {"id": 12}, "after": {"id": 12, "state": "invited"}}, '{"id": 12}', T, 12): ("history", "12", "update", {"id": 12, "state": "invited"}, None),
    record(DEBEZIUM, {"payload": {"op": "d", "before": {"id": 13}, "after": None}}, '{"id": 13}', T, 13): ("deletes", "13", "delete", None, None),
    record(DEBEZIUM, {"op": "d", "before": None, "after": None}, '{"payload": {"id": 14}}', T, 14): ("deletes", "14", "delete", None, None),
    record(DEBEZIUM, None, '{"schema": {}, "payload": {"id": 15}}', T, 15): ("deletes", "15", "delete", None, None),
    record(DEBEZIUM, {"op": "c", "after": {"email": "x"}}, '{"id": 16}', T, 16): ("history", "16", "insert", {"email": "x"}, None),
    record(DEBEZIUM, {"op": "t"}, None, T, 17): ("deletes", "", "delete", None, None),  # a truncate: every key
    record(DEBEZIUM, {"payload": {"op": "t"}}, '{"id": 17}', T, 17): ("deletes", "", "delete", None, None),
    record(DEBEZIUM, {"op": "m"}, '{"id": 17}', T, 17): ("bad", None, None, None, "unknown_change_type"),
    record(DEBEZIUM, {"after": {"id": 18}}, '{"id": 18}', T, 18): ("bad", None, None, None, "unknown_change_type"),
    record(DEBEZIUM, {"op": "u", "after": [1]}, '{"id": 19}', T, 19): ("bad", None, None, None, "invalid_value"),
    record(DEBEZIUM, {"op": "c", "after": {"email": "x"}}, None, T, 20): ("bad", None, None, None, "no_id"),
    # event: changeType with data and deletedID; the id from data.customerId (the topic's id_field)
    record(EVENT, {"changeType": "INSERT", "data": {"customerId": 21, **ROW}}, "x", T, 21): ("history", "21", "insert", {"customerId": 21, **ROW}, None),
    record(EVENT, {"changeType": "UPDATE", "data": {"customerId": "22"}}, "x", T, 22): ("history", "22", "update", {"customerId": "22"}, None),
    record(EVENT, {"changeType": "DELETE", "deletedID": 23}, "x", T, 23): ("deletes", "23", "delete", None, None),
    record(EVENT, {"changeType": "UPSERT", "data": {"customerId": 24}}, "x", T, 24): ("bad", None, None, None, "unknown_change_type"),
    record(EVENT, {"changeType": "INSERT"}, "x", T, 25): ("bad", None, None, None, "invalid_value"),
    record(EVENT, {"changeType": "INSERT", "data": {"id": 26}}, "26", T, 26): ("bad", None, None, None, "no_id"),
    record(EVENT, {"changeType": "INSERT", "data": {"customerId": {"n": 27}}}, "x", T, 27): ("bad", None, None, None, "no_id"),
    record(EVENT, {"changeType": "DELETE"}, "x", T, 28): ("bad", None, None, None, "no_id"),
    record(EVENT, None, "29", T, 29): ("bad", None, None, None, "invalid_value"),
    # envelope problems
    record("shop.orders", {"id": 30}, "30", T, 30): ("bad", None, None, None, "unknown_topic"),
    json.dumps({"__topic": PARTIAL, "__partition": 0, "__offset": 31, "__timestamp": T, "__key": "31"}): ("bad", None, None, None, "invalid_envelope"),
    record(PARTIAL, {"id": 32}, "32", T, 32, partition=-1): ("bad", None, None, None, "invalid_envelope"),
    record(PARTIAL, {"id": 33}, "33", T, "x"): ("bad", None, None, None, "invalid_envelope"),  # type: ignore[arg-type]
    record("", {"id": 34}, "34", T, 34): ("bad", None, None, None, "invalid_envelope"),
    record(PARTIAL, {"id": 35}, "35", "yesterday", 35): ("bad", None, None, None, "invalid_timestamp"),
    record(PARTIAL, {"id": 36}, "36", 1.5e12, 36): ("bad", None, None, None, "invalid_timestamp"),
    # Spark's cast alone reads these as years; and hour folders hold only the years 1 to 9999
    record(PARTIAL, {"id": 37}, "37", " 2026", 37): ("bad", None, None, None, "invalid_timestamp"),
    record(PARTIAL, {"id": 38}, "38", "+2026", 38): ("bad", None, None, None, "invalid_timestamp"),
    record(PARTIAL, {"id": 39}, "39", "3000\n", 39): ("bad", None, None, None, "invalid_timestamp"),
    record(PARTIAL, {"id": 40}, "40", 253402300800000, 40): ("bad", None, None, None, "invalid_timestamp"),
    record(PARTIAL, {"id": 41}, "41", -62135596800001, 41): ("bad", None, None, None, "invalid_timestamp"),
    record(PARTIAL, {"id": 42}, "42", "+10000-01-01T00:00:00Z", 42): ("bad", None, None, None, "invalid_timestamp"),
    record(PARTIAL, {"id": 43}, "43", "0001-01-01T00:30:00+01:00", 43): ("bad", None, None, None, "invalid_timestamp"),
    record(PARTIAL, {"id": 44}, "44", 253402300799999, 44): ("history", "44", "update", {"id": 44}, None),
    record(PARTIAL, {"id": 45}, "45", "0001-01-02T00:00:00Z", 45): ("history", "45", "update", {"id": 45}, None),
    **{line: ("bad", None, None, None, reason) for line, (reason, _) in NOT_ONE_JSON_OBJECT.items()},
    # White space around the object or a string's value; numbers a double holds, and text that only looks like one
    # it does not: the row as written
    "  " + record(PARTIAL, {"id": 80}, "80", T, 80) + " \t": ("history", "80", "update", {"id": 80}, None),
    record(PARTIAL, ' {"id": 81} ', "81", T, 81): ("history", "81", "update", {"id": 81}, None),
    raw_record(PARTIAL, '{"id": 82, "n": 1e300, "z": 0e5, "m": 4.9e-324, "s": "1e400", "i": "Infinity"}', "82", T, 82): ("history", "82", "update", {"id": 82, "n": 1e300, "z": 0.0, "m": 4.9e-324, "s": "1e400", "i": "Infinity"}, None),
    record(PARTIAL, '{"id": 83, "n": 0.0e-5, "z": 0.0}', "83", T, 83): ("history", "83", "update", {"id": 83, "n": 0.0, "z": 0.0}, None),
    # A string value is kept as its text: beyond the row read from it, nothing is written from what Spark read
    record(DEBEZIUM, '{"op": "c", "after": {"id": 84}, "source": {"ts_ms": 1e400}}', '{"id": 84}', T, 84): ("history", "84", "insert", {"id": 84}, None),
    "not json at all": ("bad", None, None, None, "invalid_json"),
    "[1, 2, 3]": ("bad", None, None, None, "invalid_json"),
    '{"__topic": "customers_raw"': ("bad", None, None, None, "invalid_json"),
}
# fmt: on
# __timestamp forms: epoch milliseconds (number or digits) or ISO-8601, truncated to the millisecond, UTC
TIMESTAMPS = {
    T: T,
    str(T + 1): T + 1,
    "2026-03-01T10:00:00.002Z": T + 2,
    "2026-03-01T12:00:00.003+02:00": T + 3,
    "2026-03-01 10:00:00.004": T + 4,
    "2026-03-01T10:00:00.005999Z": T + 5,
}


def _classified(spark, lines: Iterable[str], read_by: CdcModels) -> list:
    """Every line, landed in one file, as classify gives it."""
    frame = spark.createDataFrame([("part-0", line) for line in lines], "__file STRING, __line STRING")
    return classify(parse_envelopes(frame), read_by).drop("__parsed_value", "__row").collect()


@pytest.fixture(scope="module")
def classified(spark):
    stamped = [record(PARTIAL, {"id": 100 + i}, str(100 + i), ts, 100 + i) for i, ts in enumerate(TIMESTAMPS)]
    lines = [*CASES, *stamped, "", "   ", " \t \r"]
    return {row["__line"]: row for row in _classified(spark, lines, models())}


def test_every_record_gets_its_contracts_outcome(classified):
    got = {
        line: (r["__output"], r["__key"], r["__kind"], json.loads(r["__data"]) if r["__data"] else None, r["__reason"])
        for line, r in classified.items()
        if line in CASES
    }
    assert got == CASES


def test_rows_are_compact_json_with_sorted_keys(classified):
    first = classified[next(iter(CASES))]
    assert first["__data"] == '{"email":"a@example.com","id":1,"state":"active"}'
    assert all(r["__model"] == "customers" for r in classified.values() if r["__output"] != "bad")


def test_timestamp_forms_normalise_to_utc_milliseconds(classified):
    stamped = {
        int(r["__key"]) - 100: r["__timestamp"] for r in classified.values() if r["__key"] and int(r["__key"]) >= 100
    }
    expected = [datetime.fromtimestamp(ms / 1000, UTC).replace(tzinfo=None) for ms in TIMESTAMPS.values()]
    assert [stamped[i] for i in range(len(TIMESTAMPS))] == expected


def test_blank_lines_are_not_records(classified):
    assert "" not in classified and "   " not in classified and " \t \r" not in classified


def test_bad_rows_say_why(classified):
    messages = {r["__reason"]: r["__message"] for r in classified.values() if r["__reason"]}
    assert messages["unknown_topic"] == "no model declares topic shop.orders"
    timestamps = {
        r["__key"] or r["__line"]: r["__message"] for r in classified.values() if r["__reason"] == "invalid_timestamp"
    }
    assert classified[record(PARTIAL, {"id": 35}, "35", "yesterday", 35)]["__message"] == (
        "__timestamp is neither epoch milliseconds nor an ISO-8601 timestamp: yesterday"
    )
    assert classified[record(PARTIAL, {"id": 40}, "40", 253402300800000, 40)]["__message"] == (
        "__timestamp is outside the years 1 to 9999: 253402300800000"
    )
    assert len(timestamps) == 9
    assert (
        "UPSERT is not one of INSERT, UPDATE, DELETE" in messages["unknown_change_type"]
        or "m is not one of c, r, u, d, t" in messages["unknown_change_type"]
    )
    assert all(r["__message"] for r in classified.values() if r["__output"] == "bad")
    # A missing key names where the topic's contract looks for it.
    assert classified[record(PARTIAL, {"id": 7}, "", T, 7)]["__message"] == (
        "no usable id (missing, null, empty, an object, an array or "
        f"{DOUBLE_BEYOND_EXACT}) in the Kafka key (its text or a JSON object "
        "naming id)"
    )
    assert classified[record(EVENT, {"changeType": "DELETE"}, "x", T, 28)]["__message"] == (
        "no usable id (missing, null, empty, an object, an array or "
        f"{DOUBLE_BEYOND_EXACT}) in customerId of data, or deletedID (its "
        "value) for a delete"
    )


def test_a_line_that_is_not_exactly_one_json_object_says_what_is_wrong(classified):
    got = {line: (classified[line]["__reason"], classified[line]["__message"]) for line in NOT_ONE_JSON_OBJECT}
    assert got == NOT_ONE_JSON_OBJECT
    assert classified["not json at all"]["__message"] == "the line is not a JSON object"
    assert classified[record(PARTIAL, "hello", "9", T, 9)]["__message"] == "__value is a string that is not JSON"


def test_json_nests_as_deep_as_spark_reads_it(spark):
    """1000 levels for a line, read inside wrappers that would take some of them; a value in it nests one level
    less, and so does one held in a string."""
    lines = {
        depth: [
            raw_record(PARTIAL, '{"id": 1, "a": ' + "[" * depth + "]" * depth + "}", "1", T, depth),
            record(PARTIAL, '{"id": 2, "a": ' + "[" * depth + "]" * depth + "}", "2", T, depth),
        ]
        for depth in (998, 999)  # the arrays inside the value's object: 1000 levels in the line, then 1001
    }
    frame = spark.createDataFrame(
        [("part-0", line) for both in lines.values() for line in both], "__file STRING, __line STRING"
    )
    rows = {row["__line"]: row for row in classify(parse_envelopes(frame), models()).collect()}
    deepest, deeper = lines[998], lines[999]
    assert [(rows[line]["__output"], rows[line]["__key"]) for line in deepest] == [("history", "1"), ("history", "2")]
    assert rows[deepest[0]]["__data"] == '{"a":' + "[" * 998 + "]" * 998 + ',"id":1}'
    assert [rows[line]["__reason"] for line in deeper] == ["invalid_json", "invalid_value"]


IGNORING = ISSUE_MODELS_YAML + "ignored_topics: ['shop.*', '__debezium-heartbeat.*']\n"
# line -> (output, key, bad reason)
IGNORED_CASES = {
    record("shop.orders", {"id": 1}, "1", T, 1): ("ignored", None, None),
    record("__debezium-heartbeat.shop", {"ts_ms": T}, None, T, 2): ("ignored", None, None),
    record("shop.inventory", "not JSON", "3", T, 3): ("ignored", None, None),  # the value is never read
    record("shop.inventory", {"id": 3}, "3", T, 3, partition=-1): ("bad", None, "invalid_envelope"),
    record(DEBEZIUM, {"op": "c", "after": {"id": 4}}, '{"id": 4}', T, 4): ("history", "4", None),  # declared
    record("shopping", {"id": 5}, "5", T, 5): ("bad", None, "unknown_topic"),
    record("shop.orders", {"id": 6}, "6", "yesterday", 6): ("bad", None, "invalid_timestamp"),
}


def test_records_of_ignored_topics_are_ignored_unless_declared_or_broken(spark):
    rows = _classified(spark, IGNORED_CASES, models(IGNORING))
    assert {r["__line"]: (r["__output"], r["__key"], r["__reason"]) for r in rows} == IGNORED_CASES
    ignored = [r for r in rows if r["__output"] == "ignored"]
    assert all(r["__model"] is r["__kind"] is r["__data"] is r["__message"] is None for r in ignored)


# A Debezium topic keyed by a business field: Debezium's own Kafka key is the table's primary key, `id`.
BUSINESS_KEYED = (
    "models:\n  customers:\n    topics: [{topic: shop.customers, contract: debezium, id_field: customerId}]\n"
)
# line -> (output, key, kind, bad reason)
TOMBSTONE_CASES = {
    record(DEBEZIUM, {"op": "d", "before": {"id": 5, "customerId": "c-5"}}, '{"id": 5}', T, 1): ("deletes", "c-5", "delete", None),
    record(DEBEZIUM, None, '{"id": 5}', T, 2): ("ignored", None, None, None),  # the tombstone after it
    record(DEBEZIUM, None, '{"schema": {}, "payload": {"id": 6}}', T, 3): ("ignored", None, None, None),
    record(DEBEZIUM, None, '{"customerId": "c-7"}', T, 4): ("deletes", "c-7", "delete", None),  # a key that names it
    record(DEBEZIUM, None, None, T, 5): ("bad", None, None, "no_id"),  # no key at all: not Debezium's tombstone
    record(DEBEZIUM, None, "8", T, 6): ("deletes", "8", "delete", None),  # a key that is text is the key
    record(DEBEZIUM, {"op": "d", "before": {"id": 9}}, '{"id": 9}', T, 7): ("bad", None, None, "no_id"),  # not a tombstone
}  # fmt: skip


def test_a_debezium_tombstone_whose_key_lacks_the_id_field_is_ignored(spark):
    """It repeats the delete before it, which names the id in `before`; it was a no_id bad row for every delete."""
    rows = _classified(spark, TOMBSTONE_CASES, models(BUSINESS_KEYED))
    got = {r["__line"]: (r["__output"], r["__key"], r["__kind"], r["__reason"]) for r in rows}
    assert got == TOMBSTONE_CASES


def _line(order_id: object, line_no: object, **row: object) -> dict:
    return {"order_id": order_id, "line_no": line_no, **row}


_KEY_7_2 = json.dumps({"order_id": 7, "line_no": 2})
# A model keyed by (order_id, line_no); its event topic names them orderId and lineNo. line -> (output, key, kind,
# bad reason)
SEVERAL_FIELD_CASES = {
    # Debezium: the row image's fields, else every field from the Kafka key (Debezium keys such a table so)
    record(LINES_DEBEZIUM, {"op": "c", "after": _line(7, 1, sku="a")}, json.dumps({"order_id": 7, "line_no": 1}), T, 1): ("history", '["7","1"]', "insert", None),
    record(LINES_DEBEZIUM, {"op": "c", "after": _line(7, 2, sku="b")}, _KEY_7_2, T, 2): ("history", '["7","2"]', "insert", None),
    record(LINES_DEBEZIUM, {"op": "d", "before": None}, _KEY_7_2, T, 3): ("deletes", '["7","2"]', "delete", None),
    record(LINES_DEBEZIUM, None, json.dumps({"payload": {"order_id": 7, "line_no": 2}}), T, 4): ("deletes", '["7","2"]', "delete", None),
    # parts are never taken from two places: the image lacks line_no, so both come from the Kafka key
    record(LINES_DEBEZIUM, {"op": "u", "after": {"order_id": 8, "sku": "c"}}, json.dumps({"order_id": 7, "line_no": 3}), T, 5): ("history", '["7","3"]', "update", None),
    record(LINES_DEBEZIUM, {"op": "u", "after": {"order_id": 8, "sku": "c"}}, "8", T, 6): ("bad", None, None, "no_id"),
    record(LINES_DEBEZIUM, None, json.dumps({"order_id": 7}), T, 7): ("ignored", None, None, None),
    record(LINES_DEBEZIUM, None, "7", T, 8): ("bad", None, None, "no_id"),  # a text key cannot name two fields
    # partial: the Kafka key, an object naming every field
    record(LINES_PARTIAL, _line(9, 1, sku="d"), json.dumps({"line_no": 1, "order_id": 9}), T, 9): ("history", '["9","1"]', "update", None),
    record(LINES_PARTIAL, None, json.dumps({"order_id": 9, "line_no": 1}), T, 10): ("deletes", '["9","1"]', "delete", None),
    record(LINES_PARTIAL, _line(9, 1), "9", T, 11): ("bad", None, None, "no_id"),
    record(LINES_PARTIAL, _line(9, 1), json.dumps({"order_id": 9, "line_no": None}), T, 12): ("bad", None, None, "no_id"),
    # event: data's orderId and lineNo; a delete's deletedID is an object naming them
    record(LINES_EVENT, {"changeType": "INSERT", "data": {"orderId": "10", "lineNo": 1}}, "x", T, 13): ("history", '["10","1"]', "insert", None),
    record(LINES_EVENT, {"changeType": "DELETE", "deletedID": {"orderId": 10, "lineNo": "1"}}, "x", T, 14): ("deletes", '["10","1"]', "delete", None),
    record(LINES_EVENT, {"changeType": "DELETE", "deletedID": 10}, "x", T, 15): ("bad", None, None, "no_id"),
    record(LINES_EVENT, {"changeType": "UPDATE", "data": {"orderId": 10, "lineNo": ""}}, "x", T, 16): ("bad", None, None, "no_id"),
    record(LINES_EVENT, {"changeType": "UPDATE", "data": {"orderId": 10, "lineNo": [1]}}, "x", T, 17): ("bad", None, None, "no_id"),
    # any text is a part, and the array keeps parts apart that a separator would join
    record(LINES_EVENT, {"changeType": "INSERT", "data": {"orderId": 'a","b', "lineNo": "c"}}, "x", T, 18): ("history", '["a\\",\\"b","c"]', "insert", None),
    record(LINES_EVENT, {"changeType": "INSERT", "data": {"orderId": "a", "lineNo": 'b","c'}}, "x", T, 19): ("history", '["a","b\\",\\"c"]', "insert", None),
}  # fmt: skip


def test_a_key_of_several_fields_takes_every_part_from_one_place(spark):
    rows = _classified(spark, SEVERAL_FIELD_CASES, models(ORDER_LINES_YAML))
    got = {r["__line"]: (r["__output"], r["__key"], r["__kind"], r["__reason"]) for r in rows}
    assert got == SEVERAL_FIELD_CASES
    assert next(r["__message"] for r in rows if r["__offset"] == 6) == (
        "no usable id (missing, null, empty, an object, an array or "
        f"{DOUBLE_BEYOND_EXACT}) in order_id, line_no of the row image (after, "
        "before for a delete), else the Kafka key (a JSON object naming order_id, line_no)"
    )
    keys = [r["__key"] for r in rows if r["__key"]]
    assert all(key == key_text(json.loads(key)) for key in keys), "Spark writes the key as key_text does"


# The id as written in an event's data -> the key: one key per number, whatever form it is written in.
NUMBER_FORMS = {
    "10": "10", "10.0": "10", "1e1": "10", "1E1": "10", "100e-1": "10", "1.0E1": "10", '"10"': "10",
    "100000000000000000000": "100000000000000000000", "12345678901234567890": "12345678901234567890",
    "-0e0": "0", "-0": "0", "1.5e1": "15", "1.5": "1.5", "2.5e-1": "0.25", "0.25": "0.25", '"1e1"': "1e1",
    "9007199254740991e0": "9007199254740991", "-9007199254740991e0": "-9007199254740991",
    # A double from 2^53 up stands for many numbers, not the one written: no key (until 2026-11-28, the first
    # two were one key, `1.0E39`, and the third was not the key 12345678901234567890).
    "1" + "0" * 38: None, "1" + "0" * 37 + "1": None, "12345678901234567890e0": None, "1e20": None,
    "9007199254740992e0": None, "-9007199254740993e0": None,
}  # fmt: skip


def test_a_number_is_one_key_whatever_form_it_is_written_in(spark):
    lines = {
        raw_record(EVENT, f'{{"changeType": "UPDATE", "data": {{"customerId": {form}}}}}', "x", T, i): key
        for i, (form, key) in enumerate(NUMBER_FORMS.items())
    }
    lines[raw_record(DEBEZIUM, '{"op": "d", "before": {"id": 1e1}}', "x", T, 99)] = "10"
    lines[record(PARTIAL, None, '{"id": 1E1}', T, 98)] = "10"
    lines[raw_record(EVENT, '{"changeType": "DELETE", "deletedID": 12345678901234567890e0}', "x", T, 97)] = None
    rows = _classified(spark, lines, models())
    assert {r["__line"]: r["__key"] for r in rows} == lines
    assert {r["__reason"] for r in rows if r["__key"] is None} == {"no_id"}


def test_half_a_surrogate_pair_is_a_bad_row_whole_pairs_and_escaped_backslashes_are_text(spark):
    """Read, half a pair is `?`, so `a\\ud83d`, `a\\udc00` and `a?` would be one key (until 2026-11-28)."""
    lines = {
        record(PARTIAL, {"id": 1}, "a\ud83d", T, 1): ("invalid_json", "the line " + UNPAIRED_SURROGATE),
        record(PARTIAL, {"id": 2}, "a\udc00", T, 2): ("invalid_json", "the line " + UNPAIRED_SURROGATE),
        record(PARTIAL, {"id": 3, "n": "\udc00\ud83d"}, "3", T, 3): ("invalid_json", "the line " + UNPAIRED_SURROGATE),
        record(PARTIAL, json.dumps({"id": 4, "n": "a\ud83d"}), "4", T, 4): (
            "invalid_value", "__value is a string whose JSON " + UNPAIRED_SURROGATE
        ),
        record(PARTIAL, {"id": 5}, "a\U0001f600", T, 5): ("a\U0001f600", None),
        record(PARTIAL, {"id": 6}, "a\\ud83d", T, 6): ("a\\ud83d", None),
        record(PARTIAL, {"id": 7}, "a\\\ud83d\ude00", T, 7): ("a\\\U0001f600", None),
        # An escaped backslash, the text ud83d, then half a pair: the text is no high half for it.
        record(PARTIAL, {"id": 8}, "a\\ud83d\udc00", T, 8): ("invalid_json", "the line " + UNPAIRED_SURROGATE),
    }  # fmt: skip
    rows = _classified(spark, lines, models())
    assert {r["__line"]: (r["__key"] or r["__reason"], r["__message"]) for r in rows} == lines
