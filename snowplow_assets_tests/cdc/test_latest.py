"""The latest view (latest.py) on generated landings: fresh without a batch, equal to the true state."""

import json
from decimal import Decimal
from pathlib import Path

import pytest

from snowplow_assets.cdc import column_tests
from snowplow_assets.cdc.batches import cut_batches
from snowplow_assets.cdc.history import HISTORY_SCHEMA, Window, ingest_landing
from snowplow_assets.cdc.latest import latest_table, write_latest
from snowplow_assets.cdc.models import key_text
from snowplow_assets.datagen.cdc import CdcGenerationOptions, generate_cdc_landings
from snowplow_assets.lake import Lake
from snowplow_assets.storage import LocalFileSystem
from snowplow_assets_tests.cdc.builders import (
    DEBEZIUM,
    ORDER_LINES_YAML,
    PARTIAL,
    debezium,
    models,
    partial,
    record,
    write_landing,
)

MODELS = models()
CUSTOMERS = MODELS.model("customers")
OPTIONS = CdcGenerationOptions(
    keys=120, landings=3, update_rate=0.3, delete_rate=0.2, reinsert_rate=0.5, late_rate=0.1, duplicate_rate=0.1, seed=7
)


@pytest.fixture(scope="module")
def generated(spark, tmp_path_factory):
    lake, fs = Lake(str(tmp_path_factory.mktemp("latest") / "lake")), LocalFileSystem()
    generation = generate_cdc_landings(Path(lake.cdc_landings), CUSTOMERS, OPTIONS)
    first, second, third = (stats.folder.name for stats in generation.landings)
    ingest_landing(spark, fs, lake, first, MODELS)
    ingest_landing(spark, fs, lake, second, MODELS)
    cut_batches(spark, fs, lake, MODELS)
    ingest_landing(spark, fs, lake, third, MODELS)  # after the last batch
    table, sources = latest_table(spark, fs, lake, CUSTOMERS)
    return lake, generation, table.collect(), table.columns, sources


def _as_landed(row: dict) -> dict:
    """A generated row as the latest view shows it: its key column apart, its other keys as columns."""
    return {column: value for column, value in row.items() if column != "id"}


def test_latest_equals_the_true_state_though_no_batch_ran_since_the_last_landing(generated):
    _, generation, rows, _, sources = generated
    got = {r["id"]: {c: v for c, v in r.asDict().items() if c != "id" and v is not None} for r in rows}
    assert got == {key: _as_landed(row) for key, row in generation.expected.items()}
    third = generation.landings[2].folder.name
    assert sources.batch is not None and third not in sources.batch.landings
    assert sources.reads[third] == Window(), "a landing the batch does not hold is read whole"
    assert all(w == Window(sources.batch.boundary_ms, None) for name, w in sources.reads.items() if name != third)


def test_columns_are_typed_and_sorted_after_the_key(generated):
    _, _, _, columns, sources = generated
    assert columns == ["id", *sorted(sources.columns.types)]
    assert sources.columns.types == {
        "country": "STRING", "customerId": "BIGINT", "email": "STRING", "lifetime_value": "DOUBLE",
        "marketing_opt_in": "BOOLEAN", "name": "STRING", "orders": "BIGINT", "state": "STRING",
    }  # fmt: skip


def test_selected_columns(spark, generated):
    lake, _, rows, _, _ = generated
    table, _ = latest_table(spark, LocalFileSystem(), lake, CUSTOMERS, ["state", "email"])
    assert table.columns == ["id", "state", "email"]
    assert sorted(tuple(r) for r in table.collect()) == sorted((r["id"], r["state"], r["email"]) for r in rows)
    with pytest.raises(KeyError, match="nope"):
        latest_table(spark, LocalFileSystem(), lake, CUSTOMERS, ["nope"])


def test_materialised_latest_is_the_same_table(spark, generated):
    lake, _, rows, columns, _ = generated
    [manifest] = write_latest(spark, LocalFileSystem(), lake, [CUSTOMERS])
    written = spark.read.parquet(LocalFileSystem().spark_read_path(lake.cdc_latest("customers")))
    assert written.columns == columns
    assert sorted(tuple(r) for r in written.collect()) == sorted(tuple(r) for r in rows)
    assert manifest.rows == len(rows) and manifest.columns["id"] == "STRING"
    assert json.loads(Path(lake.cdc_latest("customers"), "_latest.json").read_text())["rows"] == len(rows)


def test_integers_beyond_64_bits_are_exact_and_a_column_test_compares_them_exactly(spark, lake):
    """Until 2026-11-28 a value beyond 64 bits made its column DOUBLE: both rows read 1.2345678901234567E19."""
    fs = LocalFileSystem()
    big, bigger = 12345678901234567890, 12345678901234567891
    rows = [partial(1, 1_000, 0, {"ext": big}), partial(2, 1_000, 1, {"ext": bigger}), partial(3, 1_000, 2, {"ext": 7})]
    write_landing(lake, "landing=x", rows)
    ingest_landing(spark, fs, lake, "landing=x", MODELS)
    table, sources = latest_table(spark, fs, lake, CUSTOMERS)
    assert sources.columns.types["ext"] == "DECIMAL(38,0)"
    assert {row["ext"] for row in table.collect()} == {Decimal(big), Decimal(bigger), Decimal(7)}

    model = models(
        f"models:\n  customers:\n    topics: [{{topic: {PARTIAL}, contract: partial}}]\n"
        f"    tests: {{accepted_values: {{ext: ['{big}.0', '{bigger}.5', '7e0', 'x']}}}}\n"
    ).model("customers")
    [outcome] = column_tests.run_column_tests(table, model, sources.columns)
    assert outcome.samples == (str(bigger),), f"{bigger}.5 names no whole number, and a cast would round it: {outcome}"


def test_a_model_whose_keys_are_all_deleted_is_an_empty_table(spark, lake):
    fs = LocalFileSystem()
    write_landing(lake, "landing=x", [partial(1, 1_000, 0, {"email": "a@x"}), partial(1, 2_000, 1, None)])
    ingest_landing(spark, fs, lake, "landing=x", MODELS)
    [manifest] = write_latest(spark, fs, lake, [CUSTOMERS])
    assert manifest.rows == 0 and manifest.batch_boundary_ms is None
    assert spark.read.parquet(LocalFileSystem().spark_read_path(lake.cdc_latest("customers"))).columns == [
        "id",
        "email",
    ]
    assert (
        spark.read.schema(HISTORY_SCHEMA)
        .parquet(LocalFileSystem().spark_read_path(lake.cdc_history("landing=x")))
        .count()
        == 1
    )


def test_a_row_replaced_in_one_transaction_is_the_new_row_in_every_view(spark, lake):
    """A delete and an insert of one key in one transaction reach Kafka at one millisecond, in offset order."""
    fs = LocalFileSystem()
    write_landing(
        lake,
        "landing=1",
        [debezium("c", 5, 1_000, 0, {"email": "old@x"}), debezium("c", 7, 1_000, 1, {"email": "c@x"})],
    )
    ingest_landing(spark, fs, lake, "landing=1", MODELS)
    cut_batches(spark, fs, lake, MODELS, now_ms=2_000)
    tombstone = record(DEBEZIUM, None, '{"id": 5}', 5_000, 3)
    replaced = [
        debezium("d", 5, 5_000, 2, {"email": "old@x"}),
        tombstone,
        debezium("c", 5, 5_000, 4, {"email": "new@x"}),
    ]
    created_then_deleted = [debezium("c", 8, 5_000, 5, {"email": "d@x"}), debezium("d", 8, 5_000, 6, {"email": "d@x"})]
    write_landing(lake, "landing=2", [*reversed(replaced), *created_then_deleted])
    ingest_landing(spark, fs, lake, "landing=2", MODELS)

    def latest() -> dict:
        table, _ = latest_table(spark, fs, lake, CUSTOMERS, ["email"])
        return {r["id"]: r["email"] for r in table.collect()}

    expected = {"5": "new@x", "7": "c@x"}
    assert latest() == expected, "the previous batch merged with the newer records"
    [incremental] = cut_batches(spark, fs, lake, MODELS, now_ms=9_000)
    batch = incremental.batch
    assert (batch.mode, batch.boundary_ms, batch.rows, batch.tombstones) == ("incremental", 5_000, 2, 1)
    assert latest() == expected
    [full] = cut_batches(spark, fs, lake, MODELS, now_ms=9_000, full=True)
    assert (full.batch.mode, full.batch.rows, full.batch.tombstones) == ("full", 2, 1)
    assert latest() == expected


# The order before ORDER_VERSION 2: the kind before the coordinates.
_ORDER_1 = (
    "struct(__timestamp, CASE __kind WHEN 'insert' THEN 0 WHEN 'update' THEN 1 ELSE 2 END AS __rank, "
    "__topic, __partition, __offset, __data, __kind)"
)


def test_a_batch_cut_under_an_earlier_order_is_replayed_then_recomputed(spark, lake, monkeypatch):
    """A lake upgraded from the first order: its batch lost the replaced row; nothing may read it again."""
    fs = LocalFileSystem()
    replaced = [debezium("c", 5, 1_000, 0, {"email": "old@x"}), debezium("d", 5, 5_000, 1, {"email": "old@x"})]
    replaced += [record(DEBEZIUM, None, '{"id": 5}', 5_000, 2), debezium("c", 5, 5_000, 3, {"email": "new@x"})]
    write_landing(lake, "landing=1", replaced)
    ingest_landing(spark, fs, lake, "landing=1", MODELS)
    with monkeypatch.context() as old:
        old.setattr("snowplow_assets.cdc.order._ORDERED", _ORDER_1)
        old.setattr("snowplow_assets.cdc.models.ORDER_VERSION", 1)
        [cut] = cut_batches(spark, fs, lake, models(), now_ms=9_000)
    assert (cut.batch.rows, cut.batch.tombstones) == (0, 1), "the first order deleted the replaced row"

    table, sources = latest_table(spark, fs, lake, CUSTOMERS, ["email"])
    assert {r["id"]: r["email"] for r in table.collect()} == {"5": "new@x"}
    assert sources.batch is None and sources.reads == {"landing=1": Window()}
    [recut] = cut_batches(spark, fs, lake, MODELS, now_ms=9_000)
    assert (recut.batch.mode, recut.batch.rows, recut.batch.tombstones) == ("full", 1, 0)
    assert "order of changes" in recut.batch.reason
    table, sources = latest_table(spark, fs, lake, CUSTOMERS, ["email"])
    assert {r["id"]: r["email"] for r in table.collect()} == {"5": "new@x"} and sources.batch == recut.batch


LINES_MODELS = models(ORDER_LINES_YAML)
ORDER_LINES = LINES_MODELS.model("order_lines")


def test_a_model_keyed_by_two_columns_keeps_every_line_of_an_order(spark, tmp_path):
    """Generated lines keyed by (order_id, line_no) through all three contracts, each order with many lines:
    batches and the latest view hold one row per pair, where a key of one column kept one row per order."""
    lake, fs = Lake(str(tmp_path / "lake")), LocalFileSystem()
    generation = generate_cdc_landings(Path(lake.cdc_landings), ORDER_LINES, OPTIONS)
    first, second, third = (stats.folder.name for stats in generation.landings)
    for landing in (first, second):
        ingest_landing(spark, fs, lake, landing, LINES_MODELS)
    cut_batches(spark, fs, lake, LINES_MODELS)
    ingest_landing(spark, fs, lake, third, LINES_MODELS)

    table, sources = latest_table(spark, fs, lake, ORDER_LINES)
    rows = table.collect()
    assert table.columns[:2] == ["order_id", "line_no"] and sources.batch is not None
    got = {
        key_text([r["order_id"], r["line_no"]]): {c: v for c, v in r.asDict().items() if c not in ORDER_LINES.id}
        for r in rows
    }
    expected = {
        key: {c: row.get(c) for c in table.columns if c not in ORDER_LINES.id}
        for key, row in generation.expected.items()
    }
    assert got == expected
    orders = {r["order_id"] for r in rows}
    assert len(rows) == len(generation.expected) > 2 * len(orders), "orders of many lines, each line kept"

    [cut] = cut_batches(spark, fs, lake, LINES_MODELS)
    outcomes = {o.test.test: o for o in column_tests.test_batch(spark, fs, lake, ORDER_LINES, cut.batch)}
    shared = sum(1 for order in orders if sum(r["order_id"] == order for r in rows) > 1)
    assert outcomes["not_null"].passed, "the key columns are columns the tests can name"
    assert (outcomes["unique"].passed, outcomes["unique"].failures) == (False, shared)

    [manifest] = write_latest(spark, fs, lake, [ORDER_LINES])
    written = spark.read.parquet(LocalFileSystem().spark_read_path(lake.cdc_latest("order_lines")))
    assert written.columns == table.columns and written.count() == len(rows)
    assert {c: manifest.columns[c] for c in ORDER_LINES.id} == {"order_id": "STRING", "line_no": "STRING"}
