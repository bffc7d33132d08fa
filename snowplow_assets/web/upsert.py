"""Web model tables: Parquet under `web/<model>/`, one folder per day of `start_tstamp`, upserted by key.

An upsert replaces every row whose key is among the new rows and adds the rest. It rewrites only the
day partitions from `upsert_lookback_days` before the earliest new row onwards (dbt-snowplow-web's upsert
lookback): a row's start can only move earlier as more of its events arrive (a session's start is the
least of its events', a page view's is its earliest page_view event's), so the row it replaces lies in
that range; the margin covers the rare row whose start moves later, and the unique-key check reports a
key the upsert could not reach.

Writing: the new rows are staged (counted on the way) to learn their earliest day, unless the caller
already knows a day none starts before; then the rewritten partitions are staged in full: old rows of
those days minus replaced keys, plus new rows. Publishing (`publish`) writes into each staged day folder the
list of its data files (`_files.json`; readers skip `_` files), swaps the folder into place with
`replace_tree`, and then removes the days left without rows. A run that dies between two swaps leaves the
model's last_success unchanged, so the next run recomputes the same window and rewrites the same days
(upserts are idempotent).

A swap cut short: `replace_tree` moves the old day folder aside, to `.start_date=<day>.replaced-<hex>`, moves
the staged one in, then deletes the old one. A run killed within it leaves the old copy, whole or in part,
next to a day folder that is missing, partial (on S3 a move copies file by file, and a delete removes them
one by one) or complete. So `table_partitions`, the listing every read of a table goes through (the next
run's reads and upserts, the checks), first puts back each day that has such a copy: the day keeps the
first complete copy, its own folder before the old one, and the other copies are deleted. Its own folder is
complete once the new files are all in (or before the old ones were moved out), and the old copy is
complete from when it was moved aside until its deletion starts. A copy is complete when every file its
list names is there: the list travels with its folder, so a copy cut short lacks the list or some of the
files it names. A folder written before the lists has none; a copy of it cut short holds part of its files,
so the day folder is kept if it holds every file of the old copy, and otherwise the old copy is. The day
then holds all of its old rows or all of the killed run's, so every day a run reads is complete, and the
next run rewrites it. The repair writes as it lists, which is safe because one web-models run at a time
writes the tables (the `web_models` pool); a reader outside the runs may see a partial day until the next
run has read the table.

A removal cut short leaves part of a day whose every row has a newer row, under the same key, in a day
already swapped in: as when a run dies between two swaps, a key may then have its old row too, until the
next run rewrites the same days and removes that day again. A killed run's staged days are never read
again; the next run removes them with its own staging (pipeline.WebRun.close).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from datetime import date, timedelta

from pyspark.sql import Column, DataFrame, Observation, SparkSession
from pyspark.sql import functions as F

from snowplow_assets.lake import Lake
from snowplow_assets.storage import LakeFileSystem, data_files, path_below, retired_copy_of

PARTITION = "start_date"
FILE_LIST = "_files.json"  # in each day folder: the names of its data files, a JSON list (module doc)
_PARTITION_FOLDER = re.compile(r"^start_date=(\d{4}-\d{2}-\d{2})$")


def day_floor(day: date | str, days_before: int = 0) -> date:
    """The day `days_before` days before `day` (a date, or a day partition's YYYY-MM-DD), as a lower bound of
    the days a table is read or rewritten from: date.min when it would fall before the year 1.

    An event time may be any valid timestamp, in the years 0 to 9999 (four digits, FORMATS.md §1): a
    tracker's true_tstamp, a device clock. Its row lies in a partition such as `start_date=0000-06-15`, a day
    no Python date holds, and a lookback before the year 1 does not exist either. As a bound, date.min
    stands for every day, the year 0's included (`_from_day`): a lower bound taken lower only reads and
    rewrites more days.
    """
    if isinstance(day, str):
        try:
            day = date.fromisoformat(day)
        except ValueError:
            if not re.fullmatch(r"0000-\d{2}-\d{2}", day):
                raise
            return date.min  # the year 0
    try:
        return day - timedelta(days=days_before)
    except OverflowError:
        return date.min


def _from_day(since: date) -> str:
    """The first day partition at or after the bound `since`: date.min takes in the year 0's too (day_floor)."""
    return "0000-01-01" if since == date.min else since.isoformat()


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
    """day (YYYY-MM-DD) -> folder of every partition of a model's table; other entries are ignored.

    Each day whose swap was cut short is put back first (module doc), so that no reader takes a partial day.
    """
    table = lake.web_model(spec.model)
    entries = fs.list_dir(table)
    retired: dict[str, list[str]] = {}
    for entry in entries:
        day = retired_copy_of(entry.name)
        if entry.is_dir and day is not None and (match := _PARTITION_FOLDER.fullmatch(day)):
            retired.setdefault(match.group(1), []).append(entry.uri)
    if retired:
        for day, copies in sorted(retired.items()):
            _put_back(fs, f"{table}/{PARTITION}={day}", copies)
        entries = fs.list_dir(table)
    found = {}
    for entry in entries:
        match = _PARTITION_FOLDER.fullmatch(entry.name)
        if entry.is_dir and match:
            found[match.group(1)] = entry.uri
    return found


def _put_back(fs: LakeFileSystem, day: str, retired: list[str]) -> None:
    """Leave in `day` a complete copy of the day from among itself and its `retired` copies (module doc)."""
    copies = [day, *retired]
    present, listed = {}, {}
    for copy in copies:
        files = fs.list_files(copy)
        present[copy] = {path_below(copy, f) for f in data_files(copy, files)}
        has_list = any(path_below(copy, f) == FILE_LIST for f in files)
        listed[copy] = set(json.loads(fs.read_text(f"{copy}/{FILE_LIST}"))) if has_list else None
    complete = [c for c in copies if listed[c] is not None and listed[c] <= present[c]]
    if complete:
        kept = complete[0]
    else:
        # Folders from before the lists: a copy cut short holds part of its source's files, so a day folder
        # that holds every file of the old copies is whole, and otherwise an old copy is.
        unlisted = [c for c in retired if listed[c] is None] or retired
        whole_day = listed[day] is None and all(present[day] >= present[c] for c in unlisted)
        kept = day if whole_day else max(unlisted, key=lambda c: len(present[c]))
    if kept != day:
        # Each step leaves a state this function puts back the same way: the kept copy stays whole until
        # it is in place, and a copy of it cut short is a subset of its files.
        fs.delete(day)
        fs.move(kept, day)
    for copy in retired:
        if copy != kept:
            fs.delete(copy)


def read_table(
    spark: SparkSession, fs: LakeFileSystem, lake: Lake, spec: TableSpec, since: date | None = None
) -> DataFrame:
    """A model's table (columns of the spec, then `start_date`), only the days from `since` when given."""
    return read_table_if_any(spark, fs, lake, spec, since) or spark.createDataFrame([], spec.table_schema)


def read_table_if_any(
    spark: SparkSession, fs: LakeFileSystem, lake: Lake, spec: TableSpec, since: date | None = None
) -> DataFrame | None:
    """Like read_table, but None when there is no such partition, which tells without a Spark job."""
    days = {d: uri for d, uri in table_partitions(fs, lake, spec).items() if since is None or d >= _from_day(since)}
    if not days:
        return None
    base = fs.spark_path(lake.web_model(spec.model))
    reader = spark.read.schema(spec.table_schema).option("basePath", base)
    return reader.parquet(*(fs.spark_read_path(uri) for uri in sorted(days.values())))


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
        updated = spark.read.schema(spec.table_schema).parquet(fs.spark_read_path(new_path))
        if not count:
            return UpsertReport(0, None, [], [], observed, updated)
        floor = day_floor(first_day, lookback_days)  # type: ignore[arg-type]
        written_new, new_keys = updated, updated.select(spec.key)
    else:
        floor = day_floor(earliest, lookback_days)
        # The keys come from the unobserved rows: an observation may appear only once in a plan.
        written_new, updated = counted, rows.select(*spec.columns)
        new_keys = rows.select(spec.key) if replaced_keys is None else replaced_keys.select(spec.key)

    region_path = f"{staging}/{spec.model}/region"
    old = read_table(spark, fs, lake, spec, since=floor)
    region = old.join(new_keys, spec.key, "left_anti").unionByName(written_new)
    region.write.mode("overwrite").partitionBy(PARTITION).parquet(fs.spark_path(region_path))
    if earliest is not None:
        count, first_day, observed = _observed(observation, spec)
        if count and first_day < _from_day(earliest):  # type: ignore[operator]
            raise ValueError(
                f"new {spec.model} rows start on {first_day}, before the promised {earliest}; nothing was published"
            )
        if not count and replaced_keys is None:
            return UpsertReport(0, None, [], [], observed, updated)

    written, removed = publish(fs, lake, spec, region_path, floor)
    return UpsertReport(count, floor, written, removed, observed, updated)


def publish(fs: LakeFileSystem, lake: Lake, spec: TableSpec, region: str, floor: date) -> tuple[list[str], list[str]]:
    """Put each day folder staged in `region` in place of the table's, then remove the table's other days
    from `floor` on; return the days written and the days removed (module doc)."""
    staged: dict[str, list[str]] = {}
    for file in data_files(region, fs.list_files(region)):
        folder, _, name = path_below(region, file).partition("/")
        if (match := _PARTITION_FOLDER.fullmatch(folder)) and name:
            staged.setdefault(match.group(1), []).append(name)
    table = lake.web_model(spec.model)
    removed = sorted(d for d in table_partitions(fs, lake, spec) if d >= _from_day(floor) and d not in staged)
    for day, names in sorted(staged.items()):
        fs.write_text(f"{region}/{PARTITION}={day}/{FILE_LIST}", json.dumps(sorted(names)))
        fs.replace_tree(f"{region}/{PARTITION}={day}", f"{table}/{PARTITION}={day}")
    for day in removed:
        fs.delete(f"{table}/{PARTITION}={day}")
    return sorted(staged), removed


def _observed(observation: Observation, spec: TableSpec) -> tuple[int, str | None, dict[str, object]]:
    observed = dict(observation.get)
    count, no_start, first_day = int(observed.pop("_rows")), int(observed.pop("_no_start")), observed.pop("_first_day")
    if no_start:
        raise ValueError(f"{no_start} new {spec.model} rows have no {spec.start}; nothing was published")
    return count, first_day, observed  # type: ignore[return-value]
