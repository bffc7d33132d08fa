"""The shredder resource: the in-batch deduplication switches, output compression and the Iglu resolver."""

from pathlib import Path

import dagster as dg

from snowplow_assets.events.dedup import InBatchDedup
from snowplow_assets.events.iglu_resolver import IgluResolver
from snowplow_assets.events.shred_batch import ShredOptions


class ShredResource(dg.ConfigurableResource):
    """How run folders are shredded: the in-batch deduplication switches, output compression, and the Iglu
    resolver config whose registries must hold every entity's schema (none: no schema is looked up)."""

    dedup_natural: bool = True
    dedup_synthetic: bool = True
    compression: str = "NONE"
    iglu_resolver: str | None = None

    def options(self) -> ShredOptions:
        resolver = IgluResolver.from_file(Path(self.iglu_resolver)) if self.iglu_resolver else None
        return ShredOptions(
            dedup=InBatchDedup(self.dedup_natural, self.dedup_synthetic),
            compression=self.compression,
            iglu_resolver=resolver,
        )
