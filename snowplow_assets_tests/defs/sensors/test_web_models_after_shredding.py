"""The web_models_after_shredding sensor: a web_models run after shreds and while the manifest is behind,
never two at once, and no run key twice."""

from datetime import UTC, datetime, timedelta

import dagster as dg
import pytest
from dagster._core.storage.tags import RUN_KEY_TAG
from dagster._core.test_utils import create_run_for_test

from snowplow_assets.defs.checks.shred_checks import ATOMIC_EVENTS
from snowplow_assets.defs.manifests.instance_lake import InstanceOfAnotherLake, claim_instance_for_lake
from snowplow_assets.defs.manifests.web_manifest import LAST_SUCCESS, WEB_MODELS_JOB, web_asset_key
from snowplow_assets.defs.resources import LakeResource, WebModelsResource
from snowplow_assets.defs.sensors.web_models_after_shredding import SENSOR_NAME, web_models_request
from snowplow_assets.web.variables import MODELS

WEB = WebModelsResource(start_date="2026-03-01")
NOW = datetime(2026, 3, 10, 12, tzinfo=UTC)


@dg.op
def _noop() -> None:
    pass


@dg.job(name=WEB_MODELS_JOB)
def web_models_stand_in() -> None:
    """A job under the web_models name: the sensor only looks at runs' job names, statuses, tags and start."""
    _noop()


def shred(instance: dg.DagsterInstance, run_folder: str) -> int:
    """Record an atomic_events materialisation, as a shred run does; return its storage id."""
    instance.report_runless_asset_event(dg.AssetMaterialization(ATOMIC_EVENTS, partition=run_folder))
    return instance.fetch_materializations(ATOMIC_EVENTS, limit=1).records[0].storage_id


def record_manifest(instance: dg.DagsterInstance, last_success: datetime, models=MODELS) -> None:
    for model in models:
        metadata = {LAST_SUCCESS: dg.MetadataValue.timestamp(last_success)}
        instance.report_runless_asset_event(dg.AssetMaterialization(web_asset_key(model), metadata=metadata))


def request(instance: dg.DagsterInstance, now: datetime = NOW) -> dg.RunRequest | dg.SkipReason:
    return web_models_request(instance, WEB, now)


def test_a_run_after_each_shred_but_never_two_at_once(instance):
    assert "no run folder has been shredded" in request(instance).skip_message

    first = shred(instance, "run=2026-03-10-09-00-00")
    assert request(instance).run_key == f"atomic_events-{first}"
    running = create_run_for_test(instance, job_name=WEB_MODELS_JOB, status=dg.DagsterRunStatus.STARTED)
    assert "queued or running" in request(instance).skip_message

    # that run failed: the shred's key is used, so the retry names the manifest (empty here), once
    instance.delete_run(running.run_id)
    create_run_for_test(
        instance,
        job_name=WEB_MODELS_JOB,
        status=dg.DagsterRunStatus.FAILURE,
        tags={RUN_KEY_TAG: f"atomic_events-{first}"},
    )
    retry = request(instance).run_key
    assert retry.startswith("manifest-") and request(instance).run_key == retry

    # a run that started after the shred and left a current manifest: nothing to do
    assert web_models_stand_in.execute_in_process(instance=instance).success
    record_manifest(instance, NOW - timedelta(hours=1))
    assert (
        "up to date: Processing data between 2026-03-10 05:00:00 and 2026-03-10 12:00:00"
        in request(instance).skip_message
    )

    second = shred(instance, "run=2026-03-10-10-00-00")
    assert request(instance).run_key == f"atomic_events-{second}"


def test_a_manifest_that_is_behind_gets_runs_until_it_is_not(instance):
    shred(instance, "run=2026-03-10-09-00-00")
    assert web_models_stand_in.execute_in_process(instance=instance).success
    record_manifest(instance, NOW - timedelta(hours=1), MODELS[:4])  # users was enabled later: new model
    new_model = request(instance)
    assert isinstance(new_model, dg.RunRequest) and new_model.run_key.startswith("manifest-")

    record_manifest(instance, NOW - timedelta(hours=1), ["users"])
    assert isinstance(request(instance), dg.SkipReason)
    # forty days on, one run stops at the backfill limit (30 days): the next one carries on from there
    caught_up_to = request(instance, NOW + timedelta(days=40))
    assert isinstance(caught_up_to, dg.RunRequest) and caught_up_to.run_key != new_model.run_key


def test_the_sensor_follows_the_enabled_models(lake, monkeypatch, instance):
    from snowplow_assets.definitions import defs

    monkeypatch.setenv("SNOWPLOW_LAKE", lake.root)
    sensor = defs().resolve_sensor_def(SENSOR_NAME)
    assert sensor.job_name == WEB_MODELS_JOB and sensor.default_status == dg.DefaultSensorStatus.RUNNING
    shred(instance, "run=2026-03-10-09-00-00")
    resources = {"web": WEB, "lake": LakeResource(root=lake.root)}
    with dg.build_sensor_context(instance=instance, resources=resources) as context:
        result = sensor(context)
    assert isinstance(result, dg.RunRequest) and result.run_key.startswith("atomic_events-")

    # In an instance that serves another lake, whose web models' progress it would read, the tick fails.
    other = dg.DagsterInstance.ephemeral()
    claim_instance_for_lake(other, "/some/other/lake")
    shred(other, "run=2026-03-10-09-00-00")
    with pytest.raises(dg.DagsterResourceFunctionError) as refused:
        with dg.build_sensor_context(instance=other, resources=resources) as context:
            sensor(context)
    assert isinstance(refused.value.__cause__, InstanceOfAnotherLake)

    monkeypatch.setenv("SNOWPLOW_WEB_MODELS", "")
    assert SENSOR_NAME not in {s.name for s in defs().sensors or []}
