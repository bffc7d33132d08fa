"""The lake resource: where the lake is and how to reach its files, locally or on S3."""

import dagster as dg
from dagster_aws.s3 import S3Resource

from snowplow_assets.defs.manifests.instance_lake import claim_instance_for_lake
from snowplow_assets.lake import Lake
from snowplow_assets.storage import LakeFileSystem, filesystem_for


class LakeResource(dg.ConfigurableResource):
    """The lake root (local folder or s3:// URI) and file operations on it.

    On S3 every operation (sensor listings included) goes through `s3`, Dagster's S3Resource; left unset,
    a client is built from the SNOWPLOW_S3_* settings, as the CLI does.
    """

    root: str
    s3: S3Resource | None = None
    s3_scheme: str = "s3a"  # how Spark reaches the lake: s3a or s3 (EMRFS)

    def setup_for_execution(self, context: dg.InitResourceContext) -> None:
        # Every run and sensor that reaches the lake checks first that the instance serves it: its processing
        # manifest and the web models' progress are keyed by folder names that every lake repeats.
        if context.instance is not None:
            claim_instance_for_lake(context.instance, self.root)

    @property
    def lake(self) -> Lake:
        return Lake(self.root)

    def filesystem(self) -> LakeFileSystem:
        if not self.lake.is_s3:
            return filesystem_for(self.root)
        return filesystem_for(self.root, self.s3.get_client() if self.s3 else None, self.s3_scheme)
