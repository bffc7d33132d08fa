"""The web-models step of `process` and `demo`: one run of the `web_models` job after shredding."""

from __future__ import annotations

from collections.abc import Callable

import dagster as dg

from snowplow_assets.cli.process_request import ProcessRequest
from snowplow_assets.cli.runs import RunOutcome, echo_outcome, execute_run
from snowplow_assets.defs.assets.web_models import BUILD_WEB_MODELS
from snowplow_assets.defs.manifests.web_manifest import WEB_MODELS_JOB, web_asset_key
from snowplow_assets.defs.resources import WebModelsResource
from snowplow_assets.settings import Settings


def build_web_models(
    instance: dg.DagsterInstance,
    settings: Settings,
    echo: Callable[[str], None],
    request: ProcessRequest = ProcessRequest(),
) -> list[RunOutcome]:
    """Run the web_models job with the web settings of `settings` (from scratch on a full refresh) and report
    what each model did."""
    resource = WebModelsResource.from_settings(settings)
    if not resource.enabled_models():
        echo("web models: none enabled (SNOWPLOW_WEB_MODELS)")
        return []
    echo("building web models" + (" from scratch (full refresh)" if request.full_refresh else "") + " ...")
    ops = {BUILD_WEB_MODELS: {"config": {"full_refresh": True}}} if request.full_refresh else None
    resources = {"web": {"config": resource.model_dump()}}
    outcome = echo_outcome(execute_run(instance, WEB_MODELS_JOB, resources=resources, ops=ops), echo)
    for model in resource.enabled_models():
        records = instance.fetch_materializations(
            dg.AssetRecordsFilter(asset_key=web_asset_key(model)), limit=1
        ).records
        materialization = records[0].asset_materialization if records else None
        if materialization is None or records[0].run_id != outcome.run_id:
            echo(f"  {model}: not built in this run")
            continue
        metadata = materialization.metadata
        processing = metadata["processing"].value
        echo(
            f"  {model}: {metadata['note'].value} ({metadata['state'].value}; {processing.removeprefix('Snowplow: ')})"
        )
    return [outcome]
