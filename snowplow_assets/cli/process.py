"""`snowplow-assets process`: once, what the sensors do continuously."""

from __future__ import annotations

import time
from collections.abc import Callable

import click
import dagster as dg

from snowplow_assets.cli.abandoned_runs import fail_abandoned_runs
from snowplow_assets.cli.instance import project_instance
from snowplow_assets.cli.process_cdc import process_cdc
from snowplow_assets.cli.runs import RunOutcome, execute_run
from snowplow_assets.cli.web_models import build_web_models
from snowplow_assets.defs.manifests.processing_manifest import RUN_FOLDERS, ProcessingManifest
from snowplow_assets.lake import Lake, validate_run_folder
from snowplow_assets.processing import Item, State
from snowplow_assets.run_folders import find_new_run_folders
from snowplow_assets.settings import Settings
from snowplow_assets.storage import filesystem_for

ENRICHED_RUNS = "enriched_runs"
SHRED_JOB = "shred_enriched_run"
SHREDDED = dg.AssetKey("atomic_events")


def process_enriched_runs(
    instance: dg.DagsterInstance,
    settings: Settings,
    reprocess: list[str] | None = None,
    echo: Callable[[str], None] = click.echo,
) -> list[RunOutcome]:
    """Register new ready run folders, then shred every folder the processing manifest lets start (New or
    Resolved, and valid), or those in `reprocess`, which may also be Processed but not otherwise locked."""
    lake, fs = Lake(settings.lake), filesystem_for(settings.lake)
    known = set(instance.get_dynamic_partitions(ENRICHED_RUNS))
    found = find_new_run_folders(
        fs, lake.enriched, known, now=time.time(), ready_after_seconds=settings.ready_after_seconds, limit=10**9
    )
    for name in found.waiting:
        echo(f"waiting: {name} is not ready yet")
    for name in found.ignored:
        echo(f"ignored: {name} is not a run folder name")
    new = list(found.ready)
    for name in reprocess or []:
        try:
            validate_run_folder(name)
        except ValueError as error:
            raise click.BadParameter(str(error), param_hint="--run") from None
        if not fs.exists(lake.enriched_run(name)):
            raise click.ClickException(f"no such run folder: {lake.enriched_run(name)}")
        if name not in known and name not in new:
            new.append(name)
    if new:
        instance.add_dynamic_partitions(ENRICHED_RUNS, new)
        echo(f"registered {len(new)} run folder(s): {', '.join(sorted(new))}")

    registered = known | set(new)
    manifest = ProcessingManifest(instance)
    if reprocess:
        targets = sorted(set(reprocess))
        refused = [
            why for name in targets if (why := _why_not_reprocessed(manifest.item(RUN_FOLDERS, name, payloads=False)))
        ]
        if refused:
            raise click.ClickException("; ".join(refused))
    else:
        items = manifest.items(RUN_FOLDERS, payloads=False)
        targets = sorted(name for name, item in items.items() if name in registered and item.may_start)
        for name, item in sorted(items.items()):
            if item.state in (State.PROCESSING, State.FAILED) or not item.valid:
                echo(f"not started: {item.why_not_startable()}")
    outcomes = []
    for partition in targets:
        # The lock is checked again right before each run: the sensor or another `process` may have taken it.
        item = manifest.item(RUN_FOLDERS, partition, payloads=False)
        why = _why_not_reprocessed(item) if reprocess else item.why_not_startable()
        if why:
            echo(f"not started: {why}")
            continue
        echo(f"shredding {partition} ...")
        outcome = execute_run(instance, SHRED_JOB, partition)
        echo(
            f"  {'ok' if outcome.success else 'FAILED'} (run {outcome.run_id})"
            + (f": {outcome.failure}" if outcome.failure else "")
        )
        outcomes.append(outcome)
    if not targets:
        echo("nothing to shred")
    return outcomes


def _why_not_reprocessed(item: Item) -> str | None:
    """`--run` also reprocesses a Processed folder; every other lock holds (FORMATS.md §6)."""
    if item.valid and item.state is State.PROCESSED:
        return None
    why = item.why_not_startable()
    if why and item.state in (State.FAILED, State.SKIPPED) and item.valid:
        return f"{why} (snowplow-assets manifest resolve {item.id} --reason …)"
    return why


def process_all(
    instance: dg.DagsterInstance,
    settings: Settings,
    reprocess: list[str] | None = None,
    echo: Callable[[str], None] = click.echo,
) -> list[RunOutcome]:
    """Every step `process` and `demo` run, in order: shred new run folders first, then what builds on them.
    Runs that an earlier CLI process left in flight when it died are failed first (abandoned_runs.py)."""
    fail_abandoned_runs(instance, echo)
    outcomes = process_enriched_runs(instance, settings, reprocess, echo)
    for step in FOLLOW_UP_STEPS:
        outcomes.extend(step(instance, settings, echo))
    return outcomes


# Steps that run after shredding, each `(instance, settings, echo) -> outcomes` (CDC, web models).
FOLLOW_UP_STEPS: list[Callable[[dg.DagsterInstance, Settings, Callable[[str], None]], list[RunOutcome]]] = [
    build_web_models,
    process_cdc,
]


@click.command()
@click.option(
    "--run",
    "runs",
    multiple=True,
    metavar="FOLDER",
    help="Shred this run folder (e.g. run=2026-03-01-10-00-00) even if it was shredded before. Repeatable.",
)
def process(runs: tuple[str, ...]) -> None:
    """Register new items and process them in the project's Dagster instance; exit 1 if any run failed."""
    settings = Settings()
    with project_instance() as instance:
        outcomes = process_all(instance, settings, reprocess=list(runs))
    failed = [o for o in outcomes if not o.success]
    if failed:
        raise click.ClickException(
            f"{len(failed)} of {len(outcomes)} run(s) failed: " + ", ".join(o.partition or o.run_id for o in failed)
        )
