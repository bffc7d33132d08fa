"""A CDC step whose read raced an ingestion runs again (defs/lake_read_retries.py): `cdc_latest` in a real
Dagster run, with a landing ingested again between the view's plan and its read, once and then every time."""

import json
from pathlib import Path

import dagster as dg
import pytest
from dagster_pyspark import LazyPySparkResource

from snowplow_assets.cdc import latest as cdc_latest_module
from snowplow_assets.cdc.history import ingest_landing
from snowplow_assets.defs import lake_read_retries
from snowplow_assets.defs.assets.cdc_latest import cdc_latest
from snowplow_assets.defs.resources import CdcResource, LakeResource
from snowplow_assets.defs.step_errors import raised_error_reason
from snowplow_assets.spark import spark_session_config
from snowplow_assets.storage import LocalFileSystem, failed_on_a_gone_file
from snowplow_assets_tests.cdc.builders import models, partial, write_landing, write_models
from snowplow_assets_tests.conftest import TEST_SPARK_CONFIG

MODELS = models()


@pytest.fixture
def raced(spark, lake, tmp_path, monkeypatch):
    """Two landings ingested; `swaps[0]` of the view's plans are each followed by landing b ingested again."""
    for name, key in (("landing=a", 1), ("landing=b", 2)):
        write_landing(lake, name, [partial(key, 1_000 + key, key, {"email": f"{key}@x", "state": "active"})])
        ingest_landing(spark, LocalFileSystem(), lake, name, MODELS)
    planned_latest_table, swaps = cdc_latest_module.latest_table, [0]

    def then_ingest_again(*args, **kwargs):
        planned = planned_latest_table(*args, **kwargs)
        if swaps[0]:
            swaps[0] -= 1
            ingest_landing(spark, LocalFileSystem(), lake, "landing=b", MODELS)
        return planned

    monkeypatch.setattr(cdc_latest_module, "latest_table", then_ingest_again)
    monkeypatch.setattr(lake_read_retries, "SECONDS_BETWEEN", 0)
    resources = {
        "lake": LakeResource(root=lake.root),
        "spark": LazyPySparkResource(spark_config=spark_session_config(TEST_SPARK_CONFIG)),
        "cdc": CdcResource(models_path=str(write_models(tmp_path / "models.yaml"))),
    }
    return lake, swaps, resources


def _materialize(resources) -> dg.ExecuteInProcessResult:
    with dg.instance_for_test() as instance:
        return dg.materialize([cdc_latest], resources=resources, instance=instance, raise_on_error=False)


def test_a_read_that_raced_an_ingestion_runs_again_and_writes_the_view(raced):
    lake, swaps, resources = raced
    swaps[0] = 1
    result = _materialize(resources)
    assert result.success
    assert [e.event_type for e in result.all_events if e.event_type == dg.DagsterEventType.STEP_UP_FOR_RETRY] == [
        dg.DagsterEventType.STEP_UP_FOR_RETRY
    ], "one retry"
    written = json.loads(Path(lake.cdc_latest("customers"), "_latest.json").read_text())
    assert (written["rows"], written["landings_read"]) == (2, 2)


def test_a_read_that_races_every_time_fails_with_its_own_error_after_the_retries(raced):
    _, swaps, resources = raced
    swaps[0] = 1 + lake_read_retries.RETRIES
    result = _materialize(resources)
    assert not result.success
    retries = [e for e in result.all_events if e.event_type == dg.DagsterEventType.STEP_UP_FOR_RETRY]
    assert len(retries) == lake_read_retries.RETRIES
    [failure] = [e for e in result.all_events if e.is_step_failure]
    error = failure.event_specific_data.error  # Dagster's wrapper of what the step raised
    assert "Exceeded max_retries" not in error.message and error.cause is not None
    assert failed_on_a_gone_file(Exception(error.cause.message)), "the read's own error, not a RetryRequested"
    assert "landing=b" in raised_error_reason(error), "and the reason names the file"
