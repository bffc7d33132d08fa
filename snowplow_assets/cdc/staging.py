"""The private folders CDC runs write into before they publish (`Lake.cdc_staging`), and the removal of those
that runs killed before their own cleanup left behind.

A run removes its staging when it ends, in a `finally`, which a killed process never reaches: until
2026-11-28 each such run left a copy of what it had written under `cdc/.staging/` for good. Each folder is now
named by its owner, what only one run at a time writes: a landing's ingestion (the processing manifest locks
the landing), the batches' cut and the latest view (the `cdc_batches` pool). A run removes its owner's older
folders before it starts, as the shred job does with its run folder's. The `latest` command's ad-hoc views
run side by side, so each folder of theirs carries the time its view started, and a view removes those started
more than a day before it: no view takes that long, so only a killed one's folder is that old (until
2026-11-28 they stayed to be removed by hand).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from datetime import datetime, timedelta, timezone

from snowplow_assets.lake import Lake
from snowplow_assets.storage import LakeFileSystem

BATCHES, LATEST, LATEST_COMMAND = "batches", "latest", "latest-command"
ABANDONED_AFTER = timedelta(days=1)
_STARTED = "%Y%m%dT%H%M%SZ"


def ingestion_owner(landing: str) -> str:
    """The owner of a landing's ingestions; a landing may be named `batches` or `latest`."""
    return f"ingest-{landing}"


def new_staging(fs: LakeFileSystem, lake: Lake, owner: str) -> str:
    """A new staging folder of `owner`'s, once the folders of its earlier runs are removed."""
    remove_owner_stagings(fs, lake, owner)
    return lake.cdc_staging(owner, uuid.uuid4().hex[:16])


def remove_owner_stagings(fs: LakeFileSystem, lake: Lake, owner: str) -> None:
    """Remove the folders `owner`'s killed runs left: before its next run, or once it will have none (a skipped
    landing, cli/manifest.py)."""
    _remove_stagings(fs, lake, lambda name: name == owner)


def new_side_by_side_staging(fs: LakeFileSystem, lake: Lake, owner: str, now: datetime | None = None) -> str:
    """A new staging folder of one of `owner`'s runs that run side by side, named `<owner>.<start>@<token>`, once
    the folders of those that started more than ABANDONED_AFTER before `now` are removed."""
    now = now or datetime.now(timezone.utc)

    def abandoned(name: str) -> bool:
        kind, _, started = name.rpartition(".")
        try:
            return kind == owner and now - datetime.strptime(started, _STARTED).replace(tzinfo=timezone.utc) > (
                ABANDONED_AFTER
            )
        except ValueError:  # not a folder of this owner's named with its start
            return False

    _remove_stagings(fs, lake, abandoned)
    return lake.cdc_staging(f"{owner}.{now.strftime(_STARTED)}", uuid.uuid4().hex[:16])


def _remove_stagings(fs: LakeFileSystem, lake: Lake, owned: Callable[[str], bool]) -> None:
    """Remove the staging folders whose owner part (before the `@`) is `owned`."""
    if fs.exists(lake.cdc_stagings):
        for entry in fs.list_dir(lake.cdc_stagings):
            if owned(entry.name.rpartition("@")[0]):
                fs.delete(entry.uri)
