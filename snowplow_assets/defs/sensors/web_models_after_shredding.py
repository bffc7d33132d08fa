"""Keeps the web models current under the Dagster daemon: `web_models` runs after run folders are shredded.

`snowplow-assets process` runs the web_models job right after shredding. In a deployment the shreds come
from the run-folder sensor instead, and this sensor follows them. Nothing happens before the first shred,
nor while a web_models run is queued or running. Otherwise a tick requests a run

1. when the newest `atomic_events` materialisation is later than the start of the newest successful
   web_models run. One run takes in every folder shredded before it starts, so folders shredded while it
   runs wait for the next tick rather than each getting a run of its own. The run key names that
   materialisation; once a run with that key has failed, the key names the manifest instead, as in 2.
2. when the manifest is behind, although every shred is taken in: the next run would not be a standard
   run reaching the current time (a model was added, a failure left the models out of sync, or the last
   run stopped at the backfill limit). The run key names the manifest, so a run that leaves it as it was
   (a failure, a window without data) is not requested again for it.

Dagster starts no second run for a run key this sensor used, so a failing run is retried once (its
failure changes the manifest, or it does not), not on every tick; after that the next shred, or a run
launched by hand, tries again. The sensor reads only the event log (the manifest is the web models'
materialisations): no Spark, no lake listing.
"""

import hashlib
from datetime import UTC, datetime

import dagster as dg
from dagster._core.storage.dagster_run import NOT_FINISHED_STATUSES
from dagster._core.storage.tags import RUN_KEY_TAG

from snowplow_assets.defs.checks.shred_checks import ATOMIC_EVENTS
from snowplow_assets.defs.manifests.web_manifest import WEB_MODELS_JOB, read_web_manifest
from snowplow_assets.defs.resources import LakeResource, WebModelsResource
from snowplow_assets.settings import Settings
from snowplow_assets.web.run_limits import RunState, as_utc, run_limits
from snowplow_assets.web.variables import parse_models

SENSOR_NAME = "web_models_after_shredding"


def web_models_request(
    instance: dg.DagsterInstance, web: WebModelsResource, now: datetime
) -> dg.RunRequest | dg.SkipReason:
    """What a tick decides (module doc)."""
    shredded = instance.fetch_materializations(ATOMIC_EVENTS, limit=1).records
    if not shredded:
        return dg.SkipReason("no run folder has been shredded yet")
    if instance.get_run_records(dg.RunsFilter(job_name=WEB_MODELS_JOB, statuses=NOT_FINISHED_STATUSES), limit=1):
        return dg.SkipReason(f"a {WEB_MODELS_JOB} run is queued or running")
    latest = shredded[0]
    succeeded = instance.get_run_records(
        dg.RunsFilter(job_name=WEB_MODELS_JOB, statuses=[dg.DagsterRunStatus.SUCCESS]), limit=1
    )
    taken_in = bool(succeeded) and (succeeded[0].start_time or 0) >= latest.timestamp
    shred_key = f"atomic_events-{latest.storage_id}"
    if not taken_in and not _used(instance, shred_key):
        return dg.RunRequest(run_key=shred_key)

    enabled = web.enabled_models()
    manifest = read_web_manifest(instance, enabled)
    limits = run_limits(enabled, manifest, now, web.variables())
    if taken_in and limits.state is RunState.STANDARD and limits.upper >= as_utc(now):
        return dg.SkipReason(f"the web models are up to date: {limits.processing.removeprefix('Snowplow: ')}")
    entries = ",".join(f"{m}={manifest[m].isoformat() if manifest[m] else ''}" for m in enabled)
    return dg.RunRequest(run_key=f"manifest-{hashlib.sha256(entries.encode()).hexdigest()[:16]}")


def _used(instance: dg.DagsterInstance, run_key: str) -> bool:
    return bool(instance.get_run_records(dg.RunsFilter(job_name=WEB_MODELS_JOB, tags={RUN_KEY_TAG: run_key}), limit=1))


@dg.definitions
def web_models_after_shredding() -> dg.Definitions:
    # Like the job, defined only when some web model is enabled (SNOWPLOW_WEB_MODELS when the location loads).
    if not parse_models(Settings().web_models):
        return dg.Definitions()

    @dg.sensor(
        name=SENSOR_NAME,
        job_name=WEB_MODELS_JOB,
        minimum_interval_seconds=60,
        default_status=dg.DefaultSensorStatus.RUNNING,
        description="Runs the web_models job after run folders were shredded, and while the web models are behind.",
    )
    def _sensor(
        context: dg.SensorEvaluationContext, web: WebModelsResource, lake: LakeResource
    ) -> dg.RunRequest | dg.SkipReason:
        # `lake` is not read here: setting it up checks that the instance serves this lake (LakeResource), since
        # the web models' progress this sensor reads belongs to the instance's.
        del lake
        return web_models_request(context.instance, web, datetime.now(UTC))

    return dg.Definitions(sensors=[_sensor])
