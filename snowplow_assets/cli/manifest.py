"""`snowplow-assets manifest`: the processing manifest, and the operator's `skip` and `resolve`.

Every item (enriched run folder, CDC landing folder) with its state and records, derived from the
project's Dagster instance (snowplow_assets/defs/manifests/processing_manifest.py). Text output shows one item per
line with its records indented below it; `--json` prints one JSON document with every field. `skip` and
`resolve` record the operator's decision as an AssetObservation that the Dagster UI shows on the asset.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable
from typing import Any

import click

from snowplow_assets.cdc.staging import ingestion_owner, remove_owner_stagings
from snowplow_assets.cli.event_manifest import configured_event_manifest
from snowplow_assets.cli.instance import project_instance
from snowplow_assets.defs.manifests.instance_lake import (
    InstanceOfAnotherLake,
    claim_instance_for_lake,
    record_moved_lake,
)
from snowplow_assets.defs.manifests.operator_actions import record_operator_action
from snowplow_assets.defs.manifests.processing_manifest import (
    RUN_FOLDERS,
    ItemKind,
    ProcessingManifest,
    parse_item,
    read_manifest,
)
from snowplow_assets.events.shred_batch import remove_abandoned_staging
from snowplow_assets.lake import Lake
from snowplow_assets.manifest.base import ConcurrentManifestWrite, EventManifestUnavailable
from snowplow_assets.manifest.skipped_batch import release_skipped_batch
from snowplow_assets.processing import Item, Record, State
from snowplow_assets.processing.records import iso_time
from snowplow_assets.settings import Settings, lake_root
from snowplow_assets.spark import lazy_spark_session
from snowplow_assets.storage import LakeFileSystem, filesystem_for

STATES = [s.value for s in State]


def _scalar(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, separators=(",", ":"), default=str)


def _payload(record: Record) -> str:
    return " ".join(f"{key}={_scalar(value)}" for key, value in record.payload.items() if key != "asset")


def _record_line(record: Record) -> str:
    run = f"run {record.run_id}" if record.run_id else "-"
    return f"    {iso_time(record.time) or '-':27}  {record.state.value:10}  {record.application:20}  {run:40}  {_payload(record)}".rstrip()


def _item_lines(item: Item) -> Iterable[str]:
    headline = f"{item.id}  {item.state.value}"
    yield headline if item.valid else f"{headline}  INVALID: {'; '.join(item.problems)}"
    yield from (_record_line(r) for r in item.records)


def _summary(items: list[Item]) -> dict[str, Any]:
    counts = Counter(i.state.value for i in items)
    return {
        "total": len(items),
        "states": {s: counts[s] for s in STATES if counts[s]},
        "invalid": sum(not i.valid for i in items),
    }


@click.group(invoke_without_command=True)
@click.option("--json", "as_json", is_flag=True, help="Print one JSON document: every item with its records.")
@click.option(
    "--state",
    type=click.Choice(STATES, case_sensitive=False),
    help="Only items in this state.",
)
@click.pass_context
def manifest(context: click.Context, as_json: bool, state: str | None) -> None:
    """List every item of the processing manifest with its state and records (or run a subcommand)."""
    if context.invoked_subcommand is not None:
        return
    with project_instance() as instance:
        items = read_manifest(instance)
    if state:
        items = [i for i in items if i.state is State(state)]
    summary = _summary(items)
    if as_json:
        click.echo(json.dumps({"summary": summary, "items": [i.as_dict() for i in items]}, default=str))
        return
    for item in items:
        for line in _item_lines(item):
            click.echo(line)
    states = ", ".join(f"{n} {s}" for s, n in summary["states"].items()) or "none"
    click.echo(f"{summary['total']} items: {states}; {summary['invalid']} invalid")


def _item_argument(_context: click.Context, _parameter: click.Parameter, value: str) -> tuple[ItemKind, str]:
    try:
        return parse_item(value)
    except ValueError as error:
        raise click.BadParameter(str(error)) from None


def _folder(lake: Lake, kind: ItemKind, name: str) -> str:
    return lake.enriched_run(name) if kind is RUN_FOLDERS else lake.cdc_landing(name)


def _act(action: str, item: tuple[ItemKind, str], reason: str) -> None:
    kind, name = item
    settings = Settings()
    lake, fs = Lake(settings.lake), filesystem_for(settings.lake)
    exists = fs.exists(_folder(lake, kind, name))
    # A skipped run folder's event manifest entries are released once the skip is recorded, when no run can
    # start it any more: a rerun started while they were released first lost the keys it had just written
    # (review of 2026-11-28). A skip of a run folder Skipped already runs the release again, as a retry.
    releases = action == "skip" and kind is RUN_FOLDERS
    with project_instance() as instance:
        try:
            claim_instance_for_lake(instance, settings.lake)  # an action may register the item
            if releases and ProcessingManifest(instance).item(kind, name, payloads=False).state is State.SKIPPED:
                click.echo(f"{kind.prefix}/{name} is Skipped already: its event manifest entries are released again")
            else:
                after = record_operator_action(instance, kind, name, action, reason, register=exists)
                invalid = "" if after.valid else f" (invalid: {'; '.join(after.problems)})"
                click.echo(f"{after.id} is now {after.state.value}{invalid}")
        except (ValueError, InstanceOfAnotherLake) as error:
            raise click.ClickException(str(error)) from None
    if action == "skip":
        # A killed run's staging is removed by the item's next run, and a skipped item has none: until
        # 2026-11-28 a parsed copy of a skipped batch stayed under shredded/.staging/ for good.
        if kind is RUN_FOLDERS:
            remove_abandoned_staging(fs, lake, name)
        else:
            remove_owner_stagings(fs, lake, ingestion_owner(name))
    if releases:
        _release_skipped_batch(settings, fs, lake, name)


def _release_skipped_batch(settings: Settings, fs: LakeFileSystem, lake: Lake, run: str) -> None:
    """Leave the event manifest only the entries the skipped batch's published output loads
    (manifest/skipped_batch.py). If that fails, the skip stays recorded, and running it again retries."""
    manifest = configured_event_manifest(settings, fs, lake)
    if manifest is None:
        return
    retry = "; run the skip again to release them"
    spark = lazy_spark_session(settings.spark_config, settings.shared_spark_server, app_name="snowplow-assets-skip")
    try:
        with spark as session:
            counts = release_skipped_batch(session, fs, lake, manifest, run, settings.cross_batch_synthetic)
    except EventManifestUnavailable as error:
        raise click.ClickException(
            f"{run} is Skipped, but its event manifest entries are not released: {error}{retry}"
        ) from error
    except ConcurrentManifestWrite as error:
        raise click.ClickException(
            f"{run} is Skipped, but its event manifest entries are not released: another run rewrote the event "
            f"manifest index {lake.event_manifest_index} meanwhile, and nothing was published{retry}"
        ) from error
    if counts is None:
        return
    click.echo(f"{manifest.describe()}: the entries of {run} rewritten as its published output loads")
    for name, value in counts.items():
        click.echo(f"  {name}: {value}")
    click.echo(
        f"a batch shredded since {run} failed may have dropped copies of events it no longer holds: run it again "
        "(snowplow-assets process --run FOLDER) to load them"
    )
    if counts.get("stale_entries_not_removed"):
        raise click.ClickException(
            f"{run} is Skipped, but {counts['stale_entries_not_removed']} item(s) its runs wrote could not be "
            f"deleted{retry}"
        )


REASON = click.option("--reason", required=True, help="Why: recorded with the action and shown in the UI.")


@manifest.command()
@click.argument("item", callback=_item_argument)
@REASON
def skip(item: tuple[ItemKind, str], reason: str) -> None:
    """Mark ITEM (enriched/run=… or cdc/landing/<folder>) Skipped: no sensor or `process` will start it."""
    _act("skip", item, reason)


@manifest.command()
@click.argument("item", callback=_item_argument)
@REASON
def resolve(item: tuple[ItemKind, str], reason: str) -> None:
    """Clear a Failed (or Skipped) ITEM: the sensor and `process` pick it up again."""
    _act("resolve", item, reason)


@manifest.command(name="lake-moved")
@click.option("--from", "old_lake", required=True, help="Where the lake was: the lake the instance names.")
def lake_moved(old_lake: str) -> None:
    """Tell the instance its lake moved from --from to SNOWPLOW_LAKE, which holds it now: its processing
    manifest and the web models' progress carry on there."""
    settings = Settings()
    try:
        # As SNOWPLOW_LAKE is read, and as it was before the move: a link left in the lake's old place now
        # resolves to the new one.
        old_roots = {lake_root(old_lake), lake_root(old_lake, resolve_links=False)}
    except ValueError as error:
        raise click.BadParameter(str(error), param_hint="--from") from None
    if not filesystem_for(settings.lake).exists(settings.lake):
        raise click.ClickException(f"SNOWPLOW_LAKE {settings.lake} does not exist: move the lake there first")
    with project_instance() as instance:
        try:
            record_moved_lake(instance, old_roots, settings.lake)
        except InstanceOfAnotherLake as error:
            raise click.ClickException(str(error)) from None
    click.echo(f"the instance now serves the lake {settings.lake} (moved from {old_lake})")
