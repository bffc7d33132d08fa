import time

import dagster as dg

from snowplow_assets.defs.jobs import shred_enriched_run
from snowplow_assets.defs.partitions import enriched_runs
from snowplow_assets.defs.resources import LakeResource
from snowplow_assets.run_folders import find_new_run_folders
from snowplow_assets.settings import Settings


@dg.sensor(
    job=shred_enriched_run,
    minimum_interval_seconds=30,
    default_status=dg.DefaultSensorStatus.RUNNING,
    description="Registers new, ready enriched run folders as enriched_runs partitions and shreds each once.",
)
def enriched_run_folders(context: dg.SensorEvaluationContext, lake: LakeResource) -> dg.SensorResult:
    settings = Settings()
    known = set(context.instance.get_dynamic_partitions(enriched_runs.name))
    found = find_new_run_folders(
        lake.filesystem(),
        lake.lake.enriched,
        known,
        now=time.time(),
        ready_after_seconds=settings.ready_after_seconds,
        limit=settings.sensor_chunk_size,
    )
    if found.ignored:
        context.log.warning(f"ignoring folders that are not run=YYYY-MM-DD-hh-mm-ss: {found.ignored[:10]}")
    if found.waiting:
        context.log.info(f"not ready yet: {found.waiting[:10]}")
    return dg.SensorResult(
        run_requests=[dg.RunRequest(partition_key=run, run_key=run) for run in found.ready],
        dynamic_partitions_requests=[enriched_runs.build_add_request(found.ready)] if found.ready else [],
    )
