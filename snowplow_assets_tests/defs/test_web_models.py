"""The web models in Dagster: the manifest in materialisation metadata, a failing model that leaves the
manifest out of sync until the next run catches up, asset checks, the job and the resource.

The states themselves, a model added later included, are proven on the pipeline (web/test_pipeline.py);
here the subject is what Dagster records and how a failure in the step leaves the manifest.
"""

from datetime import timedelta
from pathlib import Path

import dagster as dg
import pytest
import yaml
from dagster_pyspark import LazyPySparkResource

from snowplow_assets.defs.assets.web_models import build_web_models
from snowplow_assets.defs.manifests.web_manifest import read_web_manifest, web_asset_key
from snowplow_assets.defs.pools import WEB_MODELS_POOL
from snowplow_assets.defs.resources import LakeResource, WebModelsResource
from snowplow_assets.lake import Lake
from snowplow_assets.settings import PROJECT_ROOT, Settings
from snowplow_assets.spark import spark_session_config
from snowplow_assets.storage import LocalFileSystem
from snowplow_assets.web.variables import MODELS, WebVariables
from snowplow_assets_tests.conftest import TEST_SPARK_CONFIG
from snowplow_assets_tests.web.shredded import Event, ts, uid, write_shredded_run

T0 = ts("2026-03-01 08:00:00")
FIRST = [
    Event("s1/home", T0, "s1", "u1", page_view="s1/home"),
    Event("s1/home/ping", T0 + timedelta(seconds=12), "s1", "u1", event="page_ping", page_view="s1/home"),
    Event("s2/home", T0 + timedelta(minutes=20), "s2", "u2", page_view="s2/home"),
]
LATE = Event("s4/home", ts("2026-03-01 01:00:00"), "s4", "u4", page_view="s4/home")
SECOND = [
    Event("s1/cart", T0 + timedelta(minutes=70), "s1", "u1", page_view="s1/cart"),
    Event("s3/home", T0 + timedelta(minutes=90), "s3", "u3", page_view="s3/home"),
]
WITHOUT_USERS = ",".join(MODELS[:4])


def keys(models=MODELS) -> list[dg.AssetKey]:
    return [web_asset_key(m) for m in models]


FULL_REFRESH = {"ops": {"build_web_models": {"config": {"full_refresh": True}}}}


def materialize(
    instance, lake: Lake, models: str = ",".join(MODELS), selection=MODELS, run_config=None, **variables: int
) -> dg.ExecuteInProcessResult:
    """A run of the step; `selection` is model names, or an AssetSelection as the launchpad makes one;
    `variables` are web variables other than their defaults."""
    resources = {
        "lake": LakeResource(root=lake.root),
        "spark": LazyPySparkResource(spark_config=spark_session_config(TEST_SPARK_CONFIG)),
        "web": WebModelsResource(models=models, start_date="2026-03-01", **variables),
    }
    selection = selection if isinstance(selection, dg.AssetSelection) else keys(selection)
    return dg.materialize([build_web_models], selection=selection, resources=resources, instance=instance,
                          run_config=run_config, raise_on_error=False)  # fmt: skip


def latest_metadata(instance, model: str) -> dict[str, object]:
    [record] = instance.fetch_materializations(dg.AssetRecordsFilter(asset_key=web_asset_key(model)), limit=1).records
    return {k: v.value for k, v in record.asset_materialization.metadata.items()}


def session_rows(spark, lake: Lake) -> list[tuple[str, int]]:
    return sorted(
        (r.session_id, r.page_views)
        for r in spark.read.parquet(LocalFileSystem().spark_read_path(lake.web_model("sessions"))).collect()
    )


@pytest.fixture(scope="module")
def scenario(spark, tmp_path_factory):
    """Four runs: the first run, sessions failing, the catch-up, and a full refresh. Each run's result, manifest
    and metadata; the sessions after the catch-up and after the refresh; and each model's last three
    materialisations after the refresh.

    After the first run, a folder is shredded again: named, and its events sent, before the lookback of the
    next runs, which therefore never open it; the full refresh reads it."""
    lake = Lake(str(tmp_path_factory.mktemp("web_dagster") / "lake"))
    write_shredded_run(lake, "run=2026-03-01-09-00-00", FIRST)
    with dg.instance_for_test() as instance:
        runs, manifests, metadata, sessions = [], [], [], []

        def record(result):
            runs.append(result)
            manifests.append(read_web_manifest(instance))
            metadata.append({m: latest_metadata(instance, m) for m in MODELS if manifests[-1][m] is not None})

        record(materialize(instance, lake))
        write_shredded_run(lake, "run=2026-03-01-01-30-00", [LATE])
        write_shredded_run(lake, "run=2026-03-01-11-00-00", SECOND)
        day = Path(lake.web_model("sessions"), "start_date=2026-03-01")
        (day / "part-broken.parquet").write_text("not parquet")
        record(materialize(instance, lake))  # sessions cannot read its table and fails
        (day / "part-broken.parquet").unlink()
        record(materialize(instance, lake))  # catches sessions and users up
        sessions.append(session_rows(spark, lake))
        record(materialize(instance, lake, run_config=FULL_REFRESH))
        sessions.append(session_rows(spark, lake))
        materialisations = {
            model: instance.fetch_materializations(
                dg.AssetRecordsFilter(asset_key=web_asset_key(model)), limit=3
            ).records
            for model in MODELS
        }
        yield lake, instance, runs, manifests, metadata, sessions, materialisations


def test_first_run_records_the_manifest_in_materialisation_metadata(scenario):
    _, _, runs, manifests, metadata, _, _ = scenario
    assert runs[0].success
    assert manifests[0] == dict.fromkeys(MODELS, T0 + timedelta(minutes=20))
    lifecycle = metadata[0]["sessions_lifecycle"]
    assert lifecycle["state"] == "first run" and lifecycle["rows_upserted"] == 2
    assert lifecycle["processing"].startswith("Snowplow: Processing data between 2026-03-01 00:00:00 and ")
    assert lifecycle["events"] == 3 and lifecycle["valid"] == 3 and lifecycle["new_sessions"] == 2
    assert "previous_last_success" not in lifecycle
    assert [metadata[0][m]["rows_upserted"] for m in MODELS] == [2, 0, 2, 2, 2]
    checks = runs[0].get_asset_check_evaluations()
    assert len(checks) == 7 and all(c.passed for c in checks)


def test_a_failing_model_leaves_it_and_the_ones_after_it_behind(scenario):
    _, _, runs, manifests, metadata, _, _ = scenario
    assert not runs[1].success
    [failure] = [e for e in runs[1].all_events if e.is_step_failure]
    assert "part-broken.parquet" in str(failure.event_specific_data.error)
    newest, before = T0 + timedelta(minutes=90), T0 + timedelta(minutes=20)
    assert manifests[1] == {**dict.fromkeys(MODELS[:3], newest), **dict.fromkeys(MODELS[3:], before)}
    assert metadata[1]["page_views"]["state"] == "standard run"
    assert metadata[1]["page_views"]["previous_last_success"] == before.timestamp()
    # the models after the failure recorded nothing in that run
    assert metadata[1]["sessions"] == metadata[0]["sessions"]


def test_the_next_run_finds_the_models_out_of_sync_and_catches_up(scenario):
    _, _, runs, manifests, metadata, sessions, _ = scenario
    assert runs[2].success
    assert manifests[2] == dict.fromkeys(MODELS, T0 + timedelta(minutes=90))
    assert {metadata[2][m]["state"] for m in MODELS} == {"models out of sync"}
    assert [m for m in MODELS if metadata[2][m]["rows_upserted"]] == ["sessions", "users"]
    assert all("at or past the upper limit" in metadata[2][m]["note"] for m in MODELS[:3])
    assert sessions[0] == sorted([(uid("s1"), 2), (uid("s2"), 1), (uid("s3"), 1)])
    checks = runs[2].get_asset_check_evaluations()
    assert len(checks) == 7 and all(c.passed for c in checks)


def test_models_are_built_with_the_models_they_read(scenario):
    lake, instance, *_ = scenario
    alone = materialize(instance, lake, selection=("users",))
    assert not alone.success
    assert "'users' needs ['sessions']" in str(
        [e for e in alone.all_events if e.is_step_failure][0].event_specific_data.error
    )
    disabled = materialize(instance, lake, WITHOUT_USERS, MODELS)
    assert "disabled by SNOWPLOW_WEB_MODELS" in str(
        [e for e in disabled.all_events if e.is_step_failure][0].event_specific_data.error
    )


def test_a_full_refresh_rebuilds_from_start_date_with_events_no_window_reads_again(scenario):
    _, _, runs, manifests, metadata, sessions, materialisations = scenario
    refreshed = runs[3]
    # The incremental runs after the late folder was shredded never read it; the full refresh does.
    assert [s for s, _ in sessions[0]] == sorted([uid("s1"), uid("s2"), uid("s3")])
    assert refreshed.success
    assert [s for s, _ in sessions[1]] == sorted([uid("s1"), uid("s2"), uid("s3"), uid("s4")])
    assert manifests[3] == dict.fromkeys(MODELS, T0 + timedelta(minutes=90))
    assert {metadata[3][m]["state"] for m in MODELS} == {"first run"}
    # Each model left the manifest outside the run, so that a run dying once its table is gone leaves it to
    # be rebuilt from the start, then was rebuilt in the run.
    for model in MODELS:
        rebuilt, reset, before = materialisations[model]
        assert rebuilt.run_id == refreshed.run_id and reset.run_id != refreshed.run_id
        assert reset.storage_id > before.storage_id
        reset_metadata = reset.asset_materialization.metadata
        assert reset_metadata["full_refresh"].value is True and "last_success" not in reset_metadata
        assert reset_metadata["previous_last_success"].value == (T0 + timedelta(minutes=90)).timestamp()
        assert refreshed.run_id in reset.asset_materialization.description


def test_web_models_job_follows_the_enabled_models(monkeypatch):
    from snowplow_assets.definitions import defs

    monkeypatch.setenv("SNOWPLOW_WEB_MODELS", WITHOUT_USERS)
    job = defs().resolve_job_def("web_models")
    assert job.asset_layer.selected_asset_keys == set(keys(MODELS[:4]))


def test_the_resource_carries_the_web_settings(monkeypatch):
    monkeypatch.setenv("SNOWPLOW_WEB_MODELS", WITHOUT_USERS)
    monkeypatch.setenv("SNOWPLOW_WEB_START_DATE", "2024-02-29")
    monkeypatch.setenv("SNOWPLOW_WEB_HEARTBEAT", "30")
    settings = Settings()
    resource = WebModelsResource.from_settings(settings)
    assert resource.enabled_models() == MODELS[:4]
    assert resource.variables() == WebVariables.from_settings(settings)
    assert resource.variables().heartbeat == 30 and resource.start_date == "2024-02-29"
    # what `process` passes as run config comes back as the same resource
    assert WebModelsResource(**resource.model_dump()).variables() == resource.variables()


def test_one_web_models_step_at_a_time():
    pools = yaml.safe_load((PROJECT_ROOT / "dagster.yaml").read_text())["concurrency"]["pools"]
    assert build_web_models.op.pool == WEB_MODELS_POOL
    # every pool without a limit of its own gets this one, claimed by each step wherever it runs
    assert (pools["default_limit"], pools["granularity"]) == (1, "op")
