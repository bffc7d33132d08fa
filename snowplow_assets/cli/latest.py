"""`snowplow-assets latest MODEL`: the freshest view of a CDC model, read straight from the lake.

It merges the model's newest batch with every record the batch does not hold (cdc/latest.py), so it is
current as of the last ingested landing even when no batch ran since. Rows come sorted by key; the key
comes first, under the model's id name, then the columns (all, or those of `--columns`, in that order).
`json` prints one object per row with every column, nulls included; `csv` prints a header, then rows.
"""

from __future__ import annotations

import csv
import io
import uuid

import click
from pyspark.sql import functions as F

from snowplow_assets.cdc.latest import latest_table
from snowplow_assets.cdc.models import ModelsFileError, load_models
from snowplow_assets.events.sql import identifier
from snowplow_assets.lake import Lake
from snowplow_assets.settings import Settings
from snowplow_assets.spark import build_spark_session
from snowplow_assets.storage import filesystem_for, is_data_file


def _columns(value: str | None) -> list[str] | None:
    if value is None:
        return None
    names = [name.strip() for name in value.split(",")]
    if not all(names):
        raise click.BadParameter(f"empty column name in {value!r}", param_hint="--columns")
    return list(dict.fromkeys(names))


@click.command()
@click.argument("model")
@click.option("--columns", metavar="A,B", help="Columns to print after the key, comma-separated. Default: all.")
@click.option(
    "--format", "output_format", type=click.Choice(["json", "csv"]), default="json", show_default=True,
    help="One JSON object per line, or CSV with a header.",
)  # fmt: skip
def latest(model: str, columns: str | None, output_format: str) -> None:
    """Print the freshest deduplicated view of a CDC model: its newest batch plus every newer record."""
    settings = Settings()
    try:
        spec = load_models(settings.cdc_models).model(model)
    except ModelsFileError as error:
        raise click.ClickException(str(error)) from None
    except KeyError as error:
        raise click.BadParameter(error.args[0], param_hint="MODEL") from None
    chosen = _columns(columns)
    lake, fs = Lake(settings.lake), filesystem_for(settings.lake)
    spark = build_spark_session(settings.spark_config, app_name="snowplow-assets-latest")
    try:
        table, _ = latest_table(spark, fs, lake, spec, chosen)
    except KeyError as error:
        raise click.BadParameter(error.args[0], param_hint="--columns") from None
    names = table.columns
    row = F.struct(*(F.col(identifier(n)) for n in names))
    line = F.to_json(row, {"ignoreNullFields": "false"}) if output_format == "json" else F.to_csv(row)
    if output_format == "csv":
        header = io.StringIO()
        csv.writer(header, lineterminator="").writerow(names)
        click.echo(header.getvalue())
    # Spark writes the lines, sorted in one task (no sampling pass that would compute the view twice), to a
    # private folder of the lake; they are then copied out. Much faster than a million rows through Python.
    staging = lake.cdc_staging(uuid.uuid4().hex[:16])
    try:
        (
            table.select(F.col(identifier(spec.id)).alias("__sort"), line.alias("value"))
            .repartition(1)
            .sortWithinPartitions("__sort")
            .select("value")
            .write.text(fs.spark_path(staging))
        )
        for part in fs.list_files(staging):
            if is_data_file(part.name):
                click.echo(fs.read_text(part.uri), nl=False)
    finally:
        fs.delete(staging)
