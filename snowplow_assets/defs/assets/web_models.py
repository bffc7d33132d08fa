"""The five incremental web models, built in one step over one window (snowplow_assets/web/).

One multi-asset rather than five assets: dbt-snowplow-web computes the run limits once per run, and here
the limits come from the manifest as it was before the run, the models share the window's events, and
each model's table is read by the next. The step builds the selected models in order and yields each
one's materialisation (its manifest entry) and checks as soon as it is done. When a model fails, the step
stops: the models before it have recorded their new last_success, it and the models after it keep their
old one, and the next run finds the manifest out of sync and catches them up. When a model's check fails,
its table is already written and its last_success recorded (as dbt-snowplow-web updates its manifest for a
model whose tests fail); the step stops before the models after it, which read that table. A check the run
leaves out (deselected in the launchpad) is not evaluated, so it stops nothing.

The step is in the `web_models` concurrency pool, which dagster.yaml limits to 1: two runs at once would
compute their windows from the same manifest and swap the same day partitions, so a second run waits.

`full_refresh` in the run config is dbt's `--full-refresh` for the models the run builds: for events that
reached the lake after the windows had passed them (a run folder reprocessed once the event manifest could
check its events, say), which no incremental run reads again.
"""

from collections.abc import Iterator
from datetime import UTC, datetime

import dagster as dg
from dagster_pyspark import LazyPySparkResource
from pydantic import Field

from snowplow_assets.defs.checks.web_checks import WEB_CHECK_SPECS, web_check_results
from snowplow_assets.defs.manifests.web_manifest import LAST_SUCCESS, WEB_MODELS_JOB, read_web_manifest, web_asset_key
from snowplow_assets.defs.pools import WEB_MODELS_POOL
from snowplow_assets.defs.resources import LakeResource, WebModelsResource
from snowplow_assets.storage import LakeFileSystem
from snowplow_assets.web.pipeline import TABLES, ModelResult, WebRun, drop_summary
from snowplow_assets.web.variables import MODELS, UPSTREAM, closed_upstream

_DESCRIPTIONS = {
    "sessions_lifecycle": "Start and end of every session by collector_tstamp, merged with least/greatest and "
    "capped at max_session_days (web/sessions_lifecycle/).",
    "quarantined_sessions": "Sessions capped at max_session_days; never processed again (web/quarantined_sessions/).",
    "page_views": "One row per page view id, with engaged time from page pings (web/page_views/).",
    "sessions": "One row per session: start, end, page views, engaged time, events (web/sessions/).",
    "users": "One row per domain_userid over all of its sessions (web/users/).",
}

# The shredded outputs each model reads besides the tables of its upstream models.
_READS = {
    "sessions_lifecycle": ["atomic_events"],
    "quarantined_sessions": ["atomic_events"],
    "page_views": ["atomic_events", "shredded_types"],
    "sessions": ["atomic_events", "shredded_types"],
    "users": [],
}


def _web_specs() -> list[dg.AssetSpec]:
    # A function, not a module-level list: the defs loader would take listed specs for assets of their own.
    return [
        dg.AssetSpec(
            web_asset_key(model),
            deps=[*(web_asset_key(m) for m in UPSTREAM[model]), *_READS[model]],
            skippable=True,
            kinds={"spark", "parquet"},
            description=_DESCRIPTIONS[model],
        )
        for model in MODELS
    ]


def _metadata(run: WebRun, result: ModelResult, table: str) -> dict[str, object]:
    limits = run.limits
    metadata: dict[str, object] = {
        "state": limits.state.value,
        "lower_limit": dg.MetadataValue.timestamp(limits.lower),
        "upper_limit": dg.MetadataValue.timestamp(limits.upper),
        "processing": limits.processing,
        "wrote": result.ran and result.rows > 0,
        "rows_upserted": result.rows,
        "note": result.note,
        "path": dg.MetadataValue.path(table),
        **{name: int(value) for name, value in result.counts.items()},
    }
    if result.partitions_written:
        metadata["partitions_rewritten"] = len(result.partitions_written)
    if result.last_success is not None:
        metadata[LAST_SUCCESS] = dg.MetadataValue.timestamp(result.last_success)
    if result.previous_last_success is not None:
        metadata["previous_last_success"] = dg.MetadataValue.timestamp(result.previous_last_success)
    return metadata


def _models_to_build(context: dg.AssetExecutionContext, enabled: tuple[str, ...]) -> tuple[str, ...]:
    selected = [m for m in MODELS if web_asset_key(m) in context.selected_asset_keys]
    disabled = [m for m in selected if m not in enabled]
    if disabled:
        raise dg.Failure(
            f"web model(s) {disabled} are disabled by SNOWPLOW_WEB_MODELS ({','.join(enabled)}); "
            f"materialise the {WEB_MODELS_JOB} job or select enabled models only"
        )
    try:
        return closed_upstream(selected, within=enabled)
    except ValueError as error:
        raise dg.Failure(f"{error}; web models are built together with the models they read") from error


BUILD_WEB_MODELS = "build_web_models"  # the step's name, under which run config reaches WebModelsConfig


class WebModelsConfig(dg.Config):
    full_refresh: bool = Field(
        default=False,
        description="Remove the tables of the models this run builds and rebuild them from "
        "SNOWPLOW_WEB_START_DATE, as dbt's --full-refresh. Each run backfills up to backfill_limit_days; the "
        "web_models_after_shredding sensor, or more runs, carry them on until they are current.",
    )


def _start_over(
    context: dg.AssetExecutionContext,
    fs: LakeFileSystem,
    lake: LakeResource,
    models: tuple[str, ...],
    manifest: dict[str, datetime | None],
) -> dict[str, datetime | None]:
    """Take the models out of the manifest, then remove their tables; return the manifest without them.

    The manifest entry goes first, as a materialisation without last_success that is written to the event
    log at once (a run's own events are written only as its step yields them), so that a run dying after a
    table is gone leaves its model to be rebuilt from start_date by the next run, never carried on from the
    old last_success over an empty table.
    """
    for model in models:
        previous = manifest.get(model)
        context.instance.report_runless_asset_event(
            dg.AssetMaterialization(
                web_asset_key(model),
                description=f"full refresh by run {context.run_id}: table removed, to be rebuilt from start_date",
                metadata={
                    "full_refresh": True,
                    **({"previous_last_success": dg.MetadataValue.timestamp(previous)} if previous else {}),
                },
            )
        )
        fs.delete(lake.lake.web_model(TABLES[model].model))
    return {**manifest, **dict.fromkeys(models, None)}


@dg.multi_asset(
    name=BUILD_WEB_MODELS,
    specs=_web_specs(),
    check_specs=WEB_CHECK_SPECS,
    can_subset=True,
    group_name="web",
    pool=WEB_MODELS_POOL,
    description="Incremental web models over the shredded events, in one window per run (FORMATS.md §8).",
)
def build_web_models(
    context: dg.AssetExecutionContext,
    config: WebModelsConfig,
    lake: LakeResource,
    spark: LazyPySparkResource,
    web: WebModelsResource,
) -> Iterator[dg.MaterializeResult | dg.AssetCheckResult]:
    enabled = web.enabled_models()
    models = _models_to_build(context, enabled)
    manifest = read_web_manifest(context.instance, enabled)
    fs = lake.filesystem()
    if config.full_refresh:
        manifest = _start_over(context, fs, lake, models, manifest)
    with WebRun(spark.spark_session, fs, lake.lake, web.variables(), enabled, manifest, datetime.now(UTC)) as run:
        context.log.info(run.limits.message)
        context.log.info(run.limits.processing)
        for model in models:
            result = run.build(model)
            context.log.info(f"{model}: {result.note}")
            if model == MODELS[0] and result.counts:
                context.log.info(drop_summary(result.counts))
            yield dg.MaterializeResult(
                asset_key=web_asset_key(model),
                metadata=_metadata(run, result, lake.lake.web_model(TABLES[model].model)),
            )
            # The operator's way past a failure they accept is to leave the check out (README, Web models).
            selected = {key.name for key in context.selected_asset_check_keys if key.asset_key == web_asset_key(model)}
            outcomes = run.check(model, selected)
            yield from web_check_results(model, outcomes)
            failed = [o.name for o in outcomes if not o.passed]
            if failed:
                raise dg.Failure(f"web_{model} failed its checks {failed}; the models after it were not built")
