"""What `process` does for each kind of item of the processing manifest (run folders, CDC landings).

Register the kind's new ready folders as partitions, then run the kind's job for every item the manifest lets
start (New, or Resolved after a failure, and valid: the sensors' rule), or only for the items the operator
names (`--run`, `--ingest`), which may also be Processed; every other lock holds (`why_not_reprocessed`), and
a named folder must be ready, as the sensors' are (run_folders.py).
The lock is checked again right before each run: a sensor or another `process` may have taken it meanwhile.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import click
import dagster as dg

from snowplow_assets.cli.runs import RunOutcome, echo_outcome, execute_run, why_locked, why_not_reprocessed
from snowplow_assets.defs.manifests.processing_manifest import ItemKind, ProcessingManifest
from snowplow_assets.lake import Lake
from snowplow_assets.processing import State
from snowplow_assets.run_folders import (
    SUCCESS_MARKER,
    empty_named_warning,
    find_new_folders,
    registered_not_ready,
    still_being_written,
)
from snowplow_assets.settings import Settings
from snowplow_assets.storage import filesystem_for


@dataclass(frozen=True)
class ItemProcessing:
    kind: ItemKind
    job: str
    noun: str  # what an item is called in messages: "run folder"
    verb: str  # what the job does to it: "shredding"
    option: str  # the option that names items to process again: "--run"
    validate: Callable[[str], str]  # the kind's name rule, raising ValueError with what a name must be
    parent: Callable[[Lake], str]  # the lake folder the items are found in
    folder: Callable[[Lake, str], str]  # one item's folder


@dataclass(frozen=True)
class ItemRuns:
    registered: frozenset[str]  # every item of the kind, after this call registered the new ones
    outcomes: list[RunOutcome]


def checked_requests(
    instance: dg.DagsterInstance, settings: Settings, how: ItemProcessing, requested: list[str] | None
) -> list[str]:
    """The folder names of the items the operator named (`--run`, `--ingest`; `manifest`'s `enriched/run=…`
    form too), each checked as its run would check it: a valid name, a folder that exists and is ready, and,
    for one registered already, no lock but Processed. Raise naming the first that fails, before anything is
    registered or run."""
    lake, fs = Lake(settings.lake), filesystem_for(settings.lake)
    names = [name.removeprefix(f"{how.kind.prefix}/") for name in requested or []]
    known = set(instance.get_dynamic_partitions(how.kind.partitions_def))
    manifest = ProcessingManifest(instance)
    for name in names:
        try:
            how.validate(name)
        except ValueError as error:
            raise click.BadParameter(str(error), param_hint=how.option) from None
        folder = how.folder(lake, name)
        if not fs.exists(folder):
            raise click.ClickException(f"no such {how.noun}: {folder}")
        # Its run would refuse it (enriched_batch, cdc_ingest) and leave it Failed: refused here, nothing is.
        if why := still_being_written(fs, folder, fs.clock(folder), settings.ready_after_seconds):
            raise click.ClickException(
                f"{how.noun} {name} is not ready: {why}. Ask again once it is: a {SUCCESS_MARKER} written after "
                f"its files, or {settings.ready_after_seconds}s without a change"
            )
        if name in known and (why := why_not_reprocessed(manifest.item(how.kind, name, payloads=False))):
            raise click.ClickException(why)
    return names


def process_items(
    instance: dg.DagsterInstance,
    settings: Settings,
    how: ItemProcessing,
    echo: Callable[[str], None],
    requested: list[str] | None = None,
) -> ItemRuns:
    lake, fs = Lake(settings.lake), filesystem_for(settings.lake)
    kind = how.kind
    requested = checked_requests(instance, settings, how, requested)
    known = set(instance.get_dynamic_partitions(kind.partitions_def))
    parent = how.parent(lake)
    now = fs.clock(parent)
    found = find_new_folders(fs, parent, known, now, settings.ready_after_seconds, limit=10**9, pattern=kind.pattern)
    for name in found.waiting:
        echo(f"waiting: {how.noun} {name} is not ready yet")
    for name in found.ignored:
        echo(f"ignored: {name} cannot be a {how.noun} name")
    if found.empty_named:
        echo(f"ignored: {empty_named_warning(parent)}")
    for name, error in found.unreadable.items():
        echo(f"unreadable: {how.noun} {name} cannot be listed, so it is not registered: {error}")
    new = list(found.ready)
    new.extend(name for name in requested if name not in known and name not in new)
    if new:
        instance.add_dynamic_partitions(kind.partitions_def, new)
        echo(f"registered {len(new)} {how.noun}(s): {', '.join(sorted(new))}")

    registered = frozenset(known | set(new))
    manifest = ProcessingManifest(instance)
    if requested:
        targets = sorted(set(requested))
        refused = [why for name in targets if (why := why_not_reprocessed(manifest.item(kind, name, payloads=False)))]
        if refused:
            raise click.ClickException("; ".join(refused))
    else:
        items = manifest.items(kind, payloads=False)
        targets = sorted(name for name, item in items.items() if name in registered and item.may_start)
        earlier = [name for name in targets if name not in found.ready]  # the scan judged the others just now
        not_ready = registered_not_ready(fs, parent, earlier, now, settings.ready_after_seconds)
        for name, why in not_ready.items():
            echo(f"waiting: {how.noun} {name} is not ready yet: {why}")
        targets = [name for name in targets if name not in not_ready]
        for name, item in sorted(items.items()):
            if item.state in (State.PROCESSING, State.FAILED) or not item.valid:
                echo(f"not started: {why_locked(item)}")
    outcomes = []
    for name in targets:
        item = manifest.item(kind, name, payloads=False)
        why = why_not_reprocessed(item) if requested else item.why_not_startable()
        if why:
            echo(f"not started: {why}")
            continue
        echo(f"{how.verb} {name} ...")
        outcomes.append(echo_outcome(execute_run(instance, how.job, name), echo))
    return ItemRuns(registered, outcomes)
