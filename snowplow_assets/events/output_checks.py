"""Checks of a published shred output, read back from the lake rather than taken from the job's own counts.

Each check compares what is on disk with what the job reported, so a bug anywhere between the decision
and the written files (a lost rename, a misrouted entity, an uncounted line) makes one of them fail.
"""

from __future__ import annotations

from dataclasses import dataclass

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from snowplow_assets.check_outcome import CheckOutcome
from snowplow_assets.events.dedup import InBatchDedup
from snowplow_assets.events.enriched_schema import ATOMIC_FIELDS
from snowplow_assets.events.output_folders import ATOMIC_EVENTS, SHREDDED_TYPES
from snowplow_assets.events.shred_batch import ShredReport
from snowplow_assets.storage import LakeFileSystem

_EVENT_ID_COLUMN = next(i for i, f in enumerate(ATOMIC_FIELDS) if f.name == "event_id")
_FINGERPRINT_COLUMN = next(i for i, f in enumerate(ATOMIC_FIELDS) if f.name == "event_fingerprint")


@dataclass(frozen=True)
class ShreddedOutputFacts:
    atomic_lines: int
    distinct_event_ids: int
    # Atomic events with a fingerprint, and their distinct (event_id, fingerprint) pairs: counted only when
    # synthetic deduplication is off, the one case unique_event_ids reads them (a second distinct count costs
    # Spark a copy of every row).
    fingerprinted_lines: int | None
    distinct_fingerprinted_pairs: int | None
    bad_lines: int
    entities: int
    orphan_entities: int
    duplicate_contexts: int
    events_with_duplicate_context: int
    duplicate_contexts_without_original: int  # naming no originalEventId, an empty one, or their own event's id


def _text(spark: SparkSession, fs: LakeFileSystem, uri: str) -> DataFrame:
    return spark.read.text(fs.spark_read_path(uri))


def inspect_shredded_output(spark: SparkSession, fs: LakeFileSystem, report: ShredReport) -> ShreddedOutputFacts:
    fields = F.split("value", "\t")
    atomic_keys = _text(spark, fs, f"{report.good_output}/{ATOMIC_EVENTS}").select(
        fields[_EVENT_ID_COLUMN].alias("event_id"), F.nullif(fields[_FINGERPRINT_COLUMN], F.lit("")).alias("fp")
    )
    pairs = [] if report.dedup.synthetic else [
        F.count("fp").alias("fingerprinted"),
        F.count_distinct("event_id", "fp").alias("pairs"),  # rows with a null fp do not count
    ]  # fmt: skip
    atomic = (
        atomic_keys.agg(F.count(F.lit(1)).alias("lines"), F.count_distinct("event_id").alias("ids"), *pairs)
        .first()
        .asDict()
    )
    atomic_ids = atomic_keys.select("event_id")
    bad_lines = _text(spark, fs, report.bad_output).count()

    types_uri = f"{report.good_output}/{SHREDDED_TYPES}"
    entities = {"entities": 0, "orphans": 0, "duplicates": 0, "duplicated_events": 0, "without_original": 0}
    if fs.exists(types_uri) and any(True for _ in fs.list_files(types_uri)):
        lines = _text(spark, fs, types_uri).select(
            F.get_json_object("value", "$.hierarchy.rootId").alias("root_id"),
            F.get_json_object("value", "$.data.originalEventId").alias("original_event_id"),
            ((F.col("vendor") == "com.snowplowanalytics.snowplow") & (F.col("name") == "duplicate")).alias(
                "is_duplicate"
            ),
        )
        present = atomic_ids.distinct().withColumn("present", F.lit(True))
        row = (
            lines.join(present, lines["root_id"] == present["event_id"], "left")
            .agg(
                F.count(F.lit(1)).alias("entities"),
                F.count_if(F.col("present").isNull()).alias("orphans"),
                F.count_if("is_duplicate").alias("duplicates"),
                F.count_distinct(F.when(F.col("is_duplicate"), F.col("root_id"))).alias("duplicated_events"),
                # A null or empty originalEventId names no original, as one equal to the event's own id does;
                # `root_id == original_event_id` alone is null, not true, for a missing one.
                F.count_if(
                    F.col("is_duplicate")
                    & (
                        (F.coalesce(F.col("original_event_id"), F.lit("")) == "")
                        | F.col("root_id").eqNullSafe(F.col("original_event_id"))
                    )
                ).alias("without_original"),
            )
            .first()
        )
        entities = row.asDict()
    return ShreddedOutputFacts(
        atomic_lines=atomic["lines"],
        distinct_event_ids=atomic["ids"],
        fingerprinted_lines=atomic.get("fingerprinted"),
        distinct_fingerprinted_pairs=atomic.get("pairs"),
        bad_lines=bad_lines,
        entities=entities["entities"],
        orphan_entities=entities["orphans"],
        duplicate_contexts=entities["duplicates"],
        events_with_duplicate_context=entities["duplicated_events"],
        duplicate_contexts_without_original=entities["without_original"],
    )


def unique_event_ids(facts: ShreddedOutputFacts, dedup: InBatchDedup) -> CheckOutcome:
    """Every event_id is unique, as far as the batch's deduplication makes it so. With synthetic deduplication
    off (SNOWPLOW_DEDUP_SYNTHETIC=false, as Snowplow's shredder allows) events of one id and other fingerprints
    keep it, so only natural duplicates must be gone: no id and fingerprint repeats. With natural deduplication
    off too, ids repeat as configured, and the check reports them without failing. Until 2026-11-28 such
    settings failed this blocking check on every batch with a shared id, and withdrew its marker."""
    repeated = facts.atomic_lines - facts.distinct_event_ids
    metadata = {"atomic_events": facts.atomic_lines, "distinct_event_ids": facts.distinct_event_ids}
    if dedup.synthetic:
        described = (
            f"{repeated} atomic events share an event_id with another" if repeated else "every event_id is unique"
        )
        return CheckOutcome("unique_event_ids", repeated == 0, described, metadata)
    if facts.fingerprinted_lines is None or facts.distinct_fingerprinted_pairs is None:
        raise ValueError("the output's facts were gathered for synthetic deduplication on: no pairs counted")
    repeated_pairs = facts.fingerprinted_lines - facts.distinct_fingerprinted_pairs
    metadata["repeated_id_and_fingerprint"] = repeated_pairs
    shared = f"{repeated} atomic events share an event_id with another, as synthetic deduplication is off"
    if not dedup.natural:
        return CheckOutcome("unique_event_ids", True, f"{shared} (and natural deduplication)", metadata)
    return CheckOutcome(
        "unique_event_ids",
        repeated_pairs == 0,
        f"{shared}; {repeated_pairs} repeat an event_id and fingerprint, which natural deduplication removes",
        metadata,
    )


def lines_accounted_for(facts: ShreddedOutputFacts, report: ShredReport) -> CheckOutcome:
    accounted = facts.atomic_lines + facts.bad_lines + report.removed
    return CheckOutcome(
        "lines_accounted_for",
        accounted == report.lines_read,
        f"{report.lines_read} lines read; on disk {facts.atomic_lines} good + {facts.bad_lines} bad, "
        f"plus {report.removed} duplicates removed = {accounted}",
        {
            "lines_read": report.lines_read,
            "good_on_disk": facts.atomic_lines,
            "bad_on_disk": facts.bad_lines,
            "duplicates_removed": report.removed,
        },
    )


def entities_have_events(facts: ShreddedOutputFacts) -> CheckOutcome:
    return CheckOutcome(
        "entities_have_events",
        facts.orphan_entities == 0,
        f"{facts.orphan_entities} of {facts.entities} entities have a rootId with no atomic event",
        {"entities": facts.entities, "orphan_entities": facts.orphan_entities},
    )


def renamed_events_have_duplicate_context(facts: ShreddedOutputFacts, report: ShredReport) -> CheckOutcome:
    """As many duplicate contexts as renamed events, one per event, each naming an original id other than its
    own event's. Until 2026-11-27 a context without originalEventId passed (its comparison was null, not
    true), and the metadata left out the contexts that failed it, so that a failure showed counts that agree."""
    passed = (
        facts.duplicate_contexts == report.renamed
        and facts.events_with_duplicate_context == report.renamed
        and facts.duplicate_contexts_without_original == 0
    )
    return CheckOutcome(
        "renamed_events_have_duplicate_context",
        passed,
        f"{report.renamed} events renamed; {facts.duplicate_contexts} duplicate contexts on "
        f"{facts.events_with_duplicate_context} events, {facts.duplicate_contexts_without_original} naming "
        "no original id or their own event's",
        {
            "renamed": report.renamed,
            "duplicate_contexts": facts.duplicate_contexts,
            "events_with_duplicate_context": facts.events_with_duplicate_context,
            "duplicate_contexts_without_original": facts.duplicate_contexts_without_original,
        },
    )


def check_shredded_output(spark: SparkSession, fs: LakeFileSystem, report: ShredReport) -> list[CheckOutcome]:
    facts = inspect_shredded_output(spark, fs, report)
    return [
        unique_event_ids(facts, report.dedup),
        lines_accounted_for(facts, report),
        entities_have_events(facts),
        renamed_events_have_duplicate_context(facts, report),
    ]
