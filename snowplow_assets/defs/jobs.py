import dagster as dg

from snowplow_assets.defs.partitions import enriched_runs
from snowplow_assets.defs.resources import event_manifest_run_tags
from snowplow_assets.defs.web_manifest import WEB_MODELS_JOB, web_asset_key
from snowplow_assets.settings import Settings
from snowplow_assets.web.variables import parse_models

# One run per enriched run folder: record the input, shred it, check the output.
shred_enriched_run = dg.define_asset_job(
    "shred_enriched_run",
    selection=dg.AssetSelection.assets("enriched_batch", "atomic_events", "shredded_types", "event_manifest"),
    partitions_def=enriched_runs,
    tags=event_manifest_run_tags(Settings()),
    description="Shred one enriched run folder: the job the run-folder sensor and `snowplow-assets process` launch.",
)


@dg.definitions
def web_models_job() -> dg.Definitions:
    # Built when the code location loads, so the selection follows SNOWPLOW_WEB_MODELS of that moment.
    enabled = parse_models(Settings().web_models)
    if not enabled:
        return dg.Definitions()
    job = dg.define_asset_job(
        WEB_MODELS_JOB,
        selection=dg.AssetSelection.assets(*(web_asset_key(m) for m in enabled)),
        description="Bring the enabled web models up to date: the job `snowplow-assets process` runs after shredding.",
    )
    return dg.Definitions(jobs=[job])


@dg.definitions
def executor() -> dg.Definitions:
    # Steps of a run share one process, so they share one lazily started SparkSession.
    return dg.Definitions(executor=dg.in_process_executor)
