"""Edge cases of consolidation found in review: batches, the latest view and column tests at their limits."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from snowplow_assets.cdc.batches import cut_batches, latest_batch
from snowplow_assets.cdc.column_tests import test_batch as run_column_tests_on
from snowplow_assets.cdc.history import IngestedLanding, ingest_landing
from snowplow_assets.cdc.latest import latest_table
from snowplow_assets.lake import Lake
from snowplow_assets.storage import LocalFileSystem
from snowplow_assets_tests.cdc.builders import DEBEZIUM, debezium, models, partial, raw_record, record, write_landing

MODELS = models()
T = 1_772_359_200_000  # 2026-03-01T10:00:00Z


def _ingest(spark, lake: Lake, name: str, lines: list[str]) -> IngestedLanding:
    write_landing(lake, name, lines)
    return ingest_landing(spark, LocalFileSystem(), lake, name, MODELS)


def _remove_landing(lake: Lake, name: str) -> None:
    """What an operator does to take a landing out: its folder, its histories and its summary."""
    for folder in (lake.cdc_landing(name), lake.cdc_history(name), lake.cdc_deletes(name), lake.cdc_bad(name)):
        shutil.rmtree(folder, ignore_errors=True)
    Path(lake.cdc_ingested(name)).unlink()


def _latest_keys(spark, lake: Lake) -> list[str]:
    table, _ = latest_table(spark, LocalFileSystem(), lake, MODELS.model("customers"))
    return sorted(r["id"] for r in table.collect())


def test_removing_every_landing_of_a_model_empties_its_next_batch_and_view(spark, lake):
    fs = LocalFileSystem()
    _ingest(spark, lake, "a", [partial(1, T, 0, {"email": None, "state": "gone"})])
    cut_batches(spark, fs, lake, MODELS, now_ms=T + 1)
    assert _latest_keys(spark, lake) == ["1"]

    _remove_landing(lake, "a")
    (result,) = [r for r in cut_batches(spark, fs, lake, MODELS, now_ms=T + 2) if r.model == "customers"]
    assert result.status == "cut" and "no longer ingested" in result.message
    batch = latest_batch(fs, lake, "customers")
    assert (batch.rows, batch.tombstones, batch.landings, batch.boundary_ms) == (0, 0, {}, T)
    assert _latest_keys(spark, lake) == [], "the removed landing's rows leave the view with the next batch"
    outcomes = run_column_tests_on(spark, fs, lake, MODELS.model("customers"), batch)
    assert [(o.passed, o.failing_rows) for o in outcomes] == [(True, 0)] * 3, "as for a model never landed"
    assert {o.message for o in outcomes} == {"no landing holds records of the model"}

    # Nothing holds the model any more, and the empty batch says so: later cuts leave it as it is.
    (result,) = [r for r in cut_batches(spark, fs, lake, MODELS, now_ms=T + 3) if r.model == "customers"]
    assert result.status == "no data" and result.batch == batch


def test_a_landing_whose_history_is_gone_fails_the_cut_and_the_view_instead_of_being_held_without_records(spark, lake):
    fs = LocalFileSystem()
    _ingest(spark, lake, "a", [partial(1, T, 0, {"email": "one@x", "state": "active"})])
    _ingest(spark, lake, "b", [partial(2, T + 1, 0, {"email": "two@x", "state": "active"}), partial(1, T + 2, 1, None)])
    shutil.rmtree(lake.cdc_history("b"))  # a lifecycle rule, a partial copy: the summary says it holds 1 change

    with pytest.raises(FileNotFoundError, match=r"landing b.*history of customers.*1 change"):
        cut_batches(spark, fs, lake, MODELS, now_ms=T + 10)
    assert latest_batch(fs, lake, "customers") is None, "no batch holds landing b without its records"
    with pytest.raises(FileNotFoundError, match=r"landing b.*history of customers"):
        _latest_keys(spark, lake)

    ingest_landing(spark, fs, lake, "b", MODELS)  # as the error says: the landing is ingested again
    cut_batches(spark, fs, lake, MODELS, now_ms=T + 10)
    assert _latest_keys(spark, lake) == ["2"]


def test_column_tests_compare_numbers_by_value_as_sql_does(spark, lake):
    """Two models, cut together:
    - rates: accepted values written with a fraction accept the whole numbers of an integer column;
    - zeros: a negative zero and a zero are one value to unique and accepted_values."""
    numbers = models(
        "models:\n"
        "  rates:\n    topics: [{topic: rates, contract: partial}]\n"
        "    tests: {accepted_values: {rate: [1.0, 2.0, 2.5, '4.0e0']}}\n"
        "  zeros:\n    topics: [{topic: zeros, contract: partial}]\n"
        "    tests: {unique: [x], accepted_values: {x: [0, 1.5]}}\n"
    )
    # A source's float column whose values happen to be whole (Debezium writes 20.0) is typed BIGINT: JSON
    # parsing keeps no trailing zeros. The tests' values are written as the source writes them.
    rates = [
        record("rates", {"rate": rate}, str(key), T, key)
        for key, rate in enumerate([1.0, 2.0, 3.0, 4.0, -0.0, 12345678.0], start=1)
    ]
    # -0e0 is a double -0.0, which equals 0.0 in SQL (and in every warehouse's dbt query), though its text differs.
    zeros = [
        raw_record("zeros", value, str(key), T, key)
        for key, value in enumerate(['{"x": -0e0}', '{"x": 0}', '{"x": 1.5}'])
    ]
    write_landing(lake, "a", [*rates, *zeros])
    fs = LocalFileSystem()
    ingest_landing(spark, fs, lake, "a", numbers)
    results = {r.model: r for r in cut_batches(spark, fs, lake, numbers, now_ms=T + 1)}

    assert results["rates"].batch.columns == {"rate": "BIGINT"}
    (outcome,) = run_column_tests_on(spark, fs, lake, numbers.model("rates"), results["rates"].batch)
    assert (outcome.failures, outcome.failing_rows, outcome.samples) == (3, 3, ("0", "12345678", "3"))

    assert results["zeros"].batch.columns == {"x": "DOUBLE"}
    unique, accepted = run_column_tests_on(spark, fs, lake, numbers.model("zeros"), results["zeros"].batch)
    assert (unique.passed, unique.failures, unique.failing_rows, unique.samples) == (False, 1, 2, ("0.0",))
    assert accepted.passed


def test_a_stray_row_with_a_key_equal_but_for_case_does_not_rename_the_column(spark, lake):
    """A later landing's one `Email` row: the column stays `email` with its values, and `Email` is skipped."""
    fs = LocalFileSystem()
    rows = [{"email": "one@x", "state": "active"}, {"email": "two@x", "state": "active"}]
    _ingest(spark, lake, "a", [partial(1, T, 0, rows[0]), partial(2, T + 1, 1, rows[1])])
    _ingest(spark, lake, "b", [partial(3, T + 2, 2, {"Email": "three@x", "state": "active"})])
    [result] = [r for r in cut_batches(spark, fs, lake, MODELS, now_ms=T + 3) if r.model == "customers"]
    assert result.batch.columns == {"email": "STRING", "state": "STRING"}
    assert result.batch.skipped_columns["Email"] == "same name as 'email' but for case"
    table, _ = latest_table(spark, fs, lake, MODELS.model("customers"))
    assert sorted((r["id"], r["email"]) for r in table.collect()) == [("1", "one@x"), ("2", "two@x"), ("3", None)]
    outcomes = run_column_tests_on(spark, fs, lake, MODELS.model("customers"), result.batch)
    assert [(o.test.check_name, o.failing_rows) for o in outcomes if not o.passed] == [
        ("customers__not_null__email", 1)
    ], "row 3 alone"


def _truncate(ts: int, offset: int) -> str:
    """Debezium's truncate of the table: no Kafka key, no row images."""
    return record(DEBEZIUM, {"payload": {"op": "t", "before": None, "after": None}}, None, ts, offset)


def test_a_debezium_truncate_removes_every_key_before_it_and_late_records_older_than_it(spark, lake):
    fs = LocalFileSystem()
    _ingest(
        spark,
        lake,
        "landing=1",
        [
            partial(1, T + 1_000, 0, {"email": "a"}),
            partial(2, T + 2_000, 1, {"email": "b"}),
            debezium("c", 3, T + 3_000, 0),
        ],
    )
    assert cut_batches(spark, fs, lake, MODELS, now_ms=T + 3_000)[0].batch.truncated_ms is None
    summary = _ingest(spark, lake, "landing=2", [_truncate(T + 5_000, 1), partial(4, T + 6_000, 2, {"email": "d"})])
    assert (summary.deletes, summary.bad, summary.models["customers"].truncates) == (1, 0, 1)
    assert _latest_keys(spark, lake) == ["4"], "the view applies the truncate before any batch holds it"

    [cut] = cut_batches(spark, fs, lake, MODELS, now_ms=T + 6_000)
    assert (cut.batch.mode, cut.batch.rows, cut.batch.tombstones, cut.batch.truncated_ms) == (
        "incremental",
        1,
        1,
        T + 5_000,
    )
    # Late records: one older than the truncate (gone with it), one newer (stays), in a landing after the batch.
    _ingest(
        spark,
        lake,
        "landing=3",
        [partial(1, T + 4_000, 3, {"email": "late"}), partial(2, T + 7_000, 4, {"email": "b2"})],
    )
    assert _latest_keys(spark, lake) == ["2", "4"]
    [cut] = cut_batches(spark, fs, lake, MODELS, now_ms=T + 7_000)
    assert (cut.batch.mode, cut.batch.rows, cut.batch.truncated_ms) == ("incremental", 2, T + 5_000)
    assert _latest_keys(spark, lake) == ["2", "4"]
    [full] = cut_batches(spark, fs, lake, MODELS, now_ms=T + 7_000, full=True)
    assert (full.batch.rows, full.batch.truncated_ms) == (2, T + 5_000), "a full recompute agrees"
