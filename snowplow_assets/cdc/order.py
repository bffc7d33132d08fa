"""The order of CDC changes and the state it leads to (FORMATS.md §7). The one place that defines them.

Every record of a model is a change of one key: an insert, an update or a delete. Per key the records are
totally ordered by

    (__timestamp, __topic, __partition, __offset, kind: insert < update < delete, __data)

and the state of a key is its last record in that order: its row if that record is an insert or an update,
nothing if it is a delete. Consequences:
- a delete as the last change removes the key; an insert after it brings the key back;
- a late record (landed after newer ones) never overwrites newer state: the order, not arrival, decides;
- at one millisecond, records of one topic partition keep Kafka's order, their offsets. A row replaced by a
  delete and an insert in one transaction (Debezium's `d`, its tombstone and `c`, all at one millisecond)
  is therefore the inserted row, not deleted. The kind came before the coordinates until 2026-11-26, which
  made every such replaced row vanish from the batches and the latest view;
- at one millisecond, records of different topics or partitions have no order in the source, and the topic,
  then the partition, decides: arbitrary, but the same in every computation. (Partitioning by key keeps a
  key's records in one partition, as Debezium and partial-mode topics do.)
- the same Kafka record landed twice is the same element of the order, so duplicates change nothing;
- two different records at one (topic, partition, offset), which Kafka cannot produce, are still resolved
  the same way by every computation: by their kind, then their row text (a delete has none).

"Last record wins" is a join-semilattice: merging states in any grouping, in any order, with any
duplication gives the same result. Batches rely on it: a batch is the previous batch merged with newer
records, and it equals a replay of everything. That is why the order is one lexicographic order of the
record's own fields: a rule such as "offsets within a partition, kinds across partitions" is not
transitive, and merges in different groupings would then disagree.

State tables (`STATE_SCHEMA`) hold one record per (model, key): live keys with their row and deleted keys
as tombstones (no row). Tombstones must be kept: a late insert older than a delete would otherwise bring a
deleted key back.

A truncate (Debezium's `op: t`) is a delete of every key of its model, at its own place in the order: a key's
state is the later of its last record and the model's last truncate. Its record has the key TABLE_KEY, which
no record key can be (an empty key is no key: contracts.py), so reducing and merging keep each model's last
truncate as one more tombstone, by the same rule. `truncated` then removes every key whose last record came
before it. Applied after every reduction and merge, that keeps the semilattice: a late record older than the
truncate, merged in later, is removed by the truncate the state kept, as a replay would delete it.
"""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

# Part of every batch's spec (models.ModelSpec.digest): a batch cut under another order holds other states,
# so the next cut after a change here recomputes every model in full, and the latest view ignores the old
# batch until then. 2: the coordinates before the kind (2026-11-26).
ORDER_VERSION = 2

INSERT, UPDATE, DELETE = "insert", "update", "delete"
TABLE_KEY = ""  # the key of a truncate's record: every key of its model
KINDS = (INSERT, UPDATE, DELETE)
KIND_RANK = {INSERT: 0, UPDATE: 1, DELETE: 2}

MODEL, KEY, TIMESTAMP, KIND, TOPIC, PARTITION, OFFSET, DATA = (
    "__model",
    "__key",
    "__timestamp",
    "__kind",
    "__topic",
    "__partition",
    "__offset",
    "__data",
)
STATE_COLUMNS = (MODEL, KEY, TIMESTAMP, KIND, TOPIC, PARTITION, OFFSET, DATA)
RECORDS = "__records"
STATE_SCHEMA = (
    f"{MODEL} STRING, {KEY} STRING, {TIMESTAMP} TIMESTAMP, {KIND} STRING, {TOPIC} STRING, "
    f"{PARTITION} INT, {OFFSET} BIGINT, {DATA} STRING"
)

_RANK_SQL = f"CASE {KIND} WHEN '{INSERT}' THEN 0 WHEN '{UPDATE}' THEN 1 ELSE 2 END"
# Struct comparison is field by field, so this struct *is* the order; the kind itself rides along at the end.
_ORDERED = f"struct({TIMESTAMP}, {TOPIC}, {PARTITION}, {OFFSET}, {_RANK_SQL} AS __rank, {DATA}, {KIND})"

# Above this many changed keys the merge shuffles instead of broadcasting the changes to the base.
BROADCAST_CHANGES_LIMIT = 1_000_000


def order_key(kind: str, timestamp_ms: int, topic: str, partition: int, offset: int, data: str | None) -> tuple:
    """The order of one record as a Python tuple, for callers outside Spark (and for tests)."""
    return (timestamp_ms, topic, partition, offset, KIND_RANK[kind], (data is not None, data or ""))


def reduce_to_state(records: DataFrame, counted: bool = False) -> DataFrame:
    """One row per (model, key): its last record. `records` has at least STATE_COLUMNS.

    `counted` adds `__records`, how many records each key had.

    The aggregation keeps Spark's two phases, unlike the lake event manifest's check
    (spark.single_phase_aggregation): how many records a key has depends on the stream. One phase was 20-30%
    faster over nearly distinct keys and 18% slower when ten keys had two million updates, whose partial
    aggregation is what keeps the shuffle small (benchmarks/README.md, CDC).
    """
    count = [F.count(F.lit(1)).alias(RECORDS)] if counted else []
    return (
        records.groupBy(MODEL, KEY)
        .agg(F.expr(f"max({_ORDERED})").alias("__last"), *count)
        .select(
            MODEL, KEY, *(F.col(f"__last.{c}").alias(c) for c in STATE_COLUMNS[2:]), *([RECORDS] if counted else [])
        )
    )


def merge_into(base: DataFrame, changes: DataFrame, changed_keys: int) -> DataFrame:
    """The state of `base` (a state: one row per key) after `changes` (another state).

    When the changes are small (`changed_keys`, counted by the caller), they are broadcast: every base row
    is compared with the change of its key, if any, without shuffling the base; keys new to the base are
    found by a semi-join of the base's key column only. Otherwise both are unioned and reduced.
    """
    if changed_keys > BROADCAST_CHANGES_LIMIT:
        return reduce_to_state(base.select(*STATE_COLUMNS).unionByName(changes.select(*STATE_COLUMNS)))
    change = F.broadcast(changes.select(MODEL, KEY, F.expr(_ORDERED).alias("__new")))
    merged = (
        base.select(MODEL, KEY, F.expr(_ORDERED).alias("__old"))
        .join(change, [MODEL, KEY], "left")
        .select(
            MODEL, KEY, F.expr("CASE WHEN __new IS NULL OR __old >= __new THEN __old ELSE __new END").alias("__last")
        )
    )
    known = base.select(MODEL, KEY).join(F.broadcast(changes.select(MODEL, KEY)), [MODEL, KEY], "left_semi")
    added = changes.select(MODEL, KEY, F.expr(_ORDERED).alias("__last")).join(
        F.broadcast(known), [MODEL, KEY], "left_anti"
    )
    return merged.unionByName(added).select(MODEL, KEY, *(F.col(f"__last.{c}").alias(c) for c in STATE_COLUMNS[2:]))


def truncated(state: DataFrame, truncates: DataFrame) -> DataFrame:
    """`state` without the keys whose last record came before the last truncate of their model, among the
    TABLE_KEY records of `truncates` (STATE_COLUMNS; other keys are ignored). The truncates are few, and
    broadcast. Only needed when there are any; callers know that from the landings' summaries."""
    last = truncates.where(F.col(KEY) == TABLE_KEY).groupBy(MODEL).agg(F.expr(f"max({_ORDERED})").alias("__truncate"))
    kept = F.expr(f"__truncate IS NULL OR {_ORDERED} >= __truncate")
    return state.join(F.broadcast(last), MODEL, "left").where(kept).select(*state.columns)


def live(state: DataFrame) -> DataFrame:
    """The keys a state holds: those whose last record is not a delete."""
    return state.where(F.col(KIND) != DELETE)
