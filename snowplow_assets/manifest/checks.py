"""Checking a published batch against the event manifest, read back from the output and the manifest.

The check re-derives the keys of every event in the batch's atomic-events (original ids, as the populator
does) and looks them up in the manifest, independently of the decisions the job took. It passes when:

- no pair of a kept event is held by a live entry of another batch (no cross-batch duplicate was loaded);
- every pair of a kept event is recorded for this batch (the next batch will see it);
- with cross-batch synthetic dedup, every event that kept its original id holds that id's claim, so no
  other batch can have loaded, or will load, an event under the same id.

A batch whose etlTime and run folder's time are both older than the TTL has entries that expire at once; it
is reported, not checked.

A second check, from the run's own counts, says whether the manifest checked every event in-batch dedup
kept (`every_kept_event_checked`).
"""

from __future__ import annotations

from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from snowplow_assets.check_outcome import CheckOutcome
from snowplow_assets.events.shred_batch import ShredReport
from snowplow_assets.lake import Lake
from snowplow_assets.manifest.base import EventManifest
from snowplow_assets.manifest.populate import shredded_event_keys
from snowplow_assets.storage import LakeFileSystem

CHECK_NAME = "kept_events_not_held_by_other_batches"
CHECKED_NAME = "kept_events_checked_by_the_event_manifest"


def check_batch_against_manifest(
    spark: SparkSession,
    fs: LakeFileSystem,
    lake: Lake,
    manifest: EventManifest,
    report: ShredReport,
    claim_ids: bool,
) -> CheckOutcome:
    if report.event_manifest is None:
        raise ValueError(f"{report.run} was shredded without an event manifest; there is nothing to check")
    batch, now = report.event_manifest.batch, manifest.now()
    if report.event_manifest.ttl <= now:
        return CheckOutcome(
            CHECK_NAME,
            True,
            f"{report.run} is older than the event manifest TTL: its entries expired when written; not checked",
            {"batch_etl_time": batch.etl_time},
        )
    keys = shredded_event_keys(spark, fs, lake, [report.run])
    # Output pairs and ids are unique: natural dedup and renames saw to it, so no distinct is needed.
    wanted = keys.where(F.col("fingerprint").isNotNull()).select("event_id", "fingerprint")
    if claim_ids:
        wanted = wanted.unionByName(
            keys.where(~F.col("renamed")).select("event_id", F.lit(None).cast("string").alias("fingerprint"))
        )
    found = manifest.lookup(wanted).select(
        "event_id",
        "fingerprint",
        F.lit(False).alias("wanted"),
        (F.col("run") == batch.run).alias("own"),
        ((F.col("run") != batch.run) & (F.col("ttl") > now)).alias("other"),
    )
    per_key = (
        wanted.select(
            "event_id",
            "fingerprint",
            F.lit(True).alias("wanted"),
            F.lit(False).alias("own"),
            F.lit(False).alias("other"),
        )
        .unionByName(found)
        .groupBy("event_id", "fingerprint")
        .agg(*(F.max(F.coalesce(name, F.lit(False))).alias(name) for name in ("wanted", "own", "other")))
        .where("wanted")
    )
    is_pair, held = F.col("fingerprint").isNotNull(), F.col("other")
    missing = ~F.col("own") & ~held
    row = per_key.agg(
        F.count_if(is_pair).alias("pairs"),
        F.count_if(~is_pair).alias("ids"),
        F.count_if(is_pair & held).alias("pairs_held_by_other_batches"),
        F.count_if(is_pair & missing).alias("pairs_not_recorded"),
        F.count_if(~is_pair & held).alias("ids_held_by_other_batches"),
        F.count_if(~is_pair & missing).alias("ids_not_claimed"),
    ).first()
    counts = {name: int(value or 0) for name, value in row.asDict().items()}  # type: ignore[union-attr]
    problems = {k: v for k, v in counts.items() if k not in ("pairs", "ids") and v}
    description = (
        f"{counts['pairs']} pairs and {counts['ids']} ids of kept events checked in {manifest.describe()}: "
        + (
            ", ".join(f"{v} {k.replace('_', ' ')}" for k, v in problems.items())
            if problems
            else "all held by this batch"
        )
    )
    return CheckOutcome(CHECK_NAME, not problems, description, counts)


def every_kept_event_checked(report: ShredReport) -> CheckOutcome:
    """Whether the manifest checked every event that in-batch dedup kept.

    An event whose key still failed after every retry (DynamoDB) is a loader_runtime_error bad row: neither
    loaded nor dropped, until a rerun of the folder once the manifest is healthy checks it. What was loaded
    is right, so this is a warning to act on rather than a blocking failure; a manifest that could check no
    key at all fails the run instead (dynamodb_event_manifest.py).
    """
    if report.event_manifest is None:
        raise ValueError(f"{report.run} was shredded without an event manifest; there is nothing to check")
    counts = report.event_manifest.counts
    metadata = {
        "events_not_checked": report.runtime_errors,
        "keys_failed": counts.get("errors", 0),
        "retries": counts.get("retries", 0),
    }
    if report.runtime_errors:
        description = (
            f"{report.runtime_errors} kept events could not be checked by {report.event_manifest.location} "
            f"({metadata['keys_failed']} keys failed after {metadata['retries']} retries in all): they are "
            f"loader_runtime_error bad rows in {report.bad_output}, whose `failure` says why; rerun the folder "
            "once the manifest is healthy to load them (and give web models past its window a full refresh)"
        )
    else:
        description = f"every kept event was checked by {report.event_manifest.location}"
    return CheckOutcome(CHECKED_NAME, not report.runtime_errors, description, metadata)
