"""The keys each run of a batch gave an event manifest whose entries outlive a run (DynamoDB), kept in the lake
until the batch's published output accounts for them and the rest are forgotten.

Why: such a manifest is written key by key during the check-and-set, before the output is published, and a
batch run again forgets the keys its earlier runs recorded and it no longer does (`EventManifest.forget`).
Those keys used to be known only from the batch's published output. Two kinds of attempt left keys that no
output named, whose items then dropped a later batch's copy of an event that no batch loaded (until
2026-11-28):
- one killed or failed after publishing and before its forget finished: the next run read its own new
  output as the earlier one, and found nothing to forget;
- one that failed after its check-and-set and before publishing: its keys were in no output at all.

So each run writes into a folder of its own under `Lake.manifest_claims` the keys it is about to record,
before its check-and-set, and into another the keys it means to forget, before it publishes; the next run
forgets what any complete folder there names and it does not record. The journal is removed once a run has
published and forgotten everything it had to. A folder whose write did not complete (no `_SUCCESS`) is
ignored: its run did not go on to write or drop any of its keys.
"""

from __future__ import annotations

import uuid

from pyspark.sql import DataFrame, SparkSession

from snowplow_assets.lake import Lake, join_uri
from snowplow_assets.run_folders import SUCCESS_MARKER
from snowplow_assets.storage import LakeFileSystem

KEY_SCHEMA = "event_id STRING, fingerprint STRING"


def earlier_claims(spark: SparkSession, fs: LakeFileSystem, lake: Lake, run: str) -> DataFrame | None:
    """The keys the earlier runs of batch `run` wrote in complete journal folders; None if there are none."""
    journal = lake.manifest_claims(run)
    folders = [
        entry.uri
        for entry in (fs.list_dir(journal) if fs.exists(journal) else [])
        if entry.is_dir and fs.exists(join_uri(entry.uri, SUCCESS_MARKER))
    ]
    if not folders:
        return None
    return spark.read.schema(KEY_SCHEMA).parquet(*(fs.spark_read_path(f) for f in folders))


def write_claims(spark: SparkSession, fs: LakeFileSystem, lake: Lake, run: str, keys: DataFrame) -> DataFrame:
    """Write `keys` (`event_id, fingerprint`), keys batch `run` may own once this run goes on, into a journal
    folder of their own, and read them back: the keys computed once, for the run's own use."""
    folder = join_uri(lake.manifest_claims(run), uuid.uuid4().hex[:16])
    keys.select("event_id", "fingerprint").write.parquet(fs.spark_path(folder))
    return spark.read.schema(KEY_SCHEMA).parquet(fs.spark_read_path(folder))


def clear_claims(fs: LakeFileSystem, lake: Lake, run: str) -> None:
    """Remove the journal of batch `run`, once its published output accounts for every key it names."""
    journal = lake.manifest_claims(run)
    if fs.exists(journal):
        fs.delete(journal)
