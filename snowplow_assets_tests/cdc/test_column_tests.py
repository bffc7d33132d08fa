"""dbt's column tests (column_tests.py): what each counts, that each can fail, and their check names."""

import pytest

from snowplow_assets.cdc import column_tests
from snowplow_assets.cdc.batches import cut_batches
from snowplow_assets.cdc.column_tests import ColumnTest, declared_tests, run_column_tests
from snowplow_assets.cdc.columns import ModelColumns
from snowplow_assets.cdc.history import ingest_landing
from snowplow_assets.storage import LocalFileSystem
from snowplow_assets_tests.cdc.builders import EVENT, PARTIAL, models, record, write_landing

MODEL = models(
    """
models:
  customers:
    topics: [{topic: t, contract: partial}]
    tests:
      not_null: [email, id, missing]
      unique: [email, id]
      accepted_values: {state: [active, invited], vip: [true], score: [1, 2.5]}
"""
).model("customers")
COLUMNS = ModelColumns({"email": "STRING", "score": "DOUBLE", "state": "STRING", "vip": "BOOLEAN"})
SCHEMA = "id STRING, email STRING, score DOUBLE, state STRING, vip BOOLEAN"
CLEAN = [("1", "a@x", 1.0, "active", True), ("2", "b@x", 2.5, "invited", None), ("3", "c@x", None, None, True)]
DIRTY = CLEAN + [
    ("4", None, 1.0, "active", True),
    ("5", None, 1.0, "gone", True),
    ("6", "a@x", 3.0, "gone", False),
    ("7", "a@x", 1.0, "weird", True),
]


def _outcomes(spark, rows):
    table = spark.createDataFrame(rows, SCHEMA)
    return {(o.test.test, o.test.column): o for o in run_column_tests(table, MODEL, COLUMNS)}


def test_tests_are_declared_in_file_order():
    assert [(t.test, t.column, t.values) for t in declared_tests(MODEL)] == [
        ("not_null", "email", ()), ("not_null", "id", ()), ("not_null", "missing", ()),
        ("unique", "email", ()), ("unique", "id", ()),
        ("accepted_values", "state", ("active", "invited")), ("accepted_values", "vip", ("true",)),
        ("accepted_values", "score", ("1", "2.5")),
    ]  # fmt: skip


def test_a_clean_batch_passes_every_test_of_an_existing_column(spark):
    outcomes = _outcomes(spark, CLEAN)
    assert {key for key, o in outcomes.items() if not o.passed} == {("not_null", "missing")}
    assert outcomes[("not_null", "missing")].message == "missing is not a column of customers"


def test_failures_are_counted_as_dbt_counts_them(spark):
    outcomes = _outcomes(spark, DIRTY)
    summary = {key: (o.passed, o.failures, o.failing_rows, o.samples) for key, o in outcomes.items()}
    assert summary[("not_null", "email")] == (False, 2, 2, ())  # null rows
    assert summary[("not_null", "id")] == (True, 0, 0, ())
    assert summary[("unique", "email")] == (False, 1, 3, ("a@x",))  # one value in three rows; nulls ignored
    assert summary[("unique", "id")] == (True, 0, 0, ())
    assert summary[("accepted_values", "state")] == (False, 2, 3, ("gone", "weird"))  # distinct values; null passes
    assert summary[("accepted_values", "vip")] == (False, 1, 1, ("false",))  # "true" is cast to the column's type
    assert summary[("accepted_values", "score")] == (False, 1, 1, ("3.0",))  # "1" accepts 1.0
    assert outcomes[("not_null", "email")].message == "2 row(s) with a null email"


@pytest.mark.parametrize(
    ("column", "name"),
    [
        ("email", "customers__not_null__email"),
        ("e.mail", "customers__not_null__e_mail_"),
        ("é", "customers__not_null___"),
    ],
)
def test_check_names_are_identifiers(column, name):
    check = ColumnTest("customers", "not_null", column).check_name
    assert check.startswith(name) and check.replace("_", "").isalnum()


def test_the_rows_own_id_that_is_not_the_key_is_listed_and_named_by_the_key_columns_tests(spark, lake):
    """Rows of topics keyed elsewhere carry an `id` that is not their key: repeated here, yet `unique: [id]`
    tests the key. The batch lists the field as skipped, and the check says what it tested."""
    fs, issue = LocalFileSystem(), models()
    write_landing(
        lake,
        "landing=1",
        [
            record(EVENT, {"changeType": "INSERT", "data": {"customerId": 7, "id": 1, "email": "a@x"}}, "7", offset=0),
            record(EVENT, {"changeType": "INSERT", "data": {"customerId": 8, "id": 1, "email": "b@x"}}, "8", offset=1),
            record(PARTIAL, {"id": 5, "email": "c@x"}, "100", offset=0),
        ],
    )
    ingest_landing(spark, fs, lake, "landing=1", issue)
    [cut] = cut_batches(spark, fs, lake, issue, now_ms=10_000)
    assert set(cut.batch.columns) == {"customerId", "email"}
    assert list(cut.batch.skipped_columns) == ["id"]
    assert "customer_events from customerId, customers_raw from the Kafka key" in cut.batch.skipped_columns["id"]
    tested = column_tests.test_batch(spark, fs, lake, issue.model("customers"), cut.batch)
    outcomes = {o.test.check_name: o for o in tested}
    unique = outcomes["customers__unique__id"]
    assert unique.passed and unique.message.startswith("passed (the rows' field id is skipped: the id column is")
    assert outcomes["customers__not_null__email"].message == "passed", "a column the rows hold as such"
