"""`snowplow-assets latest MODEL`: the freshest view of a CDC model, read straight from the lake.

It merges the model's newest batch with every record the batch does not hold (cdc/latest.py), so it is
current as of the last ingested landing even when no batch ran since. Rows come sorted by key; the key
comes first, under the model's id name, then the columns (all, or those of `--columns`, in that order).
`json` prints one object per row with every column, nulls included; `csv` prints a header, then rows as
RFC 4180 has them (fields with a comma, quote or line break quoted, quotes doubled, white space kept; a
null is an empty field, an empty string `""`). Landings read under other models than the models file
declares now, for topics of this model (cdc/stale_landings.py), are named in a warning on standard error.

The command is not a Dagster run, so it is outside the `cdc_batches` pool that keeps Dagster's cuts and
views apart, and ingesting is in no pool at all: a cut that replaces or expires the batch it is reading, or
a landing ingested again under it, swaps the files it planned to read for others. Such a read fails on a
missing file before anything is printed, and the view is then computed again from the lake as it is now, up
to ATTEMPTS times in all, each retry noted on standard error; after the last, the read's own error is raised
(a history folder gone for good is LostHistory, whose message says what to do). Nothing printed can mix two
states of the lake.
"""

from __future__ import annotations

import csv
import io
import shutil
from dataclasses import dataclass

import click
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F

from snowplow_assets.cdc.history import read_ingested
from snowplow_assets.cdc.latest import latest_table
from snowplow_assets.cdc.models import CdcModels, ModelsFileError, ModelSpec, load_models
from snowplow_assets.cdc.staging import LATEST_COMMAND, new_side_by_side_staging
from snowplow_assets.cdc.stale_landings import stale_landings
from snowplow_assets.events.sql import identifier
from snowplow_assets.lake import Lake
from snowplow_assets.settings import Settings
from snowplow_assets.shown import shown
from snowplow_assets.spark import spark_session
from snowplow_assets.storage import LakeFileSystem, failed_on_a_gone_file, filesystem_for, is_data_file

ATTEMPTS = 3
# Spark's CSV defaults escape a quote with a backslash and trim the values' white space; these make its
# rows what the header's csv module and every RFC 4180 reader expect.
CSV_OPTIONS = {"quote": '"', "escape": '"', "ignoreLeadingWhiteSpace": "false", "ignoreTrailingWhiteSpace": "false"}


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
        models = load_models(settings.cdc_models)
        spec = models.model(model)
    except ModelsFileError as error:
        raise click.ClickException(str(error)) from None
    except KeyError as error:
        raise click.BadParameter(error.args[0], param_hint="MODEL") from None
    chosen = _columns(columns)
    lake, fs = Lake(settings.lake), filesystem_for(settings.lake)
    with spark_session(settings.spark_config, settings.shared_spark_server, app_name="snowplow-assets-latest") as spark:
        view = _View(spark, fs, lake, models, spec, chosen, output_format)
        for attempt in range(1, ATTEMPTS + 1):
            try:
                view.print(warn=attempt == 1)
                return
            except LakeChanged as changed:
                if attempt == ATTEMPTS:  # a file gone for good (LostHistory names it), or a lake never still
                    click.echo(f"{changed}, in each of {ATTEMPTS} attempts", err=True)
                    raise changed.__cause__ from None
                click.echo(f"{changed}; reading it again, attempt {attempt + 1} of {ATTEMPTS}", err=True)


class LakeChanged(Exception):
    """The view's read failed on a file that is gone: a cut or an ingestion swapped it meanwhile."""


@dataclass(frozen=True)
class _View:
    """One model's view as the command prints it, computed from the lake as it is at each `print`."""

    spark: SparkSession
    fs: LakeFileSystem
    lake: Lake
    models: CdcModels
    spec: ModelSpec
    columns: list[str] | None
    output_format: str

    def print(self, warn: bool) -> None:
        """Compute the view and print it once every line is written (on LakeChanged, nothing was printed)."""
        staging = new_side_by_side_staging(self.fs, self.lake, LATEST_COMMAND)
        try:
            names = self._write(staging, warn)
            if self.output_format == "csv":
                header = io.StringIO()
                csv.writer(header, lineterminator="").writerow(names)
                click.echo(header.getvalue())
            out = click.get_binary_stream("stdout")
            for part in self.fs.list_files(staging):
                if is_data_file(part.name):
                    with self.fs.open_binary(part.uri) as lines:
                        shutil.copyfileobj(lines, out, 1 << 20)
            out.flush()
        finally:
            self.fs.delete(staging)

    def _write(self, staging: str, warn: bool) -> list[str]:
        """The view's lines written to `staging` in key order; its column names."""
        try:
            ingested = read_ingested(self.fs, self.lake)
            if warn:
                _warn_of_stale_landings(stale_landings(ingested, self.models, self.spec.name))
            try:
                table, _ = latest_table(self.spark, self.fs, self.lake, self.spec, self.columns, ingested)
            except KeyError as error:
                raise click.BadParameter(error.args[0], param_hint="--columns") from None
            row = F.struct(*(F.col(identifier(n)) for n in table.columns))
            as_json = self.output_format == "json"
            line = F.to_json(row, {"ignoreNullFields": "false"}) if as_json else F.to_csv(row, CSV_OPTIONS)
            key = F.struct(*(F.col(identifier(n)) for n in self.spec.id))
            _write_sorted_lines(table, key, line, self.fs, staging)
            return table.columns
        except Exception as error:
            if failed_on_a_gone_file(error):
                raise LakeChanged("the lake changed under the view (a file it planned to read is gone)") from error
            raise


def _warn_of_stale_landings(stale: dict[str, list[str]]) -> None:
    """On standard error, so that the rows on standard output stay clean."""
    if stale:
        click.echo(
            f"warning: {len(stale)} CDC landing(s) were read under other models than the models file declares "
            f"now, and this view reads them as they were read: {shown(list(stale))}; ingest them again "
            "(snowplow-assets process --ingest LANDING)",
            err=True,
        )


def _write_sorted_lines(table: DataFrame, sort_by: Column, line: Column, fs: LakeFileSystem, staging: str) -> None:
    """Write `line` of every row of `table`, in the order of `sort_by`, as text to `staging`.

    Spark writes the lines, sorted in one task (no sampling pass that would compute the view twice), to a
    private folder of the lake, and they are streamed from there in chunks: a million rows neither pass
    through Python one by one nor sit in its memory at once.
    """
    (
        table.select(sort_by.alias("__sort"), line.alias("value"))
        .repartition(1)
        .sortWithinPartitions("__sort")
        .select("value")
        .write.text(fs.spark_path(staging))
    )
