"""The CDC generator (datagen/cdc.py), checked without Spark against a replay of the lines it wrote."""

import gzip
import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from snowplow_assets.datagen.cdc import NEW_COLUMN, CdcGenerationOptions, generate_cdc_landings
from snowplow_assets_tests.cdc.builders import models

CUSTOMERS = models().model("customers")
OPTIONS = CdcGenerationOptions(
    keys=300, landings=4, update_rate=0.3, delete_rate=0.1, reinsert_rate=0.5, late_rate=0.1, duplicate_rate=0.05,
    seed=3, files=2,
)  # fmt: skip
T0 = int(OPTIONS.start.timestamp() * 1000)
SPAN = int(OPTIONS.interval.total_seconds() * 1000)


def _lines(folder: Path) -> list[dict]:
    lines = []
    for part in sorted(folder.glob("part-*")):
        text = gzip.decompress(part.read_bytes()).decode() if part.suffix == ".gz" else part.read_text()
        lines += [json.loads(line) for line in text.splitlines()]
    return lines


def _ms(record: dict) -> int:
    ts = record["__timestamp"]
    return ts if isinstance(ts, int) else int(datetime.fromisoformat(ts.replace("Z", "+00:00")).timestamp() * 1000)


def _change(record: dict) -> tuple[str, str, dict | None]:
    """(key, kind, row) by the contract of the record's topic: an independent reading of FORMATS.md §7."""
    value = record["__value"]
    value = json.loads(value) if isinstance(value, str) else value
    if record["__topic"] == "customers_raw":
        return record["__key"], "delete" if value is None else "update", value
    if record["__topic"] == "customer_events":
        if value["changeType"] == "DELETE":
            return str(value["deletedID"]), "delete", None
        return str(value["data"]["customerId"]), value["changeType"].lower(), value["data"]
    key = str(json.loads(record["__key"])["id"])
    if value is None:
        return key, "delete", None
    payload = value.get("payload", value)
    kind = {"c": "insert", "r": "insert", "u": "update", "d": "delete"}[payload["op"]]
    return key, kind, payload["after"]


@pytest.fixture(scope="module")
def generated(tmp_path_factory):
    root = tmp_path_factory.mktemp("landings")
    return root, generate_cdc_landings(root, CUSTOMERS, OPTIONS)


def test_landings_are_named_by_their_start_and_marked_complete(generated):
    root, generation = generated
    assert [s.folder.name for s in generation.landings] == [
        "landing=2026-03-01-10-00-00", "landing=2026-03-01-10-10-00", "landing=2026-03-01-10-20-00", "landing=2026-03-01-10-30-00",
    ]  # fmt: skip
    assert all((s.folder / "_SUCCESS").exists() and len(s.files) == 2 for s in generation.landings)
    assert all(s.records == len(_lines(s.folder)) for s in generation.landings)


def test_counts_by_contract_are_of_the_records_landed(generated):
    """Late records and second copies included, so they add up to the landing's records."""
    _, generation = generated
    contracts = {topic.topic: topic.contract for topic in CUSTOMERS.topics}
    for stats in generation.landings:
        landed: dict[str, int] = {}
        for record in _lines(stats.folder):
            landed[contracts[record["__topic"]]] = landed.get(contracts[record["__topic"]], 0) + 1
        assert stats.by_contract == landed and sum(landed.values()) == stats.records
    assert any(s.late for s in generation.landings) and any(s.duplicates for s in generation.landings)


def test_all_three_contracts_and_their_shapes(generated):
    _, generation = generated
    first = _lines(generation.landings[0].folder)
    assert {r["__topic"] for r in first} == {"shop.customers", "customer_events", "customers_raw"}
    values = [
        json.loads(r["__value"]) if isinstance(r["__value"], str) else r["__value"]
        for r in first
        if r["__topic"] == "shop.customers"
    ]
    assert {v.get("payload", v)["op"] for v in values} == {"r"}, "the first landing is a snapshot"
    assert any("payload" in v for v in values) and any("payload" not in v for v in values)
    assert any(isinstance(r["__timestamp"], int) for r in first) and any(
        isinstance(r["__timestamp"], str) for r in first
    )
    assert any(isinstance(r["__value"], str) for r in first) and any(isinstance(r["__value"], dict) for r in first)
    assert generation.landings[0].inserts == OPTIONS.keys


def test_late_records_keep_their_older_timestamps(generated):
    _, generation = generated
    for index, stats in enumerate(generation.landings[1:], start=1):
        own_span = T0 + index * SPAN
        older = [r for r in _lines(stats.folder) if _ms(r) < own_span]
        late_or_copied = stats.late + stats.duplicates
        assert stats.late > 0 and stats.late <= len(older) <= late_or_copied


def test_deletes_come_with_tombstones_and_duplicates_are_exact_copies(generated):
    _, generation = generated
    everything = [line for s in generation.landings for line in _lines(s.folder)]
    coordinates = [(r["__topic"], r["__partition"], r["__offset"]) for r in everything]
    copies = len(coordinates) - len(set(coordinates))
    assert copies == sum(s.duplicates for s in generation.landings) > 0
    by_coordinates = {}
    for record in everything:
        by_coordinates.setdefault((record["__topic"], record["__partition"], record["__offset"]), []).append(record)
    assert all(all(r == records[0] for r in records) for records in by_coordinates.values())
    tombstones = [r for r in everything if r["__topic"] == "shop.customers" and r["__value"] in (None, "null")]
    assert (
        len({(r["__partition"], r["__offset"]) for r in tombstones})
        == sum(s.tombstones for s in generation.landings)
        > 0
    )
    nulls = {repr(r["__value"]) for r in everything if r["__value"] in (None, "null")}
    assert nulls == {"None", "'null'"}, "both forms of a null value"


def test_expected_state_is_a_replay_of_the_lines_written(generated):
    _, generation = generated
    last: dict[str, tuple] = {}
    rank = {"insert": 0, "update": 1, "delete": 2}
    for stats in generation.landings:
        for record in _lines(stats.folder):
            key, kind, row = _change(record)
            order = (_ms(record), rank[kind], record["__topic"], record["__partition"], record["__offset"])
            if key not in last or order > last[key][0]:
                last[key] = (order, kind, row)
    assert generation.expected == {key: row for key, (_, kind, row) in last.items() if kind != "delete"}
    deleted = [key for key, (_, kind, _) in last.items() if kind == "delete"]
    assert deleted and sum(s.inserts for s in generation.landings[1:]) > 0, "deletes and re-inserts both happen"


def test_generation_is_deterministic_and_never_overwrites(tmp_path, generated):
    root, generation = generated
    again = generate_cdc_landings(tmp_path, CUSTOMERS, OPTIONS)
    assert [p.read_bytes() for s in again.landings for p in s.files] == [
        p.read_bytes() for s in generation.landings for p in s.files
    ]
    with pytest.raises(FileExistsError):
        generate_cdc_landings(tmp_path, CUSTOMERS, OPTIONS)


def test_contract_filter_new_column_and_gzip(tmp_path):
    options = CdcGenerationOptions(
        keys=50,
        landings=3,
        contracts=("event",),
        new_column_from=2,
        gzip=True,
        start=datetime(2026, 1, 1, tzinfo=UTC),
        interval=timedelta(seconds=30),
    )
    generation = generate_cdc_landings(tmp_path, CUSTOMERS, options)
    lines = [_lines(s.folder) for s in generation.landings]
    assert {r["__topic"] for landing in lines for r in landing} == {"customer_events"}
    assert all(p.suffix == ".gz" for s in generation.landings for p in s.files)
    rows = [
        [json.loads(r["__value"]) if isinstance(r["__value"], str) else r["__value"] for r in landing]
        for landing in lines
    ]
    assert not any(NEW_COLUMN in v.get("data", {}) for v in rows[0])
    assert any(NEW_COLUMN in v.get("data", {}) for v in rows[2])


@pytest.mark.parametrize(
    "bad",
    [
        {"keys": 0},
        {"update_rate": 1.5},
        {"update_rate": 0.7, "delete_rate": 0.5},
        {"interval": timedelta(milliseconds=10)},
    ],
)
def test_invalid_options(bad):
    with pytest.raises(ValueError):
        CdcGenerationOptions(**bad)
