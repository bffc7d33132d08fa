"""The lake resource: where the lake is and how to reach its files, locally or on S3."""

import dagster as dg
from dagster_aws.s3 import S3Resource

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

    @property
    def lake(self) -> Lake:
        return Lake(self.root)

    def filesystem(self) -> LakeFileSystem:
        if not self.lake.is_s3:
            return filesystem_for(self.root)
        return filesystem_for(self.root, self.s3.get_client() if self.s3 else None, self.s3_scheme)
