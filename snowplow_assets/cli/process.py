"""`snowplow-assets process`: once, what the sensors do continuously."""

from __future__ import annotations

from collections.abc import Callable

import click
import dagster as dg

from snowplow_assets.cdc.models import ModelsFileError, load_models
from snowplow_assets.cli.instance import project_instance
from snowplow_assets.cli.item_runs import ItemProcessing, checked_requests, process_items
from snowplow_assets.cli.process_cdc import INGESTION, process_cdc
from snowplow_assets.cli.process_request import ProcessRequest
from snowplow_assets.cli.runs import RunOutcome
from snowplow_assets.cli.web_models import build_web_models
from snowplow_assets.defs.manifests.cli_run_processes import fail_abandoned_runs
from snowplow_assets.defs.manifests.instance_lake import InstanceOfAnotherLake, claim_instance_for_lake
from snowplow_assets.defs.manifests.processing_manifest import RUN_FOLDERS
from snowplow_assets.lake import Lake, validate_run_folder
from snowplow_assets.settings import Settings
from snowplow_assets.storage import filesystem_for

SHRED_JOB = "shred_enriched_run"
SHREDDED = dg.AssetKey("atomic_events")


SHREDDING = ItemProcessing(
    RUN_FOLDERS,
    SHRED_JOB,
    noun="run folder",
    verb="shredding",
    option="--run",
    validate=validate_run_folder,
    parent=lambda lake: lake.enriched,
    folder=Lake.enriched_run,
)


def process_enriched_runs(
    instance: dg.DagsterInstance,
    settings: Settings,
    echo: Callable[[str], None] = click.echo,
    request: ProcessRequest = ProcessRequest(),
) -> list[RunOutcome]:
    """Register new ready run folders, then shred every folder the processing manifest lets start (New or
    Resolved, and valid), or those the request names, which may also be Processed but not otherwise locked."""
    runs = process_items(instance, settings, SHREDDING, echo, list(request.runs))
    if not runs.outcomes:
        echo("nothing to shred")
    return runs.outcomes


# Every step of `process` and `demo`, in order: shredding first, then what builds on it.
STEPS: list[Callable[[dg.DagsterInstance, Settings, Callable[[str], None], ProcessRequest], list[RunOutcome]]] = [
    process_enriched_runs,
    build_web_models,
    process_cdc,
]


def process_all(
    instance: dg.DagsterInstance,
    settings: Settings,
    request: ProcessRequest = ProcessRequest(),
    echo: Callable[[str], None] = click.echo,
) -> list[RunOutcome]:
    """Every step, in order, once the items the request names are checked (item_runs.checked_requests). Runs
    that an earlier CLI process left in flight when it died are failed first
    (defs/manifests/cli_run_processes.py). Nothing is done in an instance that serves another lake
    (defs/manifests/instance_lake.py)."""
    claim_instance_for_lake(instance, settings.lake)
    fail_abandoned_runs(instance, echo)
    # Every named item is checked before the first step: a landing refused by the CDC step came after every
    # run folder was shredded and the web models built, and the command failed all the same (until 2026-11-28).
    checked_requests(instance, settings, SHREDDING, list(request.runs))
    checked_requests(instance, settings, INGESTION, list(request.landings))
    return [outcome for step in STEPS for outcome in step(instance, settings, echo, request)]


def checked_settings() -> Settings:
    """The settings, with the CDC models file read: every run loads the definitions, which need it, and a file
    missing or invalid failed the command with a traceback after it had registered new items (until
    2026-11-28)."""
    settings = Settings()
    try:
        load_models(settings.cdc_models)
    except ModelsFileError as error:
        raise click.ClickException(str(error)) from None
    return settings


def process_all_or_say_why(
    instance: dg.DagsterInstance, settings: Settings, request: ProcessRequest = ProcessRequest()
) -> list[RunOutcome]:
    """`process_all`, an instance of another lake said in a line."""
    try:
        return process_all(instance, settings, request)
    except InstanceOfAnotherLake as error:
        raise click.ClickException(str(error)) from None


@click.command()
@click.option(
    "--run",
    "runs",
    multiple=True,
    metavar="FOLDER",
    help="Shred this run folder (e.g. run=2026-03-01-10-00-00) even if it was shredded before. Repeatable.",
)
@click.option(
    "--ingest",
    "landings",
    multiple=True,
    metavar="LANDING",
    help="Ingest this CDC landing folder (under cdc/landing/) even if it was ingested before, e.g. after the "
    "models file changed how its topics are read. Repeatable.",
)
@click.option(
    "--full-refresh",
    is_flag=True,
    help="Rebuild the web models from SNOWPLOW_WEB_START_DATE (each run covers at most the backfill limit; later "
    "runs carry on) and cut every CDC batch from all its records, as dbt's --full-refresh.",
)
def process(runs: tuple[str, ...], landings: tuple[str, ...], full_refresh: bool) -> None:
    """Register new items and process them in the project's Dagster instance; exit 1 if any run failed."""
    settings = checked_settings()
    if not filesystem_for(settings.lake).exists(settings.lake):
        # Not an error (a lake may start empty), but a mistyped SNOWPLOW_LAKE looked like a clean run.
        click.echo(f"note: the lake {settings.lake} does not exist (SNOWPLOW_LAKE): there is nothing in it yet")
    with project_instance() as instance:
        outcomes = process_all_or_say_why(instance, settings, ProcessRequest(runs, landings, full_refresh))
    failed = [o for o in outcomes if not o.success]
    if failed:
        raise click.ClickException(
            f"{len(failed)} of {len(outcomes)} run(s) failed: " + ", ".join(o.partition or o.run_id for o in failed)
        )
