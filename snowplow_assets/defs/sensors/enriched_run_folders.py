from snowplow_assets.defs.jobs.shred_enriched_run import shred_enriched_run
from snowplow_assets.defs.manifests.processing_manifest import RUN_FOLDERS
from snowplow_assets.defs.sensors.folder_discovery import folder_sensor

enriched_run_folders = folder_sensor(
    "enriched_run_folders",
    shred_enriched_run,
    RUN_FOLDERS,
    lambda lake: lake.enriched,
    "Registers new, ready enriched run folders (disk or S3) as enriched_runs partitions and shreds each one the "
    "processing manifest lets start: New ones (registered by the sensor or by `process`), and failed ones an operator "
    "resolved.",
)
