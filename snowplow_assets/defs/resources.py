"""Resources, built from the SNOWPLOW_* settings of the environment when the code location loads."""


from dataclasses import asdict
from datetime import date

import dagster as dg
from dagster_aws.s3 import S3Resource
from dagster_pyspark import LazyPySparkResource

from snowplow_assets.events.dedup import InBatchDedup
from snowplow_assets.events.shred_batch import ShredOptions
from snowplow_assets.lake import Lake
from snowplow_assets.manifest import EventManifest, make_event_manifest
from snowplow_assets.settings import Settings
from snowplow_assets.spark import spark_session_config
from snowplow_assets.storage import LakeFileSystem, filesystem_for
from snowplow_assets.web.variables import MODELS, WebVariables, parse_models


class LakeResource(dg.ConfigurableResource):
    """The lake root (local folder or s3:// URI) and file operations on it.

    On S3 every operation (sensor listings included) goes through `s3`, Dagster's S3Resource; left unset,
    a client is built from the SNOWPLOW_S3_* settings, as the CLI does.
    """

    root: str
    s3: S3Resource | None = None
    s3_scheme: str = "s3a"  # how Spark reaches the lake: s3a or s3 (EMRFS)

    @property
    def lake(self) -> Lake:
        return Lake(self.root)

    def filesystem(self) -> LakeFileSystem:
        if not self.lake.is_s3:
            return filesystem_for(self.root)
        return filesystem_for(self.root, self.s3.get_client() if self.s3 else None, self.s3_scheme)


class ShredResource(dg.ConfigurableResource):
    """How run folders are shredded: the in-batch deduplication switches and output compression."""

    dedup_natural: bool = True
    dedup_synthetic: bool = True
    compression: str = "NONE"

    def options(self) -> ShredOptions:
        return ShredOptions(dedup=InBatchDedup(self.dedup_natural, self.dedup_synthetic), compression=self.compression)


class WebModelsResource(dg.ConfigurableResource):
    """The enabled web models and dbt-snowplow-web's variables (the SNOWPLOW_WEB_* settings)."""

    models: str = ",".join(MODELS)
    start_date: str = WebVariables.start_date.isoformat()
    backfill_limit_days: int = WebVariables.backfill_limit_days
    lookback_window_hours: int = WebVariables.lookback_window_hours
    days_late_allowed: int = WebVariables.days_late_allowed
    max_session_days: int = WebVariables.max_session_days
    session_lookback_days: int = WebVariables.session_lookback_days
    upsert_lookback_days: int = WebVariables.upsert_lookback_days
    heartbeat: int = WebVariables.heartbeat
    min_visit_length: int = WebVariables.min_visit_length

    @classmethod
    def from_settings(cls, settings: Settings) -> "WebModelsResource":
        variables = WebVariables.from_settings(settings)
        return cls(models=",".join(parse_models(settings.web_models)), **web_variables_config(variables))

    def enabled_models(self) -> tuple[str, ...]:
        return parse_models(self.models)

    def variables(self) -> WebVariables:
        config = self.model_dump(exclude={"models", "start_date"})
        return WebVariables(start_date=date.fromisoformat(self.start_date), **config)


def web_variables_config(variables: WebVariables) -> dict[str, object]:
    """WebVariables as the resource's config (dates as ISO text)."""
    return {**asdict(variables), "start_date": variables.start_date.isoformat()}


# Runs that write the event manifest carry this tag, valued by the backend; dagster.yaml lets one run
# tagged `lake` execute at a time, because the lake backend's check-and-set is read-join-write.
EVENT_MANIFEST_TAG = "snowplow/event-manifest"


class EventManifestResource(dg.ConfigurableResource):
    """The event manifest behind cross-batch deduplication (snowplow_assets/manifest/)."""

    backend: str = "lake"  # none, lake or dynamodb
    ttl_days: int = 180
    cross_batch_synthetic: bool = True
    dynamodb_table: str | None = None
    dynamodb_region: str | None = None
    dynamodb_endpoint_url: str | None = None

    def manifest(self, lake: LakeResource) -> EventManifest | None:
        return make_event_manifest(
            self.backend,
            lake.filesystem(),
            lake.lake,
            self.ttl_days,
            self.dynamodb_table,
            self.dynamodb_region,
            self.dynamodb_endpoint_url,
        )


def event_manifest_run_tags(settings: Settings) -> dict[str, str]:
    return {EVENT_MANIFEST_TAG: settings.event_manifest}


def build_resources(settings: Settings) -> dict[str, dg.ConfigurableResource]:
    return {
        "lake": LakeResource(
            root=settings.lake,
            s3=S3Resource(region_name=settings.s3_region, endpoint_url=settings.s3_endpoint_url),
            s3_scheme=settings.s3_scheme,
        ),
        "spark": LazyPySparkResource(spark_config=spark_session_config(settings.spark_config)),
        "shredder": ShredResource(
            dedup_natural=settings.dedup_natural,
            dedup_synthetic=settings.dedup_synthetic,
            compression=settings.output_compression,
        ),
        "web": WebModelsResource.from_settings(settings),
        "event_manifest_backend": EventManifestResource(
            backend=settings.event_manifest,
            ttl_days=settings.event_manifest_ttl_days,
            cross_batch_synthetic=settings.cross_batch_synthetic,
            dynamodb_table=settings.event_manifest_dynamodb_table,
            dynamodb_region=settings.event_manifest_dynamodb_region,
            dynamodb_endpoint_url=settings.event_manifest_dynamodb_endpoint_url,
        ),
    }


@dg.definitions
def resources() -> dg.Definitions:
    return dg.Definitions(resources=build_resources(Settings()))
