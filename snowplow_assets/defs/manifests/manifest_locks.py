"""The lock check of the folder sensors: which items may get a run now.

An application (a sensor, `snowplow-assets process`) may start an item only when it is New or Resolved, and
valid (FORMATS.md §6): never one that is Processing, Processed, Skipped, Failed without a later Resolved, or
invalid. `waiting_runs` lets a sensor find the registered items that may start and have no run, however
they came to be so: registered by `process` but not run by it, resolved by an operator, or sent back to New
when their run was deleted.
"""

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import dagster as dg

from snowplow_assets.defs.manifests.processing_manifest import ItemKind, ProcessingManifest
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


def waiting_runs(instance: dg.DagsterInstance, kind: ItemKind, limit: int) -> list[StartableRun]:
    """At most `limit` registered items that may start and that no run has taken up, in name order.

    Candidates come from one query over every registered item (`ProcessingManifest.unclaimed`) and are checked
    `limit` at a time: the ones that may not start (Skipped ones) cost their share of a lock check on every
    call, and never hide the ones after them.
    """
    names = ProcessingManifest(instance).unclaimed(kind)
    found: list[StartableRun] = []
    for start in range(0, len(names), limit):
        found += startable_runs(instance, kind, names[start : start + limit]).startable
        if len(found) >= limit:
            break
    return found[:limit]
