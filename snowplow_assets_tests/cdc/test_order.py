"""The order of changes and the state it leads to (order.py), case by case, each case one key."""

from datetime import UTC, datetime

import pytest

from snowplow_assets.cdc.order import STATE_SCHEMA, live, merge_into, order_key, reduce_to_state


def _record(key, ms, kind, topic="t", partition=0, offset=0, data=None):
    data = data if kind == "delete" else (data or f'{{"v":"{key}@{ms}"}}')
    return ("m", key, datetime.fromtimestamp(ms / 1000, UTC).replace(tzinfo=None), kind, topic, partition, offset, data)


# key -> records in landing order, and the row its state must hold (None: deleted)
# fmt: off
CASES = {
    "delete_last": ([_record("delete_last", 1, "insert"), _record("delete_last", 2, "update"), _record("delete_last", 3, "delete")], None),
    "reinsert": ([_record("reinsert", 1, "insert"), _record("reinsert", 2, "delete"), _record("reinsert", 3, "insert")], '{"v":"reinsert@3"}'),
    "late_older": ([_record("late_older", 5, "update", offset=9), _record("late_older", 3, "update", offset=1)], '{"v":"late_older@5"}'),
    "late_delete": ([_record("late_delete", 5, "insert"), _record("late_delete", 4, "delete")], '{"v":"late_delete@5"}'),
    "duplicate": ([_record("duplicate", 1, "insert"), _record("duplicate", 1, "insert")], '{"v":"duplicate@1"}'),
    "replaced_in_one_transaction": ([_record("replaced_in_one_transaction", 1, "insert", offset=1), _record("replaced_in_one_transaction", 4, "delete", offset=2), _record("replaced_in_one_transaction", 4, "delete", offset=3), _record("replaced_in_one_transaction", 4, "insert", offset=4)], '{"v":"replaced_in_one_transaction@4"}'),
    "deleted_after_insert_in_one_transaction": ([_record("deleted_after_insert_in_one_transaction", 4, "insert", offset=1), _record("deleted_after_insert_in_one_transaction", 4, "delete", offset=2)], None),
    "topic_beats_kind": ([_record("topic_beats_kind", 4, "insert", topic="b"), _record("topic_beats_kind", 4, "update", topic="a", data='{"v":"update"}')], '{"v":"topic_beats_kind@4"}'),
    "topic_beats_delete": ([_record("topic_beats_delete", 4, "update", topic="z"), _record("topic_beats_delete", 4, "delete", topic="a")], '{"v":"topic_beats_delete@4"}'),
    "kind_at_one_coordinate": ([_record("kind_at_one_coordinate", 4, "delete"), _record("kind_at_one_coordinate", 4, "update", data='{"v":"u"}'), _record("kind_at_one_coordinate", 4, "insert", data='{"v":"z"}')], None),
    "topic": ([_record("topic", 4, "update", topic="b", data='{"v":"b"}'), _record("topic", 4, "update", topic="a", data='{"v":"a"}')], '{"v":"b"}'),
    "partition": ([_record("partition", 4, "update", partition=1, data='{"v":"p1"}'), _record("partition", 4, "update", partition=0, offset=9)], '{"v":"p1"}'),
    "offset": ([_record("offset", 4, "update", offset=7, data='{"v":"o7"}'), _record("offset", 4, "update", offset=5)], '{"v":"o7"}'),
    "same_coordinates": ([_record("same_coordinates", 4, "update", data='{"v":"x"}'), _record("same_coordinates", 4, "update", data='{"v":"y"}')], '{"v":"y"}'),
    "timestamp_first": ([_record("timestamp_first", 5, "insert", topic="a"), _record("timestamp_first", 4, "delete", topic="z")], '{"v":"timestamp_first@5"}'),
}
# fmt: on


@pytest.fixture(scope="module")
def records(spark):
    return spark.createDataFrame([r for rows, _ in CASES.values() for r in rows], STATE_SCHEMA)


def _rows(state):
    return {r["__key"]: r["__data"] for r in live(state).collect()}


def test_state_is_the_last_record_of_each_key(records):
    assert _rows(reduce_to_state(records)) == {key: row for key, (_, row) in CASES.items() if row is not None}


@pytest.mark.parametrize("changed_keys", [len(CASES), 10**9], ids=["broadcast", "shuffle"])
def test_merging_a_state_with_later_landings_equals_reducing_everything(spark, changed_keys):
    first = [rows[0] for rows, _ in CASES.values()]
    later = [r for rows, _ in CASES.values() for r in rows[1:]]
    base = reduce_to_state(spark.createDataFrame(first, STATE_SCHEMA))
    changes = reduce_to_state(spark.createDataFrame(later + [("m", "new", *first[0][2:])], STATE_SCHEMA))
    expected = {key: row for key, (_, row) in CASES.items() if row is not None} | {"new": first[0][7]}
    assert _rows(merge_into(base, changes, changed_keys)) == expected


def test_order_key_matches_the_documented_order():
    assert (
        order_key("delete", 1, "t", 0, 2, None)
        < order_key("delete", 1, "t", 0, 3, None)
        < order_key("insert", 1, "t", 0, 4, "{}")
    )
    assert order_key("delete", 1, "a", 0, 0, None) < order_key("insert", 1, "b", 0, 0, "{}")
    assert (
        order_key("insert", 1, "t", 0, 0, "{}")
        < order_key("update", 1, "t", 0, 0, "{}")
        < order_key("delete", 1, "t", 0, 0, None)
    )
    assert order_key("delete", 1, "t", 0, 0, None) < order_key("insert", 2, "t", 0, 0, "{}")
    assert order_key("update", 1, "a", 9, 9, "{}") < order_key("update", 1, "b", 0, 0, "{}")
    assert order_key("update", 1, "a", 0, 9, "{}") < order_key("update", 1, "a", 1, 0, "{}")
