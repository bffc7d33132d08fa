"""Resources, built from the SNOWPLOW_* settings of the environment when the code location loads.

One module per resource; this package builds them all under the keys the assets ask for.
"""

import dagster as dg
from dagster_aws.s3 import S3Resource

from snowplow_assets.defs.resources.cdc import CdcResource, build_cdc_resource
from snowplow_assets.defs.resources.event_manifest import (
    EVENT_MANIFEST_TAG,
    EventManifestResource,
    event_manifest_run_tags,
)
from snowplow_assets.defs.resources.lake import LakeResource
from snowplow_assets.defs.resources.shredder import ShredResource
from snowplow_assets.defs.resources.spark import SparkResource
from snowplow_assets.defs.resources.web_models import WebModelsResource
from snowplow_assets.settings import Settings
from snowplow_assets.spark import use_python_workers_interpreter

__all__ = [
    "EVENT_MANIFEST_TAG",
    "CdcResource",
    "EventManifestResource",
    "LakeResource",
    "ShredResource",
    "SparkResource",
    "WebModelsResource",
    "build_resources",
    "event_manifest_run_tags",
]


def build_resources(settings: Settings) -> dict[str, dg.ConfigurableResource]:
    use_python_workers_interpreter(settings.spark_config)  # before the lazy SparkSession starts
    return {
        "lake": LakeResource(
            root=settings.lake,
            s3=S3Resource(region_name=settings.s3_region, endpoint_url=settings.s3_endpoint_url),
            s3_scheme=settings.s3_scheme,
        ),
        "spark": SparkResource.from_settings(settings),
        "shredder": ShredResource(
            dedup_natural=settings.dedup_natural,
            dedup_synthetic=settings.dedup_synthetic,
            compression=settings.output_compression,
            iglu_resolver=settings.iglu_resolver,
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
        "cdc": build_cdc_resource(settings),
    }


@dg.definitions
def resources() -> dg.Definitions:
    return dg.Definitions(resources=build_resources(Settings()))
