"""The private folders CDC runs write into before they publish (`Lake.cdc_staging`), and the removal of those
that runs killed before their own cleanup left behind.

A run removes its staging when it ends, in a `finally`, which a killed process never reaches: until
2026-11-28 each such run left a copy of what it had written under `cdc/.staging/` for good. Each folder is now
named by its owner, what only one run at a time writes: a landing's ingestion (the processing manifest locks
the landing), the batches' cut and the latest view (the `cdc_batches` pool). A run removes its owner's older
folders before it starts, as the shred job does with its run folder's. The `latest` command's ad-hoc views
run side by side, so they remove only their own.
"""

from __future__ import annotations

import uuid

from snowplow_assets.lake import Lake
from snowplow_assets.storage import LakeFileSystem

BATCHES, LATEST, LATEST_COMMAND = "batches", "latest", "latest-command"


def ingestion_owner(landing: str) -> str:
    """The owner of a landing's ingestions; a landing may be named `batches` or `latest`."""
    return f"ingest-{landing}"


def new_staging(fs: LakeFileSystem, lake: Lake, owner: str, *, sweep: bool = True) -> str:
    """A new staging folder of `owner`'s, once (with `sweep`) the folders of its earlier runs are removed."""
    if sweep and fs.exists(lake.cdc_stagings):
        for entry in fs.list_dir(lake.cdc_stagings):
            if entry.name.rpartition("@")[0] == owner:
                fs.delete(entry.uri)
    return lake.cdc_staging(owner, uuid.uuid4().hex[:16])
