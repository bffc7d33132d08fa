"""The tables of models the models file no longer declares.

A cut and the latest view go through the declared models only, so a model removed from the models file (or
renamed) keeps its batches under `cdc/batches/<model>/` and its view under `cdc/latest/<model>/` for good, and
a reader of the latest table keeps reading its last rows as if they were current. Nothing said so until
2026-11-28; `cdc_batches` now warns, naming the folders (defs/checks/cdc_checks.py). They are not removed
for the operator: a models file edited by mistake would otherwise cost the model's tables. Remove them by hand
once the model is gone for good.
"""

from __future__ import annotations

from snowplow_assets.cdc.models import CdcModels
from snowplow_assets.lake import Lake
from snowplow_assets.storage import LakeFileSystem, retired_copy_of


def undeclared_model_tables(fs: LakeFileSystem, lake: Lake, models: CdcModels) -> list[str]:
    """The folders under `cdc/batches/` and `cdc/latest/` of models `models` does not declare, sorted."""
    found = []
    for root in (lake.uri("cdc", "batches"), lake.uri("cdc", "latest")):
        found += [
            entry.uri
            for entry in fs.list_dir(root)
            if entry.is_dir
            and not entry.name.startswith((".", "_"))
            and retired_copy_of(entry.name) is None  # a swap's leftover, which the next swap removes
            and entry.name not in models.models
        ]
    return sorted(found)
