import dagster as dg

from snowplow_assets.defs.jobs.cdc import cdc_ingest_landing
from snowplow_assets.defs.manifests.processing_manifest import CDC_LANDINGS
from snowplow_assets.defs.resources import LakeResource
from snowplow_assets.defs.sensors.folder_discovery import evaluate_folder_sensor
from snowplow_assets.settings import Settings

SENSOR = "cdc_landing_folders"


@dg.sensor(
    name=SENSOR,
    job=cdc_ingest_landing,
    minimum_interval_seconds=30,
    default_status=dg.DefaultSensorStatus.RUNNING,
    description="Registers new, ready CDC landing folders (cdc/landing/<folder>) as cdc_landings partitions and "
    "ingests each one the processing manifest lets start: new ones, and failed ones an operator resolved.",
)
def cdc_landing_folders(context: dg.SensorEvaluationContext, lake: LakeResource) -> dg.SensorResult:
    # The same discovery, readiness rule and manifest locks as enriched run folders (folder_discovery.py).
    return evaluate_folder_sensor(context, SENSOR, CDC_LANDINGS, lake.filesystem(), lake.lake.cdc_landings, Settings())
