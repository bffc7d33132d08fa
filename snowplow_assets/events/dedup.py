"""In-batch deduplication of enriched events: what is a duplicate, which copy survives, and how a
synthetic duplicate gets its new id (FORMATS.md §5).

All decisions are made on narrow *dedup keys*, one row per good line of the batch:

    row_id            position of the line in the batch read (stable for one read of one file list)
    event_id          the event's id as enriched
    fingerprint       event_fingerprint; null when enrichment left it empty
    etl_tstamp        when enrichment processed the event
    line_hash         xxhash64 of the raw line, a content tie-break that does not depend on file order

Only events whose id occurs more than once in the batch can be affected, so the keys are first reduced to
those *candidates* with one hash aggregation; the ordering work (a window) then runs on the rare
candidates, never on the whole batch.

Natural duplicates share event_id and fingerprint. The copy with the earliest etl_tstamp survives; ties go
to the smaller line_hash, then the smaller row_id. Two identical lines have the same hash, so whichever
survives the output is the same. An empty fingerprint never matches anything: such an event is unique.

Synthetic duplicates are the events that still share an id after natural deduplication. Every one of them
(including the first) is renamed: its new id is a name-based UUID (version 5) of the original id, the
fingerprint, the etl_tstamp, the line hash and an ordinal among otherwise identical keys. The id is a pure
function of the data, so Spark recomputing a partition, or a rerun of the batch, gives the same id, and
atomic events and entities can never disagree about it. The event also gains a `duplicate` context
naming its original id (see shred.py).
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

# Fixed forever: changing it would change every renamed event id.
SYNTHETIC_ID_NAMESPACE = uuid.UUID("6d1f2c1e-4b1a-5c8e-9f3d-5e0a7b2c9d41")

NATURAL_DUPLICATE = "natural_duplicate"
SYNTHETIC_RENAME = "synthetic_rename"

DECISION_COLUMNS = ("row_id", "action", "event_id", "new_event_id")


@dataclass(frozen=True)
class InBatchDedup:
    natural: bool = True
    synthetic: bool = True

    def __post_init__(self) -> None:
        if self.synthetic and not self.natural:
            raise ValueError(
                "synthetic deduplication needs natural deduplication: it renames the events that still "
                "share an id after natural duplicates are removed"
            )


def dedup_keys(events: DataFrame, *extra: str | Column) -> DataFrame:
    """The narrow keys of parsed good events (see the module docstring), plus any `extra` columns."""
    return events.select(
        "row_id",
        "event_id",
        F.col("event_fingerprint").alias("fingerprint"),
        "etl_tstamp",
        F.xxhash64("line").alias("line_hash"),
        *extra,
    )


def shared_id_candidates(keys: DataFrame) -> DataFrame:
    """The keys whose event_id occurs more than once: the only rows deduplication can touch."""
    shared = keys.groupBy("event_id").count().where(F.col("count") > 1).select("event_id")
    return keys.join(shared, "event_id", "left_semi")


def in_batch_decisions(keys: DataFrame, dedup: InBatchDedup) -> DataFrame:
    """One row per affected line: `natural_duplicate` (drop it) or `synthetic_rename` (give it new_event_id)."""
    if not dedup.natural:
        return _no_decisions(keys)
    candidates = shared_id_candidates(keys)

    by_copy = Window.partitionBy("event_id", "fingerprint").orderBy(
        F.col("etl_tstamp").asc_nulls_last(), "line_hash", "row_id"
    )
    # A null fingerprint must not group with other nulls, so it always ranks first in a group of its own.
    ranked = candidates.withColumn(
        "_copy", F.when(F.col("fingerprint").isNull(), F.lit(1)).otherwise(F.row_number().over(by_copy))
    )
    natural = ranked.where(F.col("_copy") > 1).select(
        "row_id", F.lit(NATURAL_DUPLICATE).alias("action"), "event_id", F.lit(None).cast("string").alias("new_event_id")
    )
    if not dedup.synthetic:
        return natural

    survivors = ranked.where(F.col("_copy") == 1).drop("_copy")
    still_shared = Window.partitionBy("event_id")
    renamed = (
        survivors.withColumn("_sharing", F.count(F.lit(1)).over(still_shared))
        .where(F.col("_sharing") > 1)
        .select("row_id", F.lit(SYNTHETIC_RENAME).alias("action"), "event_id", synthetic_event_id().alias("new_event_id"))
    )
    return natural.unionByName(renamed)


def synthetic_event_id(
    event_id: str = "event_id",
    fingerprint: str = "fingerprint",
    etl_tstamp: str = "etl_tstamp",
    line_hash: str = "line_hash",
    row_id: str = "row_id",
) -> Column:
    """The deterministic new id of a synthetic duplicate, as a column over dedup keys."""
    identical = Window.partitionBy(event_id, fingerprint, etl_tstamp, line_hash).orderBy(row_id)
    name = F.concat_ws(
        "|",
        F.col(event_id),
        F.coalesce(F.col(fingerprint), F.lit("")),
        F.coalesce(F.date_format(etl_tstamp, "yyyy-MM-dd HH:mm:ss.SSSSSS"), F.lit("")),
        F.col(line_hash).cast("string"),
        (F.row_number().over(identical) - 1).cast("string"),
    )
    return uuid5(name)


def uuid5(name: Column, namespace: uuid.UUID = SYNTHETIC_ID_NAMESPACE) -> Column:
    """RFC 4122 name-based UUID (SHA-1), equal to Python's `uuid.uuid5(namespace, name)`."""
    digest = F.sha1(F.concat(F.unhex(F.lit(namespace.hex)), F.encode(name, "UTF-8")))
    variant = F.lower(F.hex(F.conv(F.substring(digest, 17, 1), 16, 10).cast("int").bitwiseAND(3).bitwiseOR(8)))
    return F.concat(
        F.substring(digest, 1, 8), F.lit("-"),
        F.substring(digest, 9, 4), F.lit("-5"),
        F.substring(digest, 14, 3), F.lit("-"),
        variant, F.substring(digest, 18, 3), F.lit("-"),
        F.substring(digest, 21, 12),
    )  # fmt: skip


def _no_decisions(keys: DataFrame) -> DataFrame:
    return keys.sparkSession.createDataFrame(
        [], "row_id BIGINT, action STRING, event_id STRING, new_event_id STRING"
    )
