import dagster as dg

from snowplow_assets.defs.jobs.shred_enriched_run import shred_enriched_run
from snowplow_assets.defs.manifests.processing_manifest import RUN_FOLDERS
from snowplow_assets.defs.resources import LakeResource
from snowplow_assets.defs.sensors.folder_discovery import evaluate_folder_sensor
from snowplow_assets.settings import Settings

SENSOR = "enriched_run_folders"


@dg.sensor(
    name=SENSOR,
    job=shred_enriched_run,
    minimum_interval_seconds=30,
    default_status=dg.DefaultSensorStatus.RUNNING,
    description="Registers new, ready enriched run folders (disk or S3) as enriched_runs partitions and shreds "
    "each one the processing manifest lets start: new ones, and failed ones an operator resolved.",
)
def enriched_run_folders(context: dg.SensorEvaluationContext, lake: LakeResource) -> dg.SensorResult:
    return evaluate_folder_sensor(context, SENSOR, RUN_FOLDERS, lake.filesystem(), lake.lake.enriched, Settings())
