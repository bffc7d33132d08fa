"""The event manifest resource: the backend of cross-batch deduplication and the run tag that serialises it."""

import dagster as dg

from snowplow_assets.defs.resources.lake import LakeResource
from snowplow_assets.manifest import EventManifest, make_event_manifest
from snowplow_assets.settings import Settings

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
