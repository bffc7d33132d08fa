"""Resources, built from the SNOWPLOW_* settings of the environment when the code location loads."""


import dagster as dg
from dagster_pyspark import LazyPySparkResource

from snowplow_assets.events.dedup import InBatchDedup
from snowplow_assets.events.shred_batch import ShredOptions
from snowplow_assets.lake import Lake
from snowplow_assets.settings import Settings
from snowplow_assets.spark import spark_session_config
from snowplow_assets.storage import LakeFileSystem, filesystem_for


class LakeResource(dg.ConfigurableResource):
    """The lake root (local folder or s3:// URI) and file operations on it."""

    root: str

    @property
    def lake(self) -> Lake:
        return Lake(self.root)

    def filesystem(self) -> LakeFileSystem:
        return filesystem_for(self.root)


class ShredResource(dg.ConfigurableResource):
    """How run folders are shredded: the in-batch deduplication switches and output compression."""

    dedup_natural: bool = True
    dedup_synthetic: bool = True
    compression: str = "NONE"

    def options(self) -> ShredOptions:
        return ShredOptions(dedup=InBatchDedup(self.dedup_natural, self.dedup_synthetic), compression=self.compression)


def build_resources(settings: Settings) -> dict[str, dg.ConfigurableResource]:
    return {
        "lake": LakeResource(root=settings.lake),
        "spark": LazyPySparkResource(spark_config=spark_session_config(settings.spark_config)),
        "shredder": ShredResource(
            dedup_natural=settings.dedup_natural,
            dedup_synthetic=settings.dedup_synthetic,
            compression=settings.output_compression,
        ),
    }


@dg.definitions
def resources() -> dg.Definitions:
    return dg.Definitions(resources=build_resources(Settings()))
