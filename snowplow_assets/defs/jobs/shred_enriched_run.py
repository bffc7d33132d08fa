import dagster as dg

from snowplow_assets.defs.partitions import enriched_runs
from snowplow_assets.defs.resources import event_manifest_run_tags
from snowplow_assets.settings import Settings

# One run per enriched run folder: record the input, shred it, check the output.
shred_enriched_run = dg.define_asset_job(
    "shred_enriched_run",
    selection=dg.AssetSelection.assets("enriched_batch", "atomic_events", "shredded_types", "event_manifest"),
    partitions_def=enriched_runs,
    tags=event_manifest_run_tags(Settings()),
    description="Shred one enriched run folder: the job the run-folder sensor and `snowplow-assets process` launch.",
)
