"""Back-filling the event manifest from shredded output, so that turning cross-batch dedup on does not start cold.

The populator reads the published output of every run folder from a date onwards (the date of the run
folder's name; only folders with `shredding_complete.json`) and records what those batches loaded, as if
they had been processed with the manifest (base.py `populate` and `owners`):

- a pair for every atomic event with a fingerprint, under its *original* event_id: a renamed synthetic
  duplicate is mapped back through its `duplicate` context, because a later copy of it carries the
  original id;
- with cross-batch synthetic dedup on, an id claim for every original event_id, owned by the batch that
  loaded the event under that id;
- each batch's etlTime is the earliest etl_tstamp of its output (the run folder's time if it has none).
  The shred's was the earliest of every good line it read, the copies it dropped and the events the
  manifest could not check included; the output does not record it, so a populated etlTime, and the
  entries' ttl, can be later than the shred's (README, Back-filling).

So populating from the output of batches that were processed with the manifest records every key their
check-and-sets recorded, for the batch that recorded it; a batch whose entries have expired records
nothing. Entries held by a batch that is not being populated stay with it, so populating is safe on a
manifest in use and can be repeated; the batches populated are rewritten as a whole, which is also how a
lake manifest that lost a batch's entry folder is repaired.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import date

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from snowplow_assets.events.enriched_schema import ATOMIC_FIELDS
from snowplow_assets.events.output_folders import ATOMIC_EVENTS, SHREDDED_TYPES
from snowplow_assets.events.shred import DUPLICATE_SCHEMA
from snowplow_assets.lake import RUN_FOLDER, Lake, run_folder_time
from snowplow_assets.manifest.base import Batch, EventManifest, batch_etl_time
from snowplow_assets.storage import LakeFileSystem

_COLUMN = {f.name: i for i, f in enumerate(ATOMIC_FIELDS)}
_DUPLICATE_TYPE = "vendor=com.snowplowanalytics.snowplow/name=duplicate/format=jsonschema/version=1-0-0"
_RUN_IN_PATH = r"/(run=\d{4}-\d{2}-\d{2}-\d{2}-\d{2}-\d{2})/"
_KEYS_SCHEMA = "run STRING, event_id STRING, fingerprint STRING, etl_tstamp TIMESTAMP, renamed BOOLEAN"

assert DUPLICATE_SCHEMA == "iglu:com.snowplowanalytics.snowplow/duplicate/jsonschema/1-0-0"


@dataclass(frozen=True)
class PopulateReport:
    batches: list[Batch]  # the batches populated, oldest run folder first
    counts: dict[str, int]

    @property
    def runs(self) -> list[str]:
        return [batch.run for batch in self.batches]


def shredded_runs_since(fs: LakeFileSystem, lake: Lake, since: date) -> list[str]:
    """Run folders with complete shredded output whose name's date is `since` or later, oldest first. A name
    that is no instant (`run=2026-02-30-…`) has no date to compare, and is always taken."""
    return [
        entry.name
        for entry in fs.list_dir(lake.uri("shredded", "good"))
        if entry.is_dir
        and RUN_FOLDER.fullmatch(entry.name)
        and ((cut := run_folder_time(entry.name)) is None or cut.date() >= since)
        and fs.exists(lake.shredding_complete(entry.name))
    ]


def shredded_event_keys(spark: SparkSession, fs: LakeFileSystem, lake: Lake, runs: list[str]) -> DataFrame:
    """`run, event_id, fingerprint, etl_tstamp, renamed` of every atomic event of the runs' output.

    `event_id` is the original id: a renamed event's comes from its duplicate context.
    """
    folders = [fs.spark_read_path(f) for run in runs if fs.exists(f := f"{lake.shredded_good(run)}/{ATOMIC_EVENTS}")]
    if not folders:
        return spark.createDataFrame([], _KEYS_SCHEMA)
    fields = F.split("value", "\t", -1)
    events = spark.read.text(folders).select(
        F.regexp_extract("_metadata.file_path", _RUN_IN_PATH, 1).alias("run"),
        fields[_COLUMN["event_id"]].alias("event_id"),
        F.nullif(fields[_COLUMN["event_fingerprint"]], F.lit("")).alias("fingerprint"),
        F.nullif(fields[_COLUMN["etl_tstamp"]], F.lit("")).try_cast("timestamp").alias("etl_tstamp"),
    )
    duplicates = [f"{lake.shredded_good(run)}/{SHREDDED_TYPES}/{_DUPLICATE_TYPE}" for run in runs]
    duplicates = [fs.spark_read_path(d) for d in duplicates if fs.exists(d)]
    if not duplicates:
        return events.withColumn("renamed", F.lit(False))
    originals = spark.read.text(duplicates).select(
        F.regexp_extract("_metadata.file_path", _RUN_IN_PATH, 1).alias("run"),
        F.get_json_object("value", "$.hierarchy.rootId").alias("event_id"),
        F.get_json_object("value", "$.data.originalEventId").alias("original_event_id"),
    )
    return events.join(originals, ["run", "event_id"], "left").select(
        "run",
        F.coalesce("original_event_id", "event_id").alias("event_id"),
        "fingerprint",
        "etl_tstamp",
        F.col("original_event_id").isNotNull().alias("renamed"),
    )


def populate_event_manifest(
    spark_session: Callable[[], SparkSession],
    fs: LakeFileSystem,
    lake: Lake,
    manifest: EventManifest,
    since: date,
    claim_ids: bool,
) -> PopulateReport:
    """Back-fill `manifest` from the run folders shredded since `since`.

    `spark_session` is called only once the manifest is known to be usable and there is output to read,
    so a missing table or a lost entry folder is reported without starting Spark.
    """
    runs = shredded_runs_since(fs, lake, since)
    manifest.verify(rewriting=runs)
    if not runs:
        return PopulateReport([], {})
    return record_published_output(spark_session(), fs, lake, manifest, runs, claim_ids)


def record_published_output(
    spark: SparkSession, fs: LakeFileSystem, lake: Lake, manifest: EventManifest, runs: list[str], claim_ids: bool
) -> PopulateReport:
    """Record in `manifest` what the complete published output of each of `runs` loads, in place of the batch's
    entries; a run without one records nothing (skipped_batch.py). The caller has verified the manifest."""
    keys = shredded_event_keys(spark, fs, lake, [run for run in runs if fs.exists(lake.shredding_complete(run))])
    by_run = keys.groupBy("run").agg(F.unix_seconds(F.min("etl_tstamp")).alias("earliest")).collect()
    earliest = {r["run"]: r["earliest"] for r in by_run}
    batches = [Batch(run, batch_etl_time(earliest.get(run), run)) for run in runs]
    etl_times = spark.createDataFrame([(b.run, b.etl_time) for b in batches], "run STRING, etl_time BIGINT")
    entries = keys.join(F.broadcast(etl_times), "run").select("run", "etl_time", "event_id", "fingerprint", "renamed")
    work = lake.event_manifest_work(uuid.uuid4().hex[:16])
    try:
        counts = manifest.populate(batches, entries, claim_ids, work)
    finally:
        fs.delete(work)
    return PopulateReport(batches, counts)
