"""`snowplow-assets demo`: sample data in, shredded data out, on the embedded default lake."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from pathlib import Path

import click
import dagster as dg
from dotenv import set_key

from snowplow_assets.cli.generate_cdc import describe, generate_demo_landings
from snowplow_assets.cli.instance import project_instance
from snowplow_assets.cli.process import SHRED_JOB, SHREDDED, checked_settings, process_all_or_say_why
from snowplow_assets.datagen.enriched import GenerationOptions, generate_run_folder, run_folder_name
from snowplow_assets.lake import Lake

ENV_FILE = Path(".env")  # the one the settings read: in the working directory
WEB_START_DATE = "SNOWPLOW_WEB_START_DATE"
_SHOWN = ("lines_read", "good", "bad", "natural_duplicates_removed", "synthetic_duplicates_renamed")


def _metadata(instance: dg.DagsterInstance, partition: str) -> dict[str, object]:
    records = instance.fetch_materializations(
        dg.AssetRecordsFilter(asset_key=SHREDDED, asset_partitions=[partition]), limit=1
    ).records
    if not records:
        return {}
    materialization = records[0].asset_materialization
    return {k: v.value for k, v in materialization.metadata.items()} if materialization else {}


@click.command()
@click.option("--runs", default=2, show_default=True, help="Enriched run folders to generate.")
@click.option("--events", default=2000, show_default=True, help="Events per run folder.")
def demo(runs: int, events: int) -> None:
    """Generate sample enriched run folders into the lake, process them end to end, print what came out."""
    settings = checked_settings()
    if settings.lake.startswith("s3://"):
        raise click.ClickException(
            "the demo writes sample data to a local lake; unset SNOWPLOW_LAKE or point it at a folder"
        )
    lake = Lake(settings.lake)
    # New folders on every demo, named after the current time, so a second demo adds batches.
    first = datetime.now(timezone.utc).replace(microsecond=0) - timedelta(hours=runs)
    if "web_start_date" not in settings.model_fields_set:
        # The sample sessions reach back a few days. A web start date just before them lets the first web-models
        # run take them all; from the 2020 default, runs would step through years of empty 30-day windows. It
        # is kept in .env, which the settings read, so that a later full refresh, a model enabled later and
        # `dagster dev`'s runs start there too, not in 2020.
        start = (first - timedelta(days=14)).date()
        settings = settings.model_copy(update={"web_start_date": start})
        set_key(ENV_FILE, WEB_START_DATE, start.isoformat(), quote_mode="never")
        click.echo(f"web start date {start}: written to {ENV_FILE} as {WEB_START_DATE}")
    for index in range(runs):
        stamp = first + timedelta(hours=index)
        folder = Path(lake.uri("enriched", run_folder_name(stamp)))
        stats = generate_run_folder(
            folder, GenerationOptions(events=events, seed=int(stamp.timestamp()), start=stamp - timedelta(minutes=30))
        )
        click.echo(
            f"generated {folder}: {stats.lines_written} lines ({stats.natural_duplicates} natural, "
            f"{stats.synthetic_duplicates} synthetic duplicates, {stats.bad_lines} bad)"
        )
    cdc = generate_demo_landings(settings, first + timedelta(hours=runs))
    for landing in cdc[1].landings if cdc else []:
        click.echo(f"generated {landing.folder}:\n{describe(landing)}")

    with project_instance() as instance:
        outcomes = process_all_or_say_why(instance, settings)
        click.echo("")
        for outcome in outcomes:
            if outcome.job != SHRED_JOB:
                click.echo(f"{outcome.job}: {'ok' if outcome.success else 'FAILED'} (run {outcome.run_id})")
                continue
            shown = _metadata(instance, outcome.partition or "")
            counts = ", ".join(f"{k}={shown.get(k)}" for k in _SHOWN)
            click.echo(f"{outcome.partition}: {'ok' if outcome.success else 'FAILED'} {counts}")
            click.echo(f"  good: {lake.shredded_good(outcome.partition or '')}")
            click.echo(f"  bad:  {lake.shredded_bad(outcome.partition or '')}")
    if any(not o.success for o in outcomes):
        raise click.ClickException("some runs failed; see `dagster dev` for their logs")
    if cdc:
        click.echo(f"\nThe freshest view of the CDC model: snowplow-assets latest {cdc[0]}")
    if shared := settings.shared_spark_server:
        click.echo(
            f"\nThe runs shared one Spark server, which stops after {shared.idle_seconds / 60:g} minutes without a run"
            " (SNOWPLOW_SPARK_SERVER=own gives each run a JVM of its own instead)."
        )
    click.echo("\nOpen the UI with `dagster dev` in the project root to see the runs, partitions and checks.")
