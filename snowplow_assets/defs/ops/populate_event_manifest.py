"""The populator as a Dagster job: back-fill the event manifest from shredded output (manifest/populate.py)."""

from datetime import date

import dagster as dg
from dagster_pyspark import LazyPySparkResource
from pydantic import Field

from snowplow_assets.defs.resources import EventManifestResource, LakeResource, event_manifest_run_tags
from snowplow_assets.manifest.populate import populate_event_manifest as populate
from snowplow_assets.settings import Settings


class PopulateConfig(dg.Config):
    since: str = Field(description="First day (YYYY-MM-DD) of the run folders whose shredded output is recorded.")


@dg.op(description="Record the events of shredded run folders from a date onwards in the event manifest.")
def populate_event_manifest_op(
    context: dg.OpExecutionContext,
    config: PopulateConfig,
    lake: LakeResource,
    spark: LazyPySparkResource,
    event_manifest_backend: EventManifestResource,
) -> dg.Output[None]:
    try:
        since = date.fromisoformat(config.since)
    except ValueError as error:
        raise dg.Failure(f"since must be a date, YYYY-MM-DD: {config.since!r}") from error
    manifest = event_manifest_backend.manifest(lake)
    if manifest is None:
        raise dg.Failure("there is no event manifest to populate: SNOWPLOW_EVENT_MANIFEST is none")
    report = populate(
        spark.spark_session, lake.filesystem(), lake.lake, manifest, since, event_manifest_backend.cross_batch_synthetic
    )
    context.log.info(f"populated {manifest.describe()} from {len(report.runs)} run folder(s): {report.counts}")
    return dg.Output(
        None,
        metadata={"location": manifest.describe(), "run_folders": len(report.runs), **report.counts},
    )


@dg.job(
    tags=event_manifest_run_tags(Settings()),
    description="Back-fill the event manifest from existing shredded output, so cross-batch deduplication does not "
    "start cold. Config: ops.populate_event_manifest_op.config.since = YYYY-MM-DD.",
)
def populate_event_manifest() -> None:
    populate_event_manifest_op()
