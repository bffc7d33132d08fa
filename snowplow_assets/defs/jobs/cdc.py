import dagster as dg

from snowplow_assets.defs.partitions import cdc_landings

CDC_INGEST_JOB = "cdc_ingest_landing"
CDC_BATCH_JOB = "cdc_batch"

# One run per landing folder: its changes, deletes and bad rows.
cdc_ingest_landing = dg.define_asset_job(
    CDC_INGEST_JOB,
    selection=dg.AssetSelection.assets("cdc_history", "cdc_deletes"),
    partitions_def=cdc_landings,
    description="Ingest one CDC landing folder: the job the landing sensor and `snowplow-assets process` launch.",
)

# Every model's next batch, then the latest view on it: the job of the schedule and `snowplow-assets process`.
cdc_batch = dg.define_asset_job(
    CDC_BATCH_JOB,
    selection=dg.AssetSelection.assets("cdc_batches", "cdc_latest"),
    description="Cut the next batch of every CDC model, run its column tests, refresh the latest view.",
)
