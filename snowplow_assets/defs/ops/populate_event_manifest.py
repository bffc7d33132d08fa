"""The populator as a Dagster op: back-fill the event manifest from shredded output (manifest/populate.py)."""

from collections.abc import Iterator
from datetime import date

import dagster as dg
from dagster_pyspark import LazyPySparkResource
from pydantic import Field

from snowplow_assets.defs.checks.event_manifest_checks import EVENT_MANIFEST
from snowplow_assets.defs.partitions import enriched_runs
from snowplow_assets.defs.pools import SHRED_POOL
from snowplow_assets.defs.resources import EventManifestResource, LakeResource
from snowplow_assets.manifest.base import EventManifestUnavailable
from snowplow_assets.manifest.populate import populate_event_manifest as populate


class PopulateConfig(dg.Config):
    since: str = Field(description="First day (YYYY-MM-DD) of the run folders whose shredded output is recorded.")


@dg.op(
    description="Record the events of shredded run folders from a date onwards in the event manifest.",
    pool=SHRED_POOL,
)
def populate_event_manifest_op(
    context: dg.OpExecutionContext,
    config: PopulateConfig,
    lake: LakeResource,
    spark: LazyPySparkResource,
    event_manifest_backend: EventManifestResource,
) -> Iterator[dg.AssetMaterialization | dg.Output[None]]:
    try:
        since = date.fromisoformat(config.since)
    except ValueError as error:
        raise dg.Failure(f"since must be a date, YYYY-MM-DD: {config.since!r}") from error
    manifest = event_manifest_backend.manifest(lake)
    if manifest is None:
        raise dg.Failure("there is no event manifest to populate: SNOWPLOW_EVENT_MANIFEST is none")
    try:
        report = populate(
            lambda: spark.spark_session,
            lake.filesystem(),
            lake.lake,
            manifest,
            since,
            event_manifest_backend.cross_batch_synthetic,
        )
    except EventManifestUnavailable as error:
        raise dg.Failure(str(error), metadata={"event_manifest": manifest.describe()}) from error
    context.log.info(f"populated {manifest.describe()} from {len(report.runs)} run folder(s): {report.counts}")
    # The populated batches' entries are now in the manifest: their event_manifest partitions say so, as a
    # shred would have. Only registered partitions: a folder the sensor has not seen is not one yet.
    registered = set(context.instance.get_dynamic_partitions(enriched_runs.name))
    for batch in report.batches:
        if batch.run in registered:
            yield dg.AssetMaterialization(
                asset_key=EVENT_MANIFEST,
                partition=batch.run,
                metadata={
                    "backend": manifest.backend,
                    "location": manifest.describe(),
                    "batch_etl_time": batch.etl_time,
                },
            )
    yield dg.Output(
        None,
        metadata={"location": manifest.describe(), "run_folders": len(report.runs), **report.counts},
    )
