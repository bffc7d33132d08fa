"""dbt's generic column tests (`not_null`, `unique`, `accepted_values`) on a model's batch.

As in dbt, each test is a query for failing rows and passes when it returns none; `failures` is the number
of rows that query returns:
- `not_null`: the rows whose column is null.
- `unique`: the non-null values found in more than one row (one failure per value). Nulls are ignored, as
  dbt's `where <column> is not null` does. Values are grouped as SQL compares them: a DOUBLE's -0.0 is 0.0
  (until 2026-11-27 the two, grouped by their text, were two values).
- `accepted_values`: the distinct values not in the list (one failure per value). Nulls pass: dbt's
  `value not in (...)` is not true for a null; add `not_null` to forbid them. dbt quotes the values, and
  the warehouse casts them to the column's type to compare; so here: `1` accepts 1.0 in a DOUBLE column,
  `true` a true BOOLEAN, and a value that cannot be the column's type accepts nothing. In an integer column
  (BIGINT, DECIMAL(38,0)) the values are compared as exact numbers: `2.0` (or `2e0`) accepts 2, `2.5`
  nothing. A source's float column whose values are all whole is typed BIGINT (columns.py), and its tests'
  values are written as floats; until 2026-11-27 such a value accepted nothing there, and every row failed.
A test of a column the model does not have fails, as dbt's query would fail.

All tests of a model run in one Spark job; the rows they count and up to five failing values are kept for
the check's metadata.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, replace
from decimal import Decimal, InvalidOperation

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from snowplow_assets.cdc.batches import ROWS, BatchManifest, read_batches
from snowplow_assets.cdc.columns import INTEGER_TYPES, ModelColumns, typed_view
from snowplow_assets.cdc.models import ModelSpec
from snowplow_assets.events.sql import identifier, literal
from snowplow_assets.lake import Lake
from snowplow_assets.storage import LakeFileSystem

NOT_NULL, UNIQUE, ACCEPTED_VALUES = "not_null", "unique", "accepted_values"
SAMPLES = 5


@dataclass(frozen=True)
class ColumnTest:
    model: str
    test: str
    column: str
    values: tuple[str, ...] = ()  # accepted values, as text

    @property
    def check_name(self) -> str:
        """A Dagster check name: `<model>__<test>__<column>`, the column made an identifier."""
        slug = re.sub(r"[^A-Za-z0-9_]", "_", self.column)
        if slug != self.column:
            slug += "_" + hashlib.sha1(self.column.encode()).hexdigest()[:6]
        return f"{self.model}__{self.test}__{slug}"

    @property
    def description(self) -> str:
        if self.test == ACCEPTED_VALUES:
            return f"{self.column} of {self.model} is one of {list(self.values)} or null (dbt accepted_values)."
        what = {NOT_NULL: "is never null", UNIQUE: "has no value in more than one row"}[self.test]
        return f"{self.column} of {self.model} {what} (dbt {self.test})."


@dataclass(frozen=True)
class TestOutcome:
    test: ColumnTest
    passed: bool
    failures: int
    failing_rows: int
    samples: tuple[str, ...]
    message: str


def accepted_text(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def declared_tests(model: ModelSpec) -> list[ColumnTest]:
    tests = model.tests
    return [
        *(ColumnTest(model.name, NOT_NULL, column) for column in tests.not_null),
        *(ColumnTest(model.name, UNIQUE, column) for column in tests.unique),
        *(
            ColumnTest(model.name, ACCEPTED_VALUES, column, tuple(accepted_text(v) for v in values))
            for column, values in tests.accepted_values.items()
        ),
    ]


def _bad_row(test: ColumnTest, column_type: str) -> str:
    """SQL: this row fails the test by itself (unique needs the other rows: decided after grouping)."""
    column = identifier(test.column)
    if test.test == NOT_NULL:
        return f"{column} IS NULL"
    if test.test == UNIQUE:
        return "false"
    values = test.values
    if column_type in INTEGER_TYPES:
        # Compared as exact numbers: `1.0` or `1e0` names the whole number 1 (a float column whose values are
        # all whole is typed BIGINT, JSON parsing keeping no trailing zeros), and `1.5` none, where a cast to the
        # column's type would round it.
        values = tuple(whole for v in values if (whole := _whole_number(v)) is not None)
    accepted = ", ".join(f"try_cast({literal(v)} AS {column_type})" for v in values)
    return f"{column} IS NOT NULL AND NOT coalesce(array_contains(filter(array({accepted}), x -> x IS NOT NULL), {column}), false)"


def _whole_number(value: str) -> str | None:
    """`value`'s digits when it is a whole number however written (`2`, `2.0`, `2e0`), else None."""
    try:
        number = Decimal(value)
    except InvalidOperation:
        return None
    # Past 38 digits no integer column holds it (and `1e999999999` would take its digits' worth of memory).
    if not number.is_finite() or number.adjusted() >= 38 or number != number.to_integral_value():
        return None
    return str(int(number))


def _as_value(column: str, column_type: str) -> str:
    """SQL: the column's value, one per SQL equality class, before its text is grouped and shown. A DOUBLE's
    -0.0 (JSON's `-0e0`) equals 0.0 but its text differs: adding 0.0 makes it 0.0 (IEEE), and nothing else."""
    return f"({identifier(column)} + 0.0D)" if column_type == "DOUBLE" else identifier(column)


def run_column_tests(table: DataFrame, model: ModelSpec, columns: ModelColumns) -> list[TestOutcome]:
    """Run the model's declared tests on `table` (the typed batch: key columns, then `columns`)."""
    tests = declared_tests(model)
    types = {**dict.fromkeys(model.id, "STRING"), **columns.types}
    present = [i for i, t in enumerate(tests) if t.column in types]
    outcomes: dict[int, TestOutcome] = {
        i: TestOutcome(t, False, 1, 0, (), f"{t.column} is not a column of {model.name}")
        for i, t in enumerate(tests)
        if i not in present
    }
    if present:
        values = None
        for i in present:
            test = tests[i]
            one = table.selectExpr(
                f"{i} AS t",
                f"CAST({_as_value(test.column, types[test.column])} AS STRING) AS v",
                f"{_bad_row(test, types[test.column])} AS bad",
            )
            values = one if values is None else values.unionByName(one)
        assert values is not None
        unique = ", ".join(str(i) for i in present if tests[i].test == UNIQUE) or "NULL"
        counted = (
            values.groupBy("t", "v", "bad")
            .agg(F.count(F.lit(1)).alias("n"))
            .where(f"bad OR (t IN ({unique}) AND v IS NOT NULL AND n > 1)")
        )
        ranked = counted.selectExpr("t", "v", "n", "row_number() OVER (PARTITION BY t ORDER BY v) AS r")
        found = {
            row["t"]: row
            for row in ranked.groupBy("t")
            .agg(
                F.count(F.lit(1)).alias("values"),
                F.sum("n").alias("rows"),
                F.expr(f"sort_array(collect_list(CASE WHEN r <= {SAMPLES} THEN v END))").alias("samples"),
            )
            .collect()
        }
        for i in present:
            test, row = tests[i], found.get(i)
            rows = row["rows"] if row else 0
            # dbt counts the rows its test query returns: null rows for not_null, values for the others.
            failures = rows if test.test == NOT_NULL else (row["values"] if row else 0)
            message = "passed"
            if failures:
                message = (
                    f"{rows} row(s) with a null {test.column}"
                    if test.test == NOT_NULL
                    else f"{failures} failing value(s) in {rows} row(s)"
                )
            outcomes[i] = TestOutcome(test, not failures, failures, rows, tuple(row["samples"]) if row else (), message)
    return [_noting_skipped(outcomes[i], columns.skipped) for i in range(len(tests))]


def _noting_skipped(outcome: TestOutcome, skipped: dict[str, str]) -> TestOutcome:
    """The outcome, its message naming why the rows' field of the tested name is not a column, if it is not:
    a test of the key column then runs on the record key, not on that field (a `unique` on it cannot fail),
    and a test of a dropped field fails; either way the check says what it did not test."""
    reason = skipped.get(outcome.test.column)
    if reason is None:
        return outcome
    return replace(outcome, message=f"{outcome.message} (the rows' field {outcome.test.column} is skipped: {reason})")


def test_batch(
    spark: SparkSession, fs: LakeFileSystem, lake: Lake, model: ModelSpec, batch: BatchManifest | None
) -> list[TestOutcome]:
    """The model's tests on the live rows of `batch`; with no batch yet, or a batch of no landing (every
    landing of the model was removed: batches.plan_batch), on an empty model (all pass)."""
    if batch is None:
        return [TestOutcome(t, True, 0, 0, (), "no batch yet") for t in declared_tests(model)]
    if not batch.landings:
        return [TestOutcome(t, True, 0, 0, (), "no landing holds records of the model") for t in declared_tests(model)]
    columns = ModelColumns(batch.columns, batch.skipped_columns)
    table = typed_view(read_batches(spark, fs, lake, [batch], parts=(ROWS,)), model.id, columns)
    return run_column_tests(table, model, columns)
