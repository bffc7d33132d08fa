"""The lock check of the folder sensors: which items may get a run now.

An application (a sensor, `snowplow-assets process`) may start an item only when it is New or Resolved, and
valid (FORMATS.md §6): never one that is Processing, Processed, Skipped, Failed without a later Resolved, or
invalid. `resolved_since` lets a sensor find the items an operator resolved since its last tick, so that
they are picked up again.
"""

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import dagster as dg

from snowplow_assets.defs.manifests.processing_manifest import MANIFEST_ACTION, ItemKind, ProcessingManifest
from snowplow_assets.processing import Item, State


@dataclass(frozen=True)
class StartableRun:
    name: str
    run_key: str  # unique per start: a resolved item gets a key naming its Resolved record


@dataclass(frozen=True)
class LockCheck:
    startable: list[StartableRun]  # in the order asked
    refused: dict[str, str]  # name → why no run may start


def run_key(item: Item, name: str) -> str:
    """The first run of an item is keyed by its name; a run after a Resolved record by that record too, so
    Dagster's run-key deduplication does not take it for the first one."""
    current = item.current
    if item.state is State.RESOLVED and current is not None:
        return f"{name}#{current.id}"
    return name


def startable_runs(
    instance: dg.DagsterInstance, kind: ItemKind, names: Sequence[str], discovered: Mapping[str, str] | None = None
) -> LockCheck:
    """Which of `names` may get a run now: New or Resolved, and valid (`Item.may_start`, as `process` checks).

    `discovered` names are about to be registered by the caller (name → the application, e.g. the sensor).
    """
    items = ProcessingManifest(instance).items(kind, names, discovered, payloads=False)
    startable, refused = [], {}
    for name in names:
        item = items[name]
        if item.may_start:
            startable.append(StartableRun(name, run_key(item, name)))
        else:
            refused[name] = item.why_not_startable() or f"{item.id} is {item.state.value}"
    return LockCheck(startable, refused)


def resolved_since(
    instance: dg.DagsterInstance, kind: ItemKind, after_storage_id: int | None, limit: int
) -> tuple[list[str], int | None]:
    """Items an operator resolved after the observation `after_storage_id`, oldest first, and the new cursor."""
    result = instance.fetch_observations(
        dg.AssetRecordsFilter(asset_key=kind.operator_asset, after_storage_id=after_storage_id),
        limit=limit,
        ascending=True,
    )
    names: list[str] = []
    for record in result.records:
        observation = record.asset_observation
        action = observation.metadata.get(MANIFEST_ACTION) if observation else None
        if observation is not None and observation.partition and action is not None and action.value == "resolve":
            names.append(observation.partition)
    cursor = result.records[-1].storage_id if result.records else after_storage_id
    return list(dict.fromkeys(names)), cursor
