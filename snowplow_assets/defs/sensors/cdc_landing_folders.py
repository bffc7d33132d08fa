from snowplow_assets.defs.jobs.cdc import cdc_ingest_landing
from snowplow_assets.defs.manifests.processing_manifest import CDC_LANDINGS
from snowplow_assets.defs.sensors.folder_discovery import folder_sensor

# The same discovery, readiness rule and manifest locks as enriched run folders.
cdc_landing_folders = folder_sensor(
    "cdc_landing_folders",
    cdc_ingest_landing,
    CDC_LANDINGS,
    lambda lake: lake.cdc_landings,
    "Registers new, ready CDC landing folders (cdc/landing/<folder>) as cdc_landings partitions and ingests each "
    "one the processing manifest lets start: New ones (registered by the sensor or by `process`), and failed ones an "
    "operator resolved.",
)
