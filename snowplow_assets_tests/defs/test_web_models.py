"""The web models in Dagster: the manifest in materialisation metadata, a model added later, a failing model
that leaves the manifest out of sync until the next run catches up, asset checks, and `web-limits`."""

from datetime import timedelta
from pathlib import Path

import dagster as dg
import pytest
from click.testing import CliRunner
from dagster_pyspark import LazyPySparkResource

from snowplow_assets.cli import main
from snowplow_assets.defs.assets.web_models import build_web_models
from snowplow_assets.defs.resources import LakeResource, WebModelsResource
from snowplow_assets.defs.manifests.web_manifest import read_web_manifest, web_asset_key
from snowplow_assets.lake import Lake
from snowplow_assets.spark import spark_session_config
from snowplow_assets.web.variables import MODELS
from snowplow_assets_tests.conftest import TEST_SPARK_CONFIG
from snowplow_assets_tests.web.shredded import Event, ts, uid, write_shredded_run

T0 = ts("2026-03-01 08:00:00")
FIRST = [
    Event("s1/home", T0, "s1", "u1", page_view="s1/home"),
    Event("s1/home/ping", T0 + timedelta(seconds=12), "s1", "u1", event="page_ping", page_view="s1/home"),
    Event("s2/home", T0 + timedelta(minutes=20), "s2", "u2", page_view="s2/home"),
]
SECOND = [
    Event("s1/cart", T0 + timedelta(minutes=70), "s1", "u1", page_view="s1/cart"),
    Event("s3/home", T0 + timedelta(minutes=90), "s3", "u3", page_view="s3/home"),
]
WITHOUT_USERS = ",".join(MODELS[:4])


def keys(models=MODELS) -> list[dg.AssetKey]:
    return [web_asset_key(m) for m in models]


def materialize(instance, lake: Lake, models: str = ",".join(MODELS), selection=MODELS) -> dg.ExecuteInProcessResult:
    resources = {
        "lake": LakeResource(root=lake.root),
        "spark": LazyPySparkResource(spark_config=spark_session_config(TEST_SPARK_CONFIG)),
        "web": WebModelsResource(models=models, start_date="2026-03-01"),
    }
    return dg.materialize([build_web_models], selection=keys(selection), resources=resources, instance=instance,
                          raise_on_error=False)  # fmt: skip


def latest_metadata(instance, model: str) -> dict[str, object]:
    [record] = instance.fetch_materializations(dg.AssetRecordsFilter(asset_key=web_asset_key(model)), limit=1).records
    return {k: v.value for k, v in record.asset_materialization.metadata.items()}


@pytest.fixture(scope="module")
def scenario(spark, tmp_path_factory):
    """Four runs: a first run without users, users added, sessions failing, the catch-up. Each run's manifest."""
    lake = Lake(str(tmp_path_factory.mktemp("web_dagster") / "lake"))
    write_shredded_run(lake, "run=2026-03-01-09-00-00", FIRST)
    with dg.instance_for_test() as instance:
        runs, manifests, metadata = [], [], []

        def record(result):
            runs.append(result)
            manifests.append(read_web_manifest(instance))
            metadata.append({m: latest_metadata(instance, m) for m in MODELS if manifests[-1][m] is not None})

        record(materialize(instance, lake, WITHOUT_USERS, MODELS[:4]))
        record(materialize(instance, lake))  # no new data; users is new
        write_shredded_run(lake, "run=2026-03-01-11-00-00", SECOND)
        day = Path(lake.web_model("sessions"), "start_date=2026-03-01")
        (day / "part-broken.parquet").write_text("not parquet")
        record(materialize(instance, lake))  # sessions cannot read its table and fails
        (day / "part-broken.parquet").unlink()
        record(materialize(instance, lake))  # catches sessions and users up
        yield lake, instance, runs, manifests, metadata


def test_first_run_records_the_manifest_in_materialisation_metadata(scenario):
    _, _, runs, manifests, metadata = scenario
    assert runs[0].success
    last = T0 + timedelta(minutes=20)
    assert manifests[0] == {**dict.fromkeys(MODELS[:4], last), "users": None}
    lifecycle = metadata[0]["sessions_lifecycle"]
    assert lifecycle["state"] == "first run" and lifecycle["rows_upserted"] == 2
    assert lifecycle["processing"].startswith("Snowplow: Processing data between 2026-03-01 00:00:00 and ")
    assert lifecycle["events"] == 3 and lifecycle["valid"] == 3 and lifecycle["new_sessions"] == 2
    assert metadata[0]["page_views"]["rows_upserted"] == 2 and metadata[0]["sessions"]["rows_upserted"] == 2
    checks = runs[0].get_asset_check_evaluations()
    assert len(checks) == 6 and all(c.passed for c in checks)


def test_a_model_added_later_is_backfilled_without_the_others(scenario):
    _, _, runs, manifests, metadata = scenario
    assert runs[1].success
    assert manifests[1] == dict.fromkeys(MODELS, T0 + timedelta(minutes=20))
    assert metadata[1]["users"]["state"] == "new model" and metadata[1]["users"]["rows_upserted"] == 2
    for model in MODELS[:4]:
        assert metadata[1][model]["rows_upserted"] == 0
        assert "at or past the upper limit" in metadata[1][model]["note"]
        assert metadata[1][model]["last_success"] == metadata[0][model]["last_success"]  # no new data: unchanged


def test_a_failing_model_leaves_it_and_the_ones_after_it_behind(scenario):
    _, _, runs, manifests, _ = scenario
    assert not runs[2].success
    [failure] = [e for e in runs[2].all_events if e.is_step_failure]
    assert "part-broken.parquet" in str(failure.event_specific_data.error)
    newest = T0 + timedelta(minutes=90)
    assert manifests[2] == {**dict.fromkeys(MODELS[:3], newest), **dict.fromkeys(MODELS[3:], T0 + timedelta(minutes=20))}


def test_the_next_run_finds_the_models_out_of_sync_and_catches_up(scenario, spark):
    lake, _, runs, manifests, metadata = scenario
    assert runs[3].success
    assert manifests[3] == dict.fromkeys(MODELS, T0 + timedelta(minutes=90))
    assert {metadata[3][m]["state"] for m in MODELS} == {"models out of sync"}
    assert [m for m in MODELS if metadata[3][m]["rows_upserted"]] == ["sessions", "users"]
    sessions = spark.read.parquet(lake.web_model("sessions")).collect()
    assert sorted((r.session_id, r.page_views) for r in sessions) == sorted(
        [(uid("s1"), 2), (uid("s2"), 1), (uid("s3"), 1)]
    )
    checks = runs[3].get_asset_check_evaluations()
    assert len(checks) == 7 and all(c.passed for c in checks)


def test_web_limits_prints_the_state_and_the_window(scenario, monkeypatch):
    _, instance, _, _, _ = scenario
    monkeypatch.setenv("DAGSTER_HOME", instance.root_directory)
    monkeypatch.setenv("SNOWPLOW_WEB_START_DATE", "2026-03-01")
    result = CliRunner().invoke(main, ["web-limits"])
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert lines[0] == "Snowplow: Standard incremental run"
    assert lines[1].startswith("Snowplow: Processing data between 2026-03-01 03:30:00 and ")
    assert "users" in lines[-1] and "last_success 2026-03-01 09:30:00" in lines[-1]


def test_models_are_built_with_the_models_they_read(scenario):
    lake, instance, _, _, _ = scenario
    alone = materialize(instance, lake, selection=("users",))
    assert not alone.success
    assert "'users' needs ['sessions']" in str([e for e in alone.all_events if e.is_step_failure][0].event_specific_data.error)
    disabled = materialize(instance, lake, WITHOUT_USERS, MODELS)
    assert "disabled by SNOWPLOW_WEB_MODELS" in str(
        [e for e in disabled.all_events if e.is_step_failure][0].event_specific_data.error
    )


def test_web_models_job_follows_the_enabled_models(monkeypatch):
    from snowplow_assets.definitions import defs

    monkeypatch.setenv("SNOWPLOW_WEB_MODELS", WITHOUT_USERS)
    job = defs().resolve_job_def("web_models")
    assert job.asset_layer.selected_asset_keys == set(keys(MODELS[:4]))
