"""The CDC step of `process` (cli/process_cdc.py): register, ingest, cut and check, through Dagster runs."""

import gzip
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import click
import dagster as dg
import pytest
from dagster._core.definitions.reconstruct import ReconstructableJob

from snowplow_assets.cdc.batches import latest_batch
from snowplow_assets.cli.generate_cdc import generate_demo_landings
from snowplow_assets.cli.process_cdc import process_cdc
from snowplow_assets.cli.process_request import ProcessRequest
from snowplow_assets.lake import Lake
from snowplow_assets.settings import Settings
from snowplow_assets.storage import LocalFileSystem
from snowplow_assets_tests.cdc.builders import (
    ISSUE_MODELS_YAML,
    LINES_DEBEZIUM,
    LINES_PARTIAL,
    ORDER_LINES_YAML,
    PARTIAL,
    partial,
    record,
    write_landing,
    write_models,
)

END = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)


def _instance_over_a_lake(root: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[dg.DagsterInstance]:
    home = root / "dagster_home"
    home.mkdir()
    (home / "dagster.yaml").write_text("telemetry:\n  enabled: false\n")
    for name, value in {
        "DAGSTER_HOME": str(home),
        "SNOWPLOW_LAKE": str(root / "lake"),
        "SNOWPLOW_SPARK_MASTER": "local[2]",
        "SNOWPLOW_SPARK_SHUFFLE_PARTITIONS": "2",
    }.items():
        monkeypatch.setenv(name, value)
    with dg.DagsterInstance.get() as dagster_instance:
        yield dagster_instance


@pytest.fixture
def instance(tmp_path, monkeypatch, spark):
    yield from _instance_over_a_lake(tmp_path, monkeypatch)


@pytest.fixture(scope="module")
def idle_instance(tmp_path_factory, spark):
    """An instance over a lake without landings, shared by the tests that start no run and so leave both as
    they were (a new instance takes a second or two to set up its storage)."""
    with pytest.MonkeyPatch.context() as monkeypatch:
        yield from _instance_over_a_lake(tmp_path_factory.mktemp("idle"), monkeypatch)


def _checks(instance, run_id):
    events = instance.all_logs(run_id, of_type=dg.DagsterEventType.ASSET_CHECK_EVALUATION)
    return {e.dagster_event.event_specific_data.check_name: e.dagster_event.event_specific_data for e in events}


def _metadata(instance, key, partition=None):
    records = instance.fetch_materializations(
        dg.AssetRecordsFilter(asset_key=dg.AssetKey(key), asset_partitions=[partition] if partition else None), limit=1
    ).records
    return {k: v.value for k, v in records[0].asset_materialization.metadata.items()}


def test_process_ingests_new_landings_cuts_batches_checks_them_and_recuts_in_full_on_request(instance):
    """One lake through three `process` calls:
    - the first registers and ingests the new landings, cuts the first batch, refreshes the latest view and
      runs the column tests, which pass;
    - the second ingests only the new landing and cuts an incremental batch, whose failing column tests are
      non-blocking errors and whose new column is a drift warning;
    - the third, a full refresh, ingests nothing and cuts every batch again from all its records."""
    settings = Settings()
    lake = Lake(settings.lake)
    _, generation = generate_demo_landings(settings, END)
    names = [s.folder.name for s in generation.landings]
    messages: list[str] = []

    first = process_cdc(instance, settings, messages.append)
    assert [(o.job, o.partition, o.success) for o in first] == [
        ("cdc_ingest_landing", names[0], True), ("cdc_ingest_landing", names[1], True), ("cdc_batch", None, True),
    ]  # fmt: skip
    assert sorted(instance.get_dynamic_partitions("cdc_landings")) == names
    assert f"registered 2 CDC landing(s): {', '.join(names)}" in messages
    history = _metadata(instance, "cdc_history", names[1])
    assert (history["lines"], history["bad"], history["ignored"]) == (generation.landings[1].records, 0, 0)
    assert history["changes"] + _metadata(instance, "cdc_deletes", names[1])["deletes"] == history["lines"]
    batches = _metadata(instance, "cdc_batches")
    assert batches["customers/status"] == "cut" and batches["customers/boundary_ms"] <= END.timestamp() * 1000
    assert _metadata(instance, "cdc_latest")["customers/rows"] == len(generation.expected)
    checks = _checks(instance, first[-1].run_id)
    assert set(checks) == {
        "customers__not_null__email",
        "customers__unique__id",
        "customers__accepted_values__state",
        "customers__column_drift",
        "cdc_landings_read_by_the_current_models",
        "cdc_tables_only_of_declared_models",
    }
    assert all(c.passed for c in checks.values()), checks

    # A landing with a null email, a state outside the accepted values, a new column and a delete.
    end = int(END.timestamp() * 1000)
    write_landing(lake, "landing=extra", [
        partial(9001, end, 0, {"email": None, "state": "active"}),
        partial(9002, end, 1, {"email": "x@y", "state": "banned", "nickname": "x"}),
        partial(9003, end + 1, 2, None),
    ])  # fmt: skip
    second = process_cdc(instance, settings, messages.append)
    assert [(o.job, o.partition) for o in second] == [("cdc_ingest_landing", "landing=extra"), ("cdc_batch", None)]
    checks = _checks(instance, second[-1].run_id)
    assert (
        not checks["customers__not_null__email"].passed
        and checks["customers__not_null__email"].metadata["failures"].value == 1
    )
    assert not checks["customers__accepted_values__state"].passed
    assert checks["customers__accepted_values__state"].metadata["failing_values"].value == ["banned"]
    # Column tests fail as errors without blocking: the batch is the source's true state either way.
    for name in ("customers__not_null__email", "customers__accepted_values__state"):
        assert checks[name].severity == dg.AssetCheckSeverity.ERROR, name
    assert checks["customers__unique__id"].passed
    drift = checks["customers__column_drift"]
    assert not drift.passed and drift.severity == dg.AssetCheckSeverity.WARN
    assert drift.metadata["added"].value == {"nickname": "STRING"} and drift.metadata["removed"].value == {}
    assert Path(lake.cdc_latest("customers"), "_latest.json").exists()
    fs = LocalFileSystem()
    incremental = latest_batch(fs, lake, "customers")
    # 9001 and 9002 are new live keys; 9003 was never inserted, so its delete leaves a tombstone only.
    assert (incremental.mode, incremental.rows) == ("incremental", len(generation.expected) + 2)

    messages.clear()
    [batch_run] = process_cdc(instance, settings, messages.append, ProcessRequest(full_refresh=True))
    assert "cutting CDC batches in full ..." in messages and batch_run.success
    newest = latest_batch(fs, lake, "customers")
    assert (newest.mode, newest.reason, newest.rows) == ("full", "full recompute requested", incremental.rows)


def test_no_landings_means_no_runs(idle_instance):
    messages: list[str] = []
    assert process_cdc(idle_instance, Settings(), messages.append) == []
    assert messages == ["no CDC landings"]


def test_a_landing_that_cannot_be_read_fails_with_the_reason(instance):
    """Dagster wraps the step's error in its own execution error; `process` says the error the step raised,
    with the JVM's last cause, as the processing manifest does."""
    folder = Path(Lake(Settings().lake).cdc_landing("landing=2026-03-01-10-00-00"))
    folder.mkdir(parents=True)
    whole = gzip.compress("".join(partial(k, 1000 + k, k, {"name": "x"}) + "\n" for k in range(20_000)).encode())
    (folder / "part-00000.json.gz").write_bytes(whole[: len(whole) // 2])
    (folder / "_SUCCESS").touch()
    [ingest] = [o for o in process_cdc(instance, Settings(), lambda _: None) if o.job == "cdc_ingest_landing"]
    assert not ingest.success
    step = ingest.failure.split("; run: ")[0]
    assert step.startswith(
        "cdc_ingest: org.apache.spark.SparkException: [FAILED_READ_FILE.NO_HINT] Encountered error while reading file"
    ), step
    assert step.endswith("(caused by java.io.EOFException: Unexpected end of input stream)"), step


def _load_definitions_anew() -> None:
    """As a new `process` does: within one Python process Dagster keeps the job definitions it loaded first."""
    ReconstructableJob.get_definition.cache_clear()
    ReconstructableJob.get_repository_definition.cache_clear()


@pytest.fixture
def definitions_loaded_anew():
    """The test's definitions are loaded under its own models file, and do not outlive it."""
    _load_definitions_anew()
    yield _load_definitions_anew
    _load_definitions_anew()


def test_ignored_topics_are_not_bad_and_a_landing_read_under_other_models_is_named_until_ingested_again(
    instance, tmp_path, monkeypatch, definitions_loaded_anew
):
    """Landing b: records of an ignored topic are counted apart from bad ones, and its ingest run's check says
    so. Landing a: a topic the models file did not declare made bad rows; once declared, the landing must be
    read again, and landing b, read the same way under both files, is not named."""
    models_file = write_models(tmp_path / "models.yaml", ISSUE_MODELS_YAML + "ignored_topics: ['shop.inventory.*']\n")
    monkeypatch.setenv("SNOWPLOW_CDC_MODELS", str(models_file))
    definitions_loaded_anew()
    lake = Lake(Settings().lake)
    write_landing(
        lake,
        "landing=a",
        [partial(1, 1_000, 0, {"email": "a@x"}), record("customers_v2", {"id": 2, "email": "b@x"}, "2", 1_000, 0)],
    )
    write_landing(
        lake,
        "landing=b",
        [
            partial(1, 1_000, 0, {"email": "a@x"}),
            record("shop.inventory.stock", {"sku": 1}, "1", 1_000, 0),
            record("shop.payments", {"id": 1}, "1", 1_000, 0),
        ],
    )
    messages: list[str] = []
    first = process_cdc(instance, Settings(), messages.append)
    assert [(o.job, o.partition) for o in first] == [
        ("cdc_ingest_landing", "landing=a"), ("cdc_ingest_landing", "landing=b"), ("cdc_batch", None),
    ]  # fmt: skip
    history = _metadata(instance, "cdc_history", "landing=b")
    assert (history["lines"], history["changes"], history["bad"], history["ignored"]) == (3, 1, 1, 1)
    check = _checks(instance, first[1].run_id)["no_bad_records"]
    assert not check.passed and check.description == (
        "1 of 3 records were bad; 1 were ignored (ignored topics, Debezium tombstones without the id)"
    )
    assert check.severity == dg.AssetCheckSeverity.WARN
    assert check.metadata["ignored"].value == 1 and check.metadata["bad_unknown_topic"].value == 1
    # `process` says so beside the run's "ok", not in the UI alone.
    assert first[1].failed_checks == (
        "check no_bad_records of cdc_history failed (WARN): 1 of 3 records were bad; 1 were ignored (ignored "
        "topics, Debezium tombstones without the id)",
    )
    assert f"    {first[1].failed_checks[0]}" in messages

    assert _metadata(instance, "cdc_history", "landing=a")["bad"] == 1
    assert _checks(instance, first[-1].run_id)["cdc_landings_read_by_the_current_models"].passed

    declared = ISSUE_MODELS_YAML.replace(
        f"      - {{topic: {PARTIAL}, contract: partial}}\n",
        f"      - {{topic: {PARTIAL}, contract: partial}}\n      - {{topic: customers_v2, contract: partial}}\n",
    )
    write_models(models_file, declared + "ignored_topics: ['shop.inventory.*']\n")
    definitions_loaded_anew()
    messages.clear()
    second = process_cdc(instance, Settings(), messages.append)
    assert [o.job for o in second] == ["cdc_batch"], "a Processed landing is not ingested again unasked"
    assert (
        "stale: CDC landing landing=a was read under other models (customers_v2: no model (bad rows) -> "
        "customers/partial/id); ingest it again: snowplow-assets process --ingest landing=a"
    ) in messages
    assert not [m for m in messages if "landing=b" in m]
    check = _checks(instance, second[-1].run_id)["cdc_landings_read_by_the_current_models"]
    assert not check.passed and check.severity == dg.AssetCheckSeverity.WARN
    assert check.metadata["changes"].value == {
        "landing=a": ["customers_v2: no model (bad rows) -> customers/partial/id"]
    }
    assert _metadata(instance, "cdc_latest")["customers/rows"] == 1

    messages.clear()
    third = process_cdc(instance, Settings(), messages.append, ProcessRequest(landings=("landing=a",)))
    assert [(o.job, o.partition, o.success) for o in third] == [
        ("cdc_ingest_landing", "landing=a", True),
        ("cdc_batch", None, True),
    ]
    assert not [m for m in messages if m.startswith("stale:")]
    assert _checks(instance, third[-1].run_id)["cdc_landings_read_by_the_current_models"].passed
    assert _metadata(instance, "cdc_history", "landing=a")["bad"] == 0
    assert _metadata(instance, "cdc_latest")["customers/rows"] == 2

    # The view of a model the models file no longer declares (removed from it), which nothing updates any more.
    gone = Path(lake.cdc_latest("orders"))
    gone.mkdir(parents=True, exist_ok=True)
    fourth = process_cdc(instance, Settings(), messages.append)
    check = _checks(instance, fourth[-1].run_id)["cdc_tables_only_of_declared_models"]
    assert not check.passed and check.severity == dg.AssetCheckSeverity.WARN
    assert str(gone) in check.metadata["folders"].value


def test_a_model_keyed_by_two_columns_and_a_truncate_through_dagster(
    instance, tmp_path, monkeypatch, definitions_loaded_anew
):
    """Order lines keyed by (order_id, line_no): two lines of one order stay two rows, until a Debezium truncate
    removes both; the line inserted after it is the model. The runs' metadata and checks say so."""
    monkeypatch.setenv("SNOWPLOW_CDC_MODELS", str(write_models(tmp_path / "models.yaml", ORDER_LINES_YAML)))
    definitions_loaded_anew()
    lake = Lake(Settings().lake)
    key = '{{"order_id": {}, "line_no": {}}}'.format
    write_landing(lake, "landing=a", [
        record(LINES_DEBEZIUM, {"op": "c", "after": {"order_id": 7, "line_no": 1, "sku": "a"}}, key(7, 1), 1_000, 0),
        record(LINES_DEBEZIUM, {"op": "c", "after": {"order_id": 7, "line_no": 2, "sku": "b"}}, key(7, 2), 2_000, 1),
    ])  # fmt: skip
    first = process_cdc(instance, Settings(), lambda _: None)
    assert all(o.success for o in first)
    assert _metadata(instance, "cdc_batches")["order_lines/rows"] == 2
    assert not _checks(instance, first[-1].run_id)["order_lines__unique__order_id"].passed, "an order of two lines"

    write_landing(lake, "landing=b", [
        record(LINES_DEBEZIUM, {"payload": {"op": "t", "before": None, "after": None}}, None, 3_000, 2),
        record(LINES_PARTIAL, {"order_id": 8, "line_no": 1, "sku": "c"}, key(8, 1), 4_000, 0),
    ])  # fmt: skip
    second = process_cdc(instance, Settings(), lambda _: None)
    assert [(o.job, o.partition, o.success) for o in second] == [
        ("cdc_ingest_landing", "landing=b", True), ("cdc_batch", None, True),
    ]  # fmt: skip
    history = _metadata(instance, "cdc_history", "landing=b")
    assert (history["bad"], history["changes"]) == (0, 1)
    [models_row] = history["models"].records
    assert (models_row.data["deletes"], models_row.data["truncates"]) == (1, 1)
    batches = _metadata(instance, "cdc_batches")
    assert (batches["order_lines/rows"], batches["order_lines/last_truncate"]) == (1, 3.0)
    assert _metadata(instance, "cdc_latest")["order_lines/rows"] == 1
    assert _checks(instance, second[-1].run_id)["order_lines__unique__order_id"].passed


@pytest.mark.parametrize(
    ("name", "problem"),
    [
        ("../x", "not a CDC landing folder name"),
        ("landing=none", "no such CDC landing: "),
        ("cdc/landing/landing=none", "no such CDC landing: .*/cdc/landing/landing=none$"),  # as `manifest` names it
    ],
)
def test_ingest_asks_for_a_landing_folder_that_exists(idle_instance, name, problem):
    with pytest.raises(click.ClickException, match=problem):
        process_cdc(idle_instance, Settings(), lambda _: None, ProcessRequest(landings=(name,)))
