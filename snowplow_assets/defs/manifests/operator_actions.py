"""The operator's `skip` and `resolve`, recorded as Dagster observations so that the UI shows them on the asset."""

import getpass
from typing import Any

import dagster as dg

from snowplow_assets.defs.manifests.processing_manifest import (
    ACTIONS,
    MANIFEST_ACTION,
    RESOLVES,
    ItemKind,
    ProcessingManifest,
)
from snowplow_assets.processing import Item, State

MAX_REASON = 2000


def _operator_name() -> str:
    try:
        return getpass.getuser()
    except (OSError, KeyError):  # no login name in the environment nor in the password database
        return "unknown"


def record_operator_action(
    instance: dg.DagsterInstance, kind: ItemKind, name: str, action: str, reason: str, register: bool = False
) -> Item:
    """Record `skip` or `resolve` for an item as an AssetObservation of its operator asset; return the item after.

    `skip` applies to any item no run holds (an unregistered one is registered first when `register`);
    `resolve` only to a Failed or Skipped item, and refers to the record it clears.
    """
    if action not in ACTIONS:
        raise ValueError(f"unknown manifest action {action!r}; expected one of {', '.join(ACTIONS)}")
    reason = reason.strip()
    if not reason:
        raise ValueError("a reason is required")
    if len(reason) > MAX_REASON:
        raise ValueError(f"the reason is longer than {MAX_REASON} characters")
    manifest = ProcessingManifest(instance)
    item = manifest.item(kind, name)
    registered = any(r.state is State.NEW for r in item.records)
    metadata: dict[str, Any] = {MANIFEST_ACTION: action, "reason": reason, "by": _operator_name()}
    if item.state is State.PROCESSING:
        raise ValueError(f"cannot {action} {item.id}: it is Processing (run {', '.join(item.open_runs)} holds it)")
    if action == "skip":
        if item.state is State.SKIPPED:
            raise ValueError(f"{item.id} is already Skipped")
        if not registered:
            if not register:
                raise ValueError(f"no such item: {item.id} is not registered")
            instance.add_dynamic_partitions(kind.partitions_def, [name])
    else:
        current = item.current
        if item.state not in (State.FAILED, State.SKIPPED) or current is None:
            raise ValueError(
                f"cannot resolve {item.id}: it is {item.state.value}; only Failed or Skipped items can be resolved"
            )
        if not item.valid:
            raise ValueError(f"cannot resolve {item.id}: it is invalid ({'; '.join(item.problems)}); skip it instead")
        metadata[RESOLVES] = current.id
    instance.report_runless_asset_event(
        dg.AssetObservation(asset_key=kind.operator_asset, partition=name, metadata=metadata)
    )
    return manifest.item(kind, name)
