"""Which lake a Dagster instance serves: one, the first that used it.

The processing manifest (registered partitions, their runs' records) and the web models' progress live in the
instance, keyed by folder names alone, which every lake repeats (`run=2026-03-01-10-00-00`). With
SNOWPLOW_LAKE pointed at another lake and the same instance, a new lake's folders named as the old one's were
taken for registered and processed, and never shredded, without a word (until 2026-11-28). So the instance
records the first lake that uses it, and every later use from another lake is refused, naming both and the
remedy: every run and sensor that sets up the lake resource (defs/resources/lake.py), and the commands that
register or act on items (`process`, `demo`, `manifest skip` and `resolve`).

An instance used before 2026-11-28 has no lake recorded, but its history names one: the `path` each shred and
CDC ingestion recorded. The first use after the upgrade is checked against that lake rather than recorded
blindly, which took another lake's folders for the old one's once more.
"""

from __future__ import annotations

import re
from collections.abc import Collection

import dagster as dg

from snowplow_assets.settings import lake_root

LAKE_KEY = "snowplow_assets/lake"

# The assets whose materialisations' `path` names a folder of the lake, and that folder below the lake's root
# (defs/assets/shredded.py, defs/assets/cdc_history.py; keys spelt out, as those modules need this one).
_PATHS_IN_HISTORY = (
    (dg.AssetKey("atomic_events"), re.compile(r"^(?P<root>.+)/shredded/good/run=[^/]+/atomic-events$")),
    (dg.AssetKey("cdc_history"), re.compile(r"^(?P<root>.+)/cdc/history/[^/]+$")),
)


class InstanceOfAnotherLake(RuntimeError):
    """SNOWPLOW_LAKE names another lake than the one whose manifest this Dagster instance holds."""


def claim_instance_for_lake(instance: dg.DagsterInstance, root: str) -> None:
    """Record `root` as the instance's lake if it has none; InstanceOfAnotherLake if it has another."""
    recorded = instance.run_storage.get_cursor_values({LAKE_KEY}).get(LAKE_KEY)
    if recorded is None:
        recorded = lake_in_history(instance) or root
        if recorded == root:
            instance.run_storage.set_cursor_values({LAKE_KEY: root})
    if recorded != root:
        which = f"the Dagster instance at {instance.root_directory}" if instance.is_persistent else "this instance"
        raise InstanceOfAnotherLake(
            f"{which} holds the processing manifest of the lake {recorded}, and "
            f"SNOWPLOW_LAKE is {root}: give that lake an instance of its own (DAGSTER_HOME), or set "
            f"SNOWPLOW_LAKE back; if the lake itself was moved there, say so with `snowplow-assets manifest "
            f"lake-moved --from {recorded}`"
        )


def record_moved_lake(instance: dg.DagsterInstance, old_roots: Collection[str], new_root: str) -> None:
    """Record `new_root` as the lake of an instance that serves the lake spelt one of `old_roots`, the lake moved
    there (a bigger disk, another bucket): its processing manifest and the web models' progress hold for the
    lake wherever it is. InstanceOfAnotherLake if the instance serves another lake."""
    served = instance.run_storage.get_cursor_values({LAKE_KEY}).get(LAKE_KEY) or lake_in_history(instance)
    if served is not None and served not in old_roots:
        raise InstanceOfAnotherLake(
            f"the instance holds the processing manifest of the lake {served}, not {' or '.join(sorted(old_roots))}"
        )
    instance.run_storage.set_cursor_values({LAKE_KEY: new_root})


def lake_in_history(instance: dg.DagsterInstance) -> str | None:
    """The lake the instance's latest shred, else its latest CDC ingestion, wrote to, as its `path` names it;
    None for an instance that has done neither."""
    for key, folder in _PATHS_IN_HISTORY:
        event = instance.get_latest_materialization_event(key)
        materialization = event.asset_materialization if event else None
        path = materialization.metadata.get("path") if materialization else None
        found = folder.match(str(getattr(path, "value", path))) if path is not None else None
        if found:
            # As SNOWPLOW_LAKE is read now (an s3:// root kept its empty segments before 2026-11-28), but with
            # its links as they were: a folder moved since, a link left in its place, is another lake.
            try:
                return lake_root(found["root"], resolve_links=False)
            except ValueError:  # no lake SNOWPLOW_LAKE could name now: nothing to hold another lake to
                return None
    return None
