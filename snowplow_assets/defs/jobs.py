import dagster as dg

from snowplow_assets.defs.partitions import enriched_runs

# One run per enriched run folder: record the input, shred it, check the output.
shred_enriched_run = dg.define_asset_job(
    "shred_enriched_run",
    selection=dg.AssetSelection.assets("enriched_batch", "atomic_events", "shredded_types"),
    partitions_def=enriched_runs,
    description="Shred one enriched run folder: the job the run-folder sensor and `snowplow-assets process` launch.",
)


@dg.definitions
def executor() -> dg.Definitions:
    # Steps of a run share one process, so they share one lazily started SparkSession.
    return dg.Definitions(executor=dg.in_process_executor)
