"""The latest view (latest.py) on generated landings: fresh without a batch, equal to the true state."""

import json
from pathlib import Path

import pytest

from snowplow_assets.cdc.batches import cut_batches
from snowplow_assets.cdc.history import HISTORY_SCHEMA, Window, ingest_landing
from snowplow_assets.cdc.latest import latest_table, write_latest
from snowplow_assets.datagen.cdc import CdcGenerationOptions, generate_cdc_landings
from snowplow_assets.lake import Lake
from snowplow_assets.storage import LocalFileSystem
from snowplow_assets_tests.cdc.builders import models, partial, write_landing

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
    written = spark.read.parquet(lake.cdc_latest("customers"))
    assert written.columns == columns
    assert sorted(tuple(r) for r in written.collect()) == sorted(tuple(r) for r in rows)
    assert manifest.rows == len(rows) and manifest.columns["id"] == "STRING"
    assert json.loads(Path(lake.cdc_latest("customers"), "_latest.json").read_text())["rows"] == len(rows)


def test_a_model_whose_keys_are_all_deleted_is_an_empty_table(spark, lake):
    fs = LocalFileSystem()
    write_landing(lake, "landing=x", [partial(1, 1_000, 0, {"email": "a@x"}), partial(1, 2_000, 1, None)])
    ingest_landing(spark, fs, lake, "landing=x", MODELS)
    [manifest] = write_latest(spark, fs, lake, [CUSTOMERS])
    assert manifest.rows == 0 and manifest.batch_boundary_ms is None
    assert spark.read.parquet(lake.cdc_latest("customers")).columns == ["id", "email"]
    assert spark.read.schema(HISTORY_SCHEMA).parquet(lake.cdc_history("landing=x")).count() == 1
