"""`snowplow-assets generate`: write synthetic input data into the lake."""

from __future__ import annotations

from datetime import datetime, timedelta
from pathlib import Path

import click

from snowplow_assets.datagen.enriched import GenerationOptions, GenerationStats, generate_run_folder, run_folder_name
from snowplow_assets.lake import Lake
from snowplow_assets.settings import Settings

_DEFAULTS = GenerationOptions()
_RUN_INTERVAL = timedelta(hours=1)


@click.group(name="generate")
def generate() -> None:
    """Write synthetic input data into the lake."""


def parse_start(_context: click.Context, _parameter: click.Parameter, value: str) -> datetime:
    try:
        return datetime.fromisoformat(value)
    except ValueError as error:
        raise click.BadParameter(f"not an ISO 8601 date and time: {value!r}") from error


@generate.command(name="enriched")
@click.option(
    "--lake",
    type=click.Path(file_okay=False, path_type=Path),
    help="Lake root folder. Default: the `lake` setting (SNOWPLOW_LAKE).",
)
@click.option(
    "--runs", type=click.IntRange(min=1), default=1, show_default=True, help="Run folders to write, an hour apart."
)
@click.option(
    "--events",
    type=click.IntRange(min=0),
    default=_DEFAULTS.events,
    show_default=True,
    help="Distinct events per run folder.",
)
@click.option(
    "--natural-duplicate-rate",
    type=click.FloatRange(0, 1),
    default=_DEFAULTS.natural_duplicate_rate,
    show_default=True,
    help="Exact copies of events (same id and fingerprint), as a fraction of events.",
)
@click.option(
    "--synthetic-duplicate-rate",
    type=click.FloatRange(0, 1),
    default=_DEFAULTS.synthetic_duplicate_rate,
    show_default=True,
    help="Other events reusing an event's id (new fingerprint), as a fraction of events.",
)
@click.option(
    "--bad-line-rate",
    type=click.FloatRange(0, 1),
    default=_DEFAULTS.bad_line_rate,
    show_default=True,
    help="Lines the parser must reject, as a fraction of events.",
)
@click.option(
    "--files", type=click.IntRange(min=1), default=_DEFAULTS.files, show_default=True, help="Part files per run folder."
)
@click.option("--gzip/--no-gzip", default=_DEFAULTS.gzip, show_default=True, help="Compress the part files.")
@click.option(
    "--seed",
    type=int,
    default=_DEFAULTS.seed,
    show_default=True,
    help="Seed of the first run folder; the next ones use seed+1, seed+2, ...",
)
@click.option(
    "--start",
    default=_DEFAULTS.start.isoformat(),
    show_default=True,
    callback=parse_start,
    help="Time of the first run folder, ISO 8601; UTC unless it has an offset.",
)
def enriched(
    lake: Path | None,
    runs: int,
    events: int,
    natural_duplicate_rate: float,
    synthetic_duplicate_rate: float,
    bad_line_rate: float,
    files: int,
    gzip: bool,
    seed: int,
    start: datetime,
) -> None:
    """Write run folders of synthetic Snowplow enriched events to <lake>/enriched/."""
    root = str(lake.resolve()) if lake is not None else Settings().lake
    if "://" in root:
        raise click.UsageError(f"generate enriched writes to a local lake folder, not to {root}")
    plans = []
    for index in range(runs):
        options = GenerationOptions(
            events=events,
            natural_duplicate_rate=natural_duplicate_rate,
            synthetic_duplicate_rate=synthetic_duplicate_rate,
            bad_line_rate=bad_line_rate,
            files=files,
            gzip=gzip,
            seed=seed + index,
            start=start + index * _RUN_INTERVAL,
        )
        folder = Path(Lake(root).enriched_run(run_folder_name(options.start)))
        if folder.exists():
            raise click.UsageError(f"run folder {folder} already exists; not overwriting it")
        plans.append((folder, options))

    for folder, options in plans:
        stats = generate_run_folder(folder, options)
        click.echo(str(folder))
        click.echo(_describe(stats))


def _describe(stats: GenerationStats) -> str:
    text = (
        f"  {stats.lines_written} lines in {len(stats.files)} files: {stats.events} events, "
        f"{stats.natural_duplicates} natural duplicates, {stats.synthetic_duplicates} synthetic duplicates, "
        f"{stats.bad_lines} bad lines"
    )
    kinds = ", ".join(f"{kind} {count}" for kind, count in stats.bad_line_kinds.items() if count)
    return f"{text} ({kinds})" if kinds else text
