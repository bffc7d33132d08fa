"""Landing normalisation (landing.py) and the three contracts (contracts.py), every rule in one Spark job."""

import json
from datetime import UTC, datetime

import pytest

from snowplow_assets.cdc.contracts import classify
from snowplow_assets.cdc.landing import parse_envelopes
from snowplow_assets_tests.cdc.builders import DEBEZIUM, EVENT, ISSUE_MODELS_YAML, PARTIAL, models, record

ROW = {"email": "a@example.com", "state": "active"}
T = 1_772_359_200_000  # 2026-03-01T10:00:00Z
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
    record(PARTIAL, "hello", "9", T, 9): ("bad", None, None, None, "invalid_value"),
    # debezium: c and r insert, u updates, d deletes; wrapped or bare; tombstones delete the Kafka key
    record(DEBEZIUM, {"payload": {"op": "c", "before": None, "after": {"id": 10, **ROW}}}, '{"id": 10}', T, 10): ("history", "10", "insert", {"id": 10, **ROW}, None),
    record(DEBEZIUM, {"op": "r", "after": {"id": 11}}, '{"id": 11}', T, 11): ("history", "11", "insert", {"id": 11}, None),
    record(DEBEZIUM, {"op": "u", "before": {"id": 12}, "after": {"id": 12, "state": "invited"}}, '{"id": 12}', T, 12): ("history", "12", "update", {"id": 12, "state": "invited"}, None),
    record(DEBEZIUM, {"payload": {"op": "d", "before": {"id": 13}, "after": None}}, '{"id": 13}', T, 13): ("deletes", "13", "delete", None, None),
    record(DEBEZIUM, {"op": "d", "before": None, "after": None}, '{"payload": {"id": 14}}', T, 14): ("deletes", "14", "delete", None, None),
    record(DEBEZIUM, None, '{"schema": {}, "payload": {"id": 15}}', T, 15): ("deletes", "15", "delete", None, None),
    record(DEBEZIUM, {"op": "c", "after": {"email": "x"}}, '{"id": 16}', T, 16): ("history", "16", "insert", {"email": "x"}, None),
    record(DEBEZIUM, {"op": "t"}, '{"id": 17}', T, 17): ("bad", None, None, None, "unknown_change_type"),
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


@pytest.fixture(scope="module")
def classified(spark):
    stamped = [record(PARTIAL, {"id": 100 + i}, str(100 + i), ts, 100 + i) for i, ts in enumerate(TIMESTAMPS)]
    lines = [*CASES, *stamped, "", "   ", " \t \r"]
    frame = spark.createDataFrame([("part-0", line) for line in lines], "__file STRING, __line STRING")
    rows = classify(parse_envelopes(frame), models()).drop("__parsed_value", "__row").collect()
    return {row["__line"]: row for row in rows}


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
        or "t is not one of c, r, u, d" in messages["unknown_change_type"]
    )
    assert all(r["__message"] for r in classified.values() if r["__output"] == "bad")


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
    frame = spark.createDataFrame([("part-0", line) for line in IGNORED_CASES], "__file STRING, __line STRING")
    rows = classify(parse_envelopes(frame), models(IGNORING)).collect()
    assert {r["__line"]: (r["__output"], r["__key"], r["__reason"]) for r in rows} == IGNORED_CASES
    ignored = [r for r in rows if r["__output"] == "ignored"]
    assert all(r["__model"] is r["__kind"] is r["__data"] is r["__message"] is None for r in ignored)
