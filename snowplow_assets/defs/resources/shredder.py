"""The shredder resource: the in-batch deduplication switches and output compression."""

import dagster as dg

from snowplow_assets.events.dedup import InBatchDedup
from snowplow_assets.events.shred_batch import ShredOptions


class ShredResource(dg.ConfigurableResource):
    """How run folders are shredded: the in-batch deduplication switches and output compression."""

    dedup_natural: bool = True
    dedup_synthetic: bool = True
    compression: str = "NONE"

    def options(self) -> ShredOptions:
        return ShredOptions(dedup=InBatchDedup(self.dedup_natural, self.dedup_synthetic), compression=self.compression)
