"""`snowplow-assets generate cdc`: write CDC landing folders of synthetic Kafka records for one model."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import click

from snowplow_assets.cdc.models import CONTRACTS, ModelsFileError, ModelSpec, load_models
from snowplow_assets.cli.generate import parse_start
from snowplow_assets.datagen.cdc import CdcGeneration, CdcGenerationOptions, LandingStats, generate_cdc_landings
from snowplow_assets.lake import Lake
from snowplow_assets.settings import Settings

_DEFAULTS = CdcGenerationOptions()


def _model(models_path: str, name: str | None) -> ModelSpec:
    try:
        models = load_models(models_path)
    except ModelsFileError as error:
        raise click.ClickException(str(error)) from None
    if name is None:
        if len(models.models) != 1:
            raise click.UsageError(f"{models_path} declares {len(models.models)} models; choose one with --model")
        return next(iter(models.models.values()))
    try:
        return models.model(name)
    except KeyError as error:
        raise click.BadParameter(error.args[0], param_hint="--model") from None


def describe(stats: LandingStats) -> str:
    contracts = ", ".join(f"{c} {n}" for c, n in sorted(stats.by_contract.items()))
    return (
        f"  {stats.records} records ({contracts}): {stats.inserts} inserts, {stats.updates} updates, "
        f"{stats.deletes} deletes + {stats.tombstones} tombstones, {stats.late} late from the previous landing, "
        f"{stats.duplicates} duplicates"
    )


def generate_demo_landings(settings: Settings, end: datetime) -> tuple[str, CdcGeneration] | None:
    """Two landings for the first model of the models file, covering the 20 minutes before `end`."""
    models = load_models(settings.cdc_models)
    if not models.models:
        return None
    model = models.models[sorted(models.models)[0]]
    options = CdcGenerationOptions(
        keys=200,
        landings=2,
        seed=int(end.timestamp()),
        start=end - timedelta(minutes=20),
        interval=timedelta(minutes=10),
    )
    return model.name, generate_cdc_landings(Path(Lake(settings.lake).cdc_landings), model, options)


@click.command(name="cdc")
@click.option(
    "--lake", type=click.Path(file_okay=False, path_type=Path), help="Lake root folder. Default: SNOWPLOW_LAKE."
)
@click.option(
    "--models", "models_path", type=click.Path(dir_okay=False, path_type=Path),
    help="CDC models file. Default: SNOWPLOW_CDC_MODELS.",
)  # fmt: skip
@click.option("--model", "model_name", help="Model whose topics to write. Default: the file's only model.")
@click.option(
    "--contract", "contracts", multiple=True, type=click.Choice(CONTRACTS),
    help="Only the model's topics of this contract (repeatable). Default: all its topics.",
)  # fmt: skip
@click.option(
    "--landings",
    type=click.IntRange(min=1),
    default=_DEFAULTS.landings,
    show_default=True,
    help="Landing folders to write.",
)
@click.option(
    "--keys",
    type=click.IntRange(min=1),
    default=_DEFAULTS.keys,
    show_default=True,
    help="Keys the first landing inserts.",
)
@click.option(
    "--update-rate", type=click.FloatRange(0, 1), default=_DEFAULTS.update_rate, show_default=True,
    help="Share of live keys each later landing updates.",
)  # fmt: skip
@click.option(
    "--delete-rate", type=click.FloatRange(0, 1), default=_DEFAULTS.delete_rate, show_default=True,
    help="Share of live keys each later landing deletes.",
)  # fmt: skip
@click.option(
    "--reinsert-rate", type=click.FloatRange(0, 1), default=_DEFAULTS.reinsert_rate, show_default=True,
    help="Share of deleted keys each later landing inserts again.",
)  # fmt: skip
@click.option(
    "--late-rate", type=click.FloatRange(0, 1), default=_DEFAULTS.late_rate, show_default=True,
    help="Share of a landing's records landed late, with the next landing, keeping their older timestamps.",
)  # fmt: skip
@click.option(
    "--duplicate-rate", type=click.FloatRange(0, 1), default=_DEFAULTS.duplicate_rate, show_default=True,
    help="Share of a landing's records landed a second time.",
)  # fmt: skip
@click.option(
    "--partitions",
    type=click.IntRange(min=1),
    default=_DEFAULTS.partitions,
    show_default=True,
    help="Kafka partitions per topic.",
)
@click.option(
    "--files",
    type=click.IntRange(min=1),
    default=_DEFAULTS.files,
    show_default=True,
    help="JSON-lines files per landing.",
)
@click.option("--gzip/--no-gzip", default=_DEFAULTS.gzip, show_default=True, help="Compress the files.")
@click.option("--seed", type=int, default=_DEFAULTS.seed, show_default=True, help="Random seed.")
@click.option(
    "--start", default=_DEFAULTS.start.isoformat(), show_default=True, callback=parse_start,
    help="Start of the first landing's time span, ISO 8601; UTC unless it has an offset.",
)  # fmt: skip
@click.option(
    "--interval-minutes", type=click.FloatRange(min=1 / 60), default=_DEFAULTS.interval.total_seconds() / 60,
    show_default=True, help="Time span of each landing; the next one starts where it ends.",
)  # fmt: skip
@click.option("--new-column-from", type=click.IntRange(min=1), help="From this landing on, rows carry an extra column.")
def cdc(
    lake: Path | None,
    models_path: Path | None,
    model_name: str | None,
    contracts: tuple[str, ...],
    landings: int,
    keys: int,
    update_rate: float,
    delete_rate: float,
    reinsert_rate: float,
    late_rate: float,
    duplicate_rate: float,
    partitions: int,
    files: int,
    gzip: bool,
    seed: int,
    start: datetime,
    interval_minutes: float,
    new_column_from: int | None,
) -> None:
    """Write landing folders of synthetic Kafka records of a CDC model's topics to <lake>/cdc/landing/."""
    settings = Settings()
    root = str(lake.resolve()) if lake is not None else settings.lake
    if "://" in root:
        raise click.UsageError(f"generate cdc writes to a local lake folder, not to {root}")
    model = _model(str(models_path) if models_path else settings.cdc_models, model_name)
    try:
        options = CdcGenerationOptions(
            keys=keys, landings=landings, update_rate=update_rate, delete_rate=delete_rate,
            reinsert_rate=reinsert_rate, late_rate=late_rate, duplicate_rate=duplicate_rate,
            partitions=partitions, files=files, gzip=gzip, seed=seed,
            start=start if start.tzinfo else start.replace(tzinfo=UTC),
            interval=timedelta(minutes=interval_minutes), contracts=contracts, new_column_from=new_column_from,
        )  # fmt: skip
        generation = generate_cdc_landings(Path(Lake(root).cdc_landings), model, options)
    except (ValueError, FileExistsError) as error:
        raise click.UsageError(str(error)) from None
    for stats in generation.landings:
        click.echo(str(stats.folder))
        click.echo(describe(stats))
    click.echo(f"{model.name}: {len(generation.expected)} live keys after the last landing")
