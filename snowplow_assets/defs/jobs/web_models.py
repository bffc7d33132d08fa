import dagster as dg

from snowplow_assets.defs.manifests.web_manifest import WEB_MODELS_JOB, web_asset_key
from snowplow_assets.settings import Settings
from snowplow_assets.web.variables import parse_models


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
