"""Web model tables: Parquet under `web/<model>/`, one folder per day of `start_tstamp`, upserted by key.

An upsert replaces every row whose key is among the new rows and adds the rest. It rewrites only the
day partitions from `upsert_lookback_days` before the earliest new row onwards (dbt-snowplow-web's upsert
lookback): a row's start can only move earlier as more of its events arrive (a session's start is the
least of its events', a page view's is its earliest page_view event's), so the row it replaces lies in
that range; the margin covers the rare row whose start moves later, and the unique-key check reports a
key the upsert could not reach.

Writing: the new rows are staged (counted on the way) to learn their earliest day, unless the caller
already knows a day none starts before; then the rewritten partitions are staged in full: old rows of
those days minus replaced keys, plus new rows. Publishing swaps
each staged day folder into place with a folder rename and removes days left without rows. Every day
folder a reader lists is complete; a run that dies between two swaps leaves the model's last_success
unchanged, so the next run recomputes the same window and rewrites the same days (upserts are idempotent).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import date, timedelta

from pyspark.sql import Column, DataFrame, Observation, SparkSession
from pyspark.sql import functions as F

from snowplow_assets.lake import Lake
from snowplow_assets.storage import LakeFileSystem

PARTITION = "start_date"
_PARTITION_FOLDER = re.compile(r"^start_date=(\d{4}-\d{2}-\d{2})$")


@dataclass(frozen=True)
class TableSpec:
    model: str
    key: str
    schema: str  # Spark DDL of the columns, without the partition column
    start: str = "start_tstamp"  # the timestamp the table is partitioned by (its day)

    @property
    def columns(self) -> list[str]:
        return [part.strip().split(" ")[0] for part in self.schema.split(",")]

    @property
    def table_schema(self) -> str:
        return f"{self.schema}, {PARTITION} STRING"


@dataclass(frozen=True)
class UpsertReport:
    rows: int  # new or replaced rows
    floor: date | None  # first day partition rewritten
    partitions_written: list[str]
    partitions_removed: list[str]
    metrics: dict[str, object]
    updated: DataFrame  # the new rows, readable until the run's staging folder is removed


def table_partitions(fs: LakeFileSystem, lake: Lake, spec: TableSpec) -> dict[str, str]:
    """day (YYYY-MM-DD) -> folder of every partition of a model's table; other entries are ignored."""
    found = {}
    for entry in fs.list_dir(lake.web_model(spec.model)):
        match = _PARTITION_FOLDER.fullmatch(entry.name)
        if entry.is_dir and match:
            found[match.group(1)] = entry.uri
    return found


def read_table(
    spark: SparkSession, fs: LakeFileSystem, lake: Lake, spec: TableSpec, since: date | None = None
) -> DataFrame:
    """A model's table (columns of the spec, then `start_date`), only the days from `since` when given."""
    return read_table_if_any(spark, fs, lake, spec, since) or spark.createDataFrame([], spec.table_schema)


def read_table_if_any(
    spark: SparkSession, fs: LakeFileSystem, lake: Lake, spec: TableSpec, since: date | None = None
) -> DataFrame | None:
    """Like read_table, but None when there is no such partition, which tells without a Spark job."""
    days = {d: uri for d, uri in table_partitions(fs, lake, spec).items() if since is None or d >= since.isoformat()}
    if not days:
        return None
    base = fs.spark_path(lake.web_model(spec.model))
    reader = spark.read.schema(spec.table_schema).option("basePath", base)
    return reader.parquet(*(fs.spark_path(uri) for uri in sorted(days.values())))


def upsert(
    spark: SparkSession,
    fs: LakeFileSystem,
    lake: Lake,
    spec: TableSpec,
    rows: DataFrame,
    staging: str,
    lookback_days: int,
    metrics: tuple[Column, ...] = (),
    earliest: date | None = None,
    replaced_keys: DataFrame | None = None,
) -> UpsertReport:
    """Replace the rows of `spec`'s table whose key is in `rows` and add the others (module doc).

    `metrics` are extra aggregate columns over `rows` (any of their columns), computed while they are written.
    `earliest`, when the caller knows a day no new row starts before, saves staging the new rows first to
    find it; `rows` must then be cheap to compute again (they are returned as `updated`).
    `replaced_keys` (one column, the key), when given, are the keys whose rows are replaced instead of the
    keys of `rows`: a key among them without a new row loses its row. It needs `earliest`, which must then
    also be a day no old row of those keys starts before, since only the caller knows where they lie.
    """
    if replaced_keys is not None and earliest is None:
        raise ValueError("replaced_keys needs earliest: the day from which the replaced rows are searched")
    new = rows.withColumn(PARTITION, F.date_format(spec.start, "yyyy-MM-dd"))
    observation = Observation(f"upsert_{spec.model}")
    counted = new.observe(
        observation,
        F.count(F.lit(1)).alias("_rows"),
        F.count_if(F.col(PARTITION).isNull()).alias("_no_start"),
        F.min(PARTITION).alias("_first_day"),
        *metrics,
    ).select(*spec.columns, PARTITION)
    if earliest is None:
        new_path = f"{staging}/{spec.model}/new"
        counted.write.mode("overwrite").parquet(fs.spark_path(new_path))
        count, first_day, observed = _observed(observation, spec)
        updated = spark.read.schema(spec.table_schema).parquet(fs.spark_path(new_path))
        if not count:
            return UpsertReport(0, None, [], [], observed, updated)
        floor = date.fromisoformat(first_day) - timedelta(days=lookback_days)  # type: ignore[arg-type]
        written_new, new_keys = updated, updated.select(spec.key)
    else:
        floor = earliest - timedelta(days=lookback_days)
        # The keys come from the unobserved rows: an observation may appear only once in a plan.
        written_new, updated = counted, rows.select(*spec.columns)
        new_keys = rows.select(spec.key) if replaced_keys is None else replaced_keys.select(spec.key)

    region_path = f"{staging}/{spec.model}/region"
    old = read_table(spark, fs, lake, spec, since=floor)
    region = old.join(new_keys, spec.key, "left_anti").unionByName(written_new)
    region.write.mode("overwrite").partitionBy(PARTITION).parquet(fs.spark_path(region_path))
    if earliest is not None:
        count, first_day, observed = _observed(observation, spec)
        if count and first_day < earliest.isoformat():  # type: ignore[operator]
            raise ValueError(
                f"new {spec.model} rows start on {first_day}, before the promised {earliest}; nothing was published"
            )
        if not count and replaced_keys is None:
            return UpsertReport(0, None, [], [], observed, updated)

    written = {
        match.group(1): entry.uri
        for entry in fs.list_dir(region_path)
        if entry.is_dir and (match := _PARTITION_FOLDER.fullmatch(entry.name))
    }
    table = lake.web_model(spec.model)
    removed = sorted(d for d in table_partitions(fs, lake, spec) if d >= floor.isoformat() and d not in written)
    for day in sorted(written):
        fs.replace_tree(written[day], f"{table}/{PARTITION}={day}")
    for day in removed:
        fs.delete(f"{table}/{PARTITION}={day}")
    return UpsertReport(count, floor, sorted(written), removed, observed, updated)


def _observed(observation: Observation, spec: TableSpec) -> tuple[int, str | None, dict[str, object]]:
    observed = dict(observation.get)
    count, no_start, first_day = int(observed.pop("_rows")), int(observed.pop("_no_start")), observed.pop("_first_day")
    if no_start:
        raise ValueError(f"{no_start} new {spec.model} rows have no {spec.start}; nothing was published")
    return count, first_day, observed  # type: ignore[return-value]
