"""The CDC wiring: assets, partitions, checks from the models file, the landing sensor and the schedule."""

import os
import time
from pathlib import Path

import dagster as dg
import pytest
from pyspark.sql import SparkSession

from snowplow_assets.defs.resources import LakeResource
from snowplow_assets.defs.resources.cdc import build_cdc_resource
from snowplow_assets.defs.schedules.cdc_batch_schedule import cdc_batch_schedule
from snowplow_assets.defs.sensors.cdc_landing_folders import cdc_landing_folders
from snowplow_assets.settings import Settings
from snowplow_assets_tests.cdc.builders import ISSUE_MODELS_YAML, partial, write_landing, write_models


@pytest.fixture
def cdc_definitions(lake, monkeypatch, tmp_path):
    monkeypatch.setenv("SNOWPLOW_LAKE", lake.root)
    monkeypatch.setenv("SNOWPLOW_CDC_BATCH_CRON", "*/10 * * * *")
    text = (
        ISSUE_MODELS_YAML
        + "  orders:\n    topics: [{topic: shop.orders, contract: partial}]\n    tests: {not_null: ['total.amount']}\n"
    )
    monkeypatch.setenv("SNOWPLOW_CDC_MODELS", str(write_models(tmp_path / "models.yaml", text)))
    from snowplow_assets.definitions import defs

    return defs()


def test_assets_partitions_and_jobs(cdc_definitions):
    graph = cdc_definitions.get_repository_def().asset_graph
    for key in ("cdc_history", "cdc_deletes"):
        partitions = graph.get(dg.AssetKey(key)).partitions_def
        assert isinstance(partitions, dg.DynamicPartitionsDefinition) and partitions.name == "cdc_landings"
    for key in ("cdc_batches", "cdc_latest"):
        assert graph.get(dg.AssetKey(key)).partitions_def is None
    assert cdc_definitions.resolve_job_def("cdc_batch").executor_def is dg.in_process_executor
    assert cdc_definitions.resolve_job_def("cdc_ingest_landing").partitions_def.name == "cdc_landings"


def test_one_check_per_declared_test_a_drift_check_per_model_and_one_for_stale_landings(cdc_definitions):
    checks = {
        (k.asset_key.to_user_string(), k.name)
        for k in cdc_definitions.get_repository_def().asset_graph.asset_check_keys
    }
    cdc = {name for asset, name in checks if asset == "cdc_batches"}
    assert cdc == {
        "customers__not_null__email", "customers__unique__id", "customers__accepted_values__state", "customers__column_drift",
        "orders__column_drift", next(c for c in cdc if c.startswith("orders__not_null__total_amount_")),
        "cdc_landings_read_by_the_current_models", "cdc_tables_only_of_declared_models",
    }  # fmt: skip
    assert ("cdc_history", "no_bad_records") in checks


def test_schedule_follows_the_setting(cdc_definitions):
    [schedule] = [s for s in cdc_definitions.get_repository_def().schedule_defs if s.name == "cdc_batch_schedule"]
    assert schedule.cron_schedule == "*/10 * * * *" and schedule.job_name == "cdc_batch"
    assert schedule.default_status == dg.DefaultScheduleStatus.RUNNING


def test_batches_are_cut_every_30_minutes_and_kept_24_hours_by_default(monkeypatch):
    for name in ("SNOWPLOW_CDC_BATCH_CRON", "SNOWPLOW_CDC_BATCH_RETENTION_HOURS"):
        monkeypatch.delenv(name, raising=False)
    [schedule] = cdc_batch_schedule().schedules
    assert schedule.cron_schedule == "*/30 * * * *" and schedule.execution_timezone == "UTC"
    assert build_cdc_resource(Settings(_env_file=None)).batch_retention_hours == 24


def test_a_broken_models_file_stops_the_code_location_with_the_reason(lake, monkeypatch, tmp_path):
    monkeypatch.setenv("SNOWPLOW_LAKE", lake.root)
    monkeypatch.setenv(
        "SNOWPLOW_CDC_MODELS",
        str(write_models(tmp_path / "models.yaml", "models: {a: {topics: [{topic: t, contract: avro}]}}\n")),
    )
    from snowplow_assets.definitions import defs

    with pytest.raises(Exception) as error:
        defs().get_repository_def()
    chain, cause = [], error.value
    while cause is not None:
        chain.append(str(cause))
        cause = cause.__cause__ or cause.__context__
    assert any("invalid CDC models" in text and "avro" in text for text in chain)


def test_sensor_registers_ready_landings_without_starting_spark(lake, monkeypatch):
    monkeypatch.setattr(SparkSession.Builder, "getOrCreate", lambda builder: pytest.fail("Spark was started"))
    monkeypatch.setenv("SNOWPLOW_READY_AFTER_SECONDS", "1")
    write_landing(lake, "landing=a", [partial(1, 1, 0, {})])
    write_landing(lake, "landing=b", [partial(2, 2, 0, {})], marker=False)
    time.sleep(1.1)  # landing=b is quiet: a file's change time (ctime) counts, and none can be dated back
    busy = write_landing(lake, "landing=busy", [partial(3, 3, 0, {})], marker=False)
    os.utime(busy / "part-00000.json", (time.time() + 3600, time.time() + 3600))  # changing, however slow the tick
    (Path(lake.cdc_landings) / "not ok").mkdir()
    (Path(lake.cdc_landings) / "not ok" / "_SUCCESS").touch()
    with dg.instance_for_test() as instance:
        instance.add_dynamic_partitions("cdc_landings", ["landing=old"])
        write_landing(lake, "landing=old", [])
        with dg.build_sensor_context(instance=instance, resources={"lake": LakeResource(root=lake.root)}) as context:
            result = cdc_landing_folders(context)
    assert [r.partition_key for r in result.run_requests] == ["landing=a", "landing=b", "landing=old"], (
        "the new ready landings, and the registered one that no run took up"
    )
    [request] = result.dynamic_partitions_requests
    assert request.partitions_def_name == "cdc_landings" and list(request.partition_keys) == ["landing=a", "landing=b"]


def test_a_landing_written_again_after_it_was_found_ready_fails_its_run_before_spark(
    cdc_definitions, lake, monkeypatch
):
    """Found ready when registered, read when its run starts: a landing being written again by then (landed
    again under its name by a copy that writes its marker first) fails its run, naming why, without Spark."""
    monkeypatch.setattr(SparkSession.Builder, "getOrCreate", lambda builder: pytest.fail("Spark was started"))
    folder = Path(lake.cdc_landing("landing=a"))
    folder.mkdir(parents=True)
    (folder / "_SUCCESS").touch()
    time.sleep(0.05)
    (folder / "part-00000.json").write_text(partial(1, 1, 0, {}) + "\n", encoding="utf-8")
    with dg.instance_for_test() as instance:
        instance.add_dynamic_partitions("cdc_landings", ["landing=a"])
        result = cdc_definitions.resolve_job_def("cdc_ingest_landing").execute_in_process(
            partition_key="landing=a", instance=instance, raise_on_error=False
        )
    assert not result.success
    [failure] = [e for e in result.all_events if e.is_step_failure]
    assert "landing=a is not ready: changed" in failure.step_failure_data.error.message
