"""Property: every batch at its boundary, and the latest view, equal a plain replay of the landed records.

Hypothesis draws a sequence of landing folders holding random interleavings of inserts, updates, deletes
and Debezium truncates in the three contracts, for a few keys (of one column or, in odd scenarios, two) and
few timestamps, so that ties on the timestamp, late records (older than a boundary already cut), duplicates
(the same Kafka record landed again), Debezium tombstones and re-inserts after deletes are common. Between
landings it re-ingests earlier landings and cuts batches at random "now"s, incrementally or in full.

The replay is plain Python: sort all of a key's records by the documented order, keep the last, drop the
key if that is a delete or comes before the model's last truncate. Each example runs many independent scenarios at once, one model per scenario, so
one Spark job ingests, cuts or reads all of them. An example costs its Spark jobs whatever its number of
scenarios, so the search draws few examples of many scenarios: 2 of 12 (besides the explicit one), as many
scenarios as 3 of 8, each scenario with records, ties, late records and tombstones of its own against the
example's landings and cuts.
"""

from __future__ import annotations

import json
import tempfile
from dataclasses import dataclass, field
from datetime import UTC, datetime

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from pyspark.sql import functions as F

from snowplow_assets.cdc.batches import batch_files, cut_batches, latest_batch, list_batches
from snowplow_assets.cdc.history import ingest_landing, read_ingested, read_parquet_files
from snowplow_assets.cdc.latest import latest_state
from snowplow_assets.cdc.models import key_text, parse_models
from snowplow_assets.cdc.order import STATE_SCHEMA, TABLE_KEY, order_key
from snowplow_assets.lake import Lake
from snowplow_assets.storage import LocalFileSystem
from snowplow_assets_tests.cdc.builders import write_landing

SCENARIOS = 12
T0 = 1_772_359_200_000
CONTRACTS = ("partial", "debezium", "event")
# Odd scenarios key their model by two columns: (id, line) in the rows, (customerId, lineNo) in the events.
MODELS = parse_models(
    "models:\n"
    + "".join(
        f"  s{i}:\n    id: [id, line]\n    topics:\n      - {{topic: s{i}.raw, contract: partial}}\n"
        f"      - {{topic: s{i}.dbz, contract: debezium}}\n"
        f"      - {{topic: s{i}.evt, contract: event, id_field: [customerId, lineNo]}}\n"
        if i % 2
        else f"  s{i}:\n    topics:\n      - {{topic: s{i}.raw, contract: partial}}\n"
        f"      - {{topic: s{i}.dbz, contract: debezium}}\n"
        f"      - {{topic: s{i}.evt, contract: event, id_field: customerId}}\n"
        for i in range(SCENARIOS)
    )
)
TOPIC = {"partial": "raw", "debezium": "dbz", "event": "evt"}


@dataclass(frozen=True)
class Rec:
    scenario: int
    contract: str
    change: str  # insert, update, delete or (Debezium only) truncate, as the source meant it
    key: int
    ms: int
    partition: int
    offset: int
    value: int
    iso: bool  # __timestamp as ISO-8601 instead of epoch milliseconds
    text: bool  # __value as a JSON string instead of an object
    tombstone: bool = False  # a Debezium tombstone after a delete
    snapshot: bool = False  # Debezium op r instead of c

    @property
    def model(self) -> str:
        return f"s{self.scenario}"

    @property
    def topic(self) -> str:
        return f"s{self.scenario}.{TOPIC[self.contract]}"

    @property
    def kind(self) -> str:
        """What the contract makes of it: a partial row cannot say insert."""
        if self.change == "truncate":
            return "delete"
        return "update" if self.contract == "partial" and self.change != "delete" else self.change

    @property
    def two_columns(self) -> bool:
        """Whether its scenario's model is keyed by two columns (MODELS)."""
        return self.scenario % 2 == 1

    @property
    def key_fields(self) -> dict[str, int]:
        """The key as its topic's fields: the key itself, or for a model of two key columns the key's halves,
        so that many keys share each part."""
        names = ("customerId", "lineNo") if self.contract == "event" else ("id", "line")
        return {names[0]: self.key // 2, names[1]: self.key % 2} if self.two_columns else {names[0]: self.key}

    @property
    def key_text(self) -> str:
        if self.change == "truncate":
            return TABLE_KEY
        return key_text([str(part) for part in self.key_fields.values()])

    @property
    def row(self) -> dict | None:
        if self.change in ("delete", "truncate"):
            return None
        return {**self.key_fields, "v": self.value}

    def line(self) -> str:
        single = not self.two_columns
        if self.contract == "partial":
            value, kafka_key = self.row, str(self.key) if single else json.dumps(self.key_fields)
        elif self.contract == "event":
            value = (
                {"changeType": "DELETE", "deletedID": self.key if single else self.key_fields}
                if self.row is None
                else {"changeType": self.change.upper(), "data": self.row}
            )
            kafka_key = str(self.key)
        else:
            kafka_key = json.dumps({"id": self.key} if single else self.key_fields)
            if self.tombstone:
                value = None
            elif self.change == "truncate":
                kafka_key, payload = None, {"op": "t", "before": None, "after": None}
                value = {"payload": payload} if self.value % 3 else payload
            else:
                op = {"insert": "r" if self.snapshot else "c", "update": "u", "delete": "d"}[self.change]
                before = self.key_fields if self.change == "delete" and self.value % 2 else None
                payload = {"op": op, "before": before, "after": self.row}
                value = {"payload": payload} if self.value % 3 else payload
        if value is not None and self.text:
            value = json.dumps(value)
        ts = (
            datetime.fromtimestamp((T0 + self.ms) / 1000, UTC).isoformat(timespec="milliseconds")
            if self.iso
            else T0 + self.ms
        )
        return json.dumps(
            {
                "__topic": self.topic,
                "__partition": self.partition,
                "__offset": self.offset,
                "__timestamp": ts,
                "__key": kafka_key,
                "__value": value,
            }
        )

    def order(self) -> tuple:
        data = None if self.row is None else json.dumps(self.row, sort_keys=True, separators=(",", ":"))
        return order_key(self.kind, T0 + self.ms, self.topic, self.partition, self.offset, data)


@dataclass
class Step:
    records: list[Rec]
    reingest: int | None = None  # index of an earlier landing ingested again after this one
    cut: tuple[int, bool] | None = None  # (now, in ms after T0; full recompute) of a batch cut after it


@dataclass
class Plan:
    steps: list[Step] = field(default_factory=list)


@st.composite
def plans(draw) -> Plan:
    plan = Plan()
    offsets: dict[tuple[int, str, int], int] = {}
    landed: list[Rec] = []
    for index in range(draw(st.integers(2, 4))):
        records: list[Rec] = []
        for scenario in range(SCENARIOS):
            for _ in range(draw(st.integers(0, 5))):
                if landed and draw(st.integers(0, 5)) == 0:  # the same Kafka record, landed again
                    records.append(draw(st.sampled_from(landed)))
                    continue
                contract, partition = draw(st.sampled_from(CONTRACTS)), draw(st.integers(0, 1))
                slot = (scenario, contract, partition)
                offset = offsets[slot] = offsets.get(slot, -1) + 1
                change = draw(st.sampled_from(("insert", "update", "delete")))
                if contract == "debezium" and draw(st.integers(0, 7)) == 0:
                    change = "truncate"
                rec = Rec(
                    scenario, contract, change, draw(st.integers(1, 3)),
                    draw(st.integers(0, 12)), partition, offset, draw(st.integers(0, 99)), draw(st.booleans()),
                    draw(st.booleans()), snapshot=draw(st.booleans()),
                )  # fmt: skip
                records.append(rec)
                if contract == "debezium" and rec.change == "delete" and draw(st.booleans()):
                    offsets[slot] += 1
                    records.append(
                        Rec(
                            scenario,
                            contract,
                            "delete",
                            rec.key,
                            rec.ms,
                            partition,
                            offsets[slot],
                            rec.value,
                            rec.iso,
                            False,
                            tombstone=True,
                        )
                    )
        landed += records
        reingest = draw(st.none() | st.integers(0, index))
        cut = draw(st.none() | st.tuples(st.integers(0, 14), st.booleans()))
        plan.steps.append(Step(records, reingest, cut))
    return plan


def replay(records: list[Rec]) -> dict[tuple[str, str], dict | None]:
    """(model, key) -> row, or None for a key whose last change is a delete; a model's last truncate is kept
    as such, and no key whose last change came before it."""
    last: dict[tuple[str, str], Rec] = {}
    for rec in records:
        slot = (rec.model, rec.key_text)
        if slot not in last or rec.order() > last[slot].order():
            last[slot] = rec
    truncate = {model: rec.order() for (model, key), rec in last.items() if key == TABLE_KEY}
    return {slot: rec.row for slot, rec in last.items() if slot[0] not in truncate or rec.order() >= truncate[slot[0]]}


def boundary(records: list[Rec], now: int, previous: int | None) -> int | None:
    """The latest record, capped at now, never before the previous boundary."""
    if not records:
        return None
    capped = min(T0 + max(r.ms for r in records), T0 + now)
    return capped if previous is None else max(capped, previous)


def _state(rows) -> dict[tuple[str, str], dict | None]:
    return {(r["__model"], r["__key"]): json.loads(r["__data"]) if r["__data"] else None for r in rows}


# The seed pipe's mistake: a key deleted, then inserted again before the boundary, must stay.
REINSERTED = Plan(
    [
        Step(
            [
                Rec(0, "partial", "insert", 1, 1, 0, 0, 1, False, False),
                Rec(0, "partial", "delete", 1, 2, 0, 1, 1, True, False),
            ]
        ),
        Step(
            [
                Rec(0, "event", "insert", 1, 3, 0, 0, 2, False, True),
                Rec(0, "debezium", "update", 2, 4, 0, 0, 3, False, False),
            ],
            cut=(9, False),
        ),
        # a late delete, older than all
        Step([Rec(0, "debezium", "delete", 1, 0, 1, 0, 5, True, False)], reingest=0, cut=(9, False)),
    ]
)


# A truncate: a key before it goes, one after it stays; a late record older than it, landed after a batch
# took the truncate in, goes too, and so does one older than it in a landing that a full cut reads.
TRUNCATED = Plan(
    [
        Step(
            [
                Rec(1, "partial", "insert", 1, 1, 0, 0, 1, False, False),
                Rec(1, "event", "insert", 2, 2, 0, 0, 2, False, False),
                Rec(1, "debezium", "truncate", 0, 4, 0, 0, 3, False, True),
                Rec(1, "debezium", "insert", 3, 5, 0, 1, 4, True, False),
            ],
            cut=(9, False),
        ),
        Step([Rec(1, "partial", "update", 2, 3, 1, 0, 5, False, False)], cut=(9, False)),
        Step([Rec(1, "event", "update", 1, 6, 1, 0, 6, False, False)], cut=(9, True)),
    ]
)


@settings(
    max_examples=2,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.function_scoped_fixture],
)
@example(REINSERTED)
@example(TRUNCATED)
@given(plans())
def test_batches_and_latest_view_equal_a_plain_replay(spark, plan: Plan):
    fs = LocalFileSystem()
    with tempfile.TemporaryDirectory() as root:
        lake = Lake(root)
        landings: dict[str, list[Rec]] = {}
        boundaries: dict[str, int] = {}
        expected_batches: dict[tuple[str, int], dict] = {}  # (model, boundary) -> replay up to it
        for index, step in enumerate(plan.steps):
            name = f"landing={index:03d}"
            write_landing(lake, name, [rec.line() for rec in step.records])
            ingest_landing(spark, fs, lake, name, MODELS)
            landings[name] = step.records
            if step.reingest is not None:
                ingest_landing(spark, fs, lake, f"landing={step.reingest:03d}", MODELS)
            if step.cut is None:
                continue
            now, full = step.cut
            cut_batches(spark, fs, lake, MODELS, now_ms=T0 + now, full=full)
            tokens = {name: landing.token for name, landing in read_ingested(fs, lake).items()}
            for model in MODELS.models:
                held = [name for name, recs in landings.items() if any(r.model == model for r in recs)]
                records = [r for name in held for r in landings[name] if r.model == model]
                expected = boundary(records, now, boundaries.get(model))
                batch = latest_batch(fs, lake, model)
                if expected is None:
                    assert batch is None
                    continue
                assert batch is not None and batch.boundary_ms == expected, (model, batch, expected)
                assert batch.landings == {name: tokens[name] for name in held}
                boundaries[model] = expected
                expected_batches[(model, expected)] = replay([r for r in records if T0 + r.ms <= expected])

        # Every batch cut (a batch re-cut at the same boundary replaced the earlier one), read in one job.
        batches = [b for model in MODELS.models for b in list_batches(fs, lake, model)]
        assert {(b.model, b.boundary_ms) for b in batches} == set(expected_batches)
        files = [f for batch in batches for f in batch_files(fs, lake, batch)]
        rows = (
            (
                read_parquet_files(spark, fs, files, STATE_SCHEMA)
                .withColumn(
                    "boundary", F.regexp_extract(F.col("_metadata.file_path"), "/boundary=(-?[0-9]+)/", 1).cast("long")
                )
                .collect()
            )
            if files
            else []
        )
        got: dict[tuple[str, int], dict] = {key: {} for key in expected_batches}
        for row in rows:
            got[(row["__model"], row["boundary"])][(row["__model"], row["__key"])] = (
                json.loads(row["__data"]) if row["__data"] else None
            )
        assert got == expected_batches

        state, _ = latest_state(spark, fs, lake, list(MODELS.models.values()))
        everything = [r for recs in landings.values() for r in recs]
        assert _state(state.collect()) == {slot: row for slot, row in replay(everything).items() if row is not None}
