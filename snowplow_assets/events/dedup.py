"""Deduplication of enriched events, in-batch and cross-batch: what is a duplicate, which copy survives,
and how a synthetic duplicate gets its new id (FORMATS.md §5).

All decisions are made on narrow *dedup keys*, one row per good line of the batch:

    row_id            position of the line in the batch read (stable for one read of one file list)
    event_id          the event's id as enriched
    fingerprint       event_fingerprint; null when enrichment left it empty
    etl_tstamp        when enrichment processed the event
    line_hash         xxhash64 of the raw line, a content tie-break that does not depend on file order

Only events whose id occurs more than once in the batch can be affected, so the keys are first reduced to
those *candidates* with one aggregation of the ids' hashes (shared_id_candidates); the ordering work (a
window) then runs on the rare candidates, never on the whole batch.

Natural duplicates share event_id and fingerprint. The copy with the earliest etl_tstamp survives; ties go
to the smaller line_hash, then the smaller row_id. Two identical lines have the same hash, so whichever
survives the output is the same. An empty fingerprint never matches anything: such an event is unique.

Synthetic duplicates are the events that still share an id after natural deduplication. Every one of them
(including the first) is renamed: its new id is a name-based UUID (version 5) of the batch's run folder, the
original id, the fingerprint, the etl_tstamp, the line hash and an ordinal among otherwise identical keys
(`synthetic_event_id`, the one place that derives it). The id is a pure function of the batch and its data,
so Spark recomputing a partition, or a rerun of the batch, gives the same id, and atomic events and entities
can never disagree about it. The event also gains a `duplicate` context naming its original id (see shred.py).

The run folder is in the name because the same line can reach several batches: at-least-once delivery with
the fingerprint enrichment off lands identical lines, which are never natural duplicates, in two run
folders. Named from the event alone, the copies renamed in each batch (in-batch or cross-batch) would get
the same new id, and one id would be loaded twice. A run folder is a batch's identity (it also owns the
batch's event manifest entries), unique among batches and the same on a rerun; within a batch the rest of
the name already tells every renamed event apart. So renamed ids are unique across batches by construction,
and a renamed id is not claimed in the event manifest: only an enriched line carrying that very version-5
id could ever match it, and a claim would cost a manifest write per rename for nothing.

Cross-batch deduplication asks the event manifest (snowplow_assets/manifest/, which says which batch owns
a key and why reruns are safe) about every event kept by in-batch natural deduplication, and folds its
answers into the same decisions (`cross_batch_decisions`). For such an event, the first rule that applies:

1. the manifest could not check its pair or its id: `manifest_error`, written as a loader_runtime_error
   bad row, so it is neither dropped nor loaded unchecked;
2. another batch holds its (event_id, fingerprint) pair: a *cross-batch natural duplicate*, dropped;
3. it is an in-batch synthetic duplicate: renamed as decided in-batch;
4. another batch holds its event_id (recorded it with another fingerprint, or without one): a
   *cross-batch synthetic duplicate*, renamed exactly like an in-batch one, by the same uuid5 scheme
   (this batch's run folder included) and with the same `duplicate` context. Its id is unique in the batch
   (or rule 3 would apply), so its ordinal is always 0. With both renames on, every event_id in the output
   is unique across batches.

An event with an empty fingerprint is never a natural duplicate across batches either; it can still be
a cross-batch synthetic duplicate.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from snowplow_assets.lake import validate_run_folder
from snowplow_assets.manifest.base import ERROR, HELD, ID_CLAIM, PAIR

# Fixed forever: changing it would change every renamed event id.
SYNTHETIC_ID_NAMESPACE = uuid.UUID("6d1f2c1e-4b1a-5c8e-9f3d-5e0a7b2c9d41")

NATURAL_DUPLICATE = "natural_duplicate"
SYNTHETIC_RENAME = "synthetic_rename"
CROSS_BATCH_DUPLICATE = "cross_batch_duplicate"
CROSS_BATCH_RENAME = "cross_batch_rename"
MANIFEST_ERROR = "manifest_error"
IGLU_ERROR = "iglu_error"  # decided before deduplication (shred_batch.py), which such events take no part in

# What each action does to its line's output: leave it out, give its event a new id, or make it a bad row.
DROP_ACTIONS = (NATURAL_DUPLICATE, CROSS_BATCH_DUPLICATE)
RENAME_ACTIONS = (SYNTHETIC_RENAME, CROSS_BATCH_RENAME)
ERROR_ACTIONS = (MANIFEST_ERROR, IGLU_ERROR)

# `failure` says why the line is an error: for a `manifest_error` line why the manifest could not check it,
# for an `iglu_error` line the JSON array of its unresolved schemas' failures; null for every other action.
DECISION_COLUMNS = ("row_id", "action", "event_id", "new_event_id", "failure")


def _no_value() -> Column:
    return F.lit(None).cast("string")


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
    """The keys whose event_id may occur more than once: every line deduplication can touch, and a few it
    cannot.

    The ids are counted by a 64-bit hash of each, not by the 36-character id, so the aggregation shuffles
    8 bytes a line. The hashes seen more than once are few (a batch's duplicates are), so they are broadcast
    and pick their keys where they lie: the keys themselves are never shuffled. A collision of two ids'
    hashes only adds candidates whose id is unique, which the windows of in_batch_decisions, partitioned by
    the id itself, leave alone. The broadcast holds about 16 bytes per shared id: a hundred megabytes for
    five million events that have copies in one batch.
    """
    shared = keys.groupBy(event_id_hash().alias("_id_hash")).count().where(F.col("count") > 1).select("_id_hash")
    return keys.join(F.broadcast(shared), event_id_hash() == shared["_id_hash"], "left_semi")


def event_id_hash() -> Column:
    """What shared_id_candidates counts ids by: equal ids hash alike, and unequal ones almost never do."""
    return F.xxhash64("event_id")


def in_batch_decisions(keys: DataFrame, dedup: InBatchDedup, run: str) -> DataFrame:
    """One row per affected line: `natural_duplicate` (drop it) or `synthetic_rename` (give it new_event_id).

    `run` is the batch's run folder, part of every new id (synthetic_event_id).
    """
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
        "row_id",
        F.lit(NATURAL_DUPLICATE).alias("action"),
        "event_id",
        _no_value().alias("new_event_id"),
        _no_value().alias("failure"),
    )
    if not dedup.synthetic:
        return natural

    survivors = ranked.where(F.col("_copy") == 1).drop("_copy")
    still_shared = Window.partitionBy("event_id")
    renamed = (
        survivors.withColumn("_sharing", F.count(F.lit(1)).over(still_shared))
        .where(F.col("_sharing") > 1)
        .select(
            "row_id",
            F.lit(SYNTHETIC_RENAME).alias("action"),
            "event_id",
            synthetic_event_id(run).alias("new_event_id"),
            _no_value().alias("failure"),
        )
    )
    return natural.unionByName(renamed)


def cross_batch_decisions(
    keys: DataFrame, in_batch: DataFrame, findings: DataFrame, synthetic: bool, run: str
) -> DataFrame:
    """The in-batch decisions with the event manifest's findings folded in (see the module docstring).

    `run` is the batch's run folder, as given to in_batch_decisions.

    `findings` are the manifest statuses that are not simply this batch's (manifest/base.py STATUS_SCHEMA):
    few rows, joined by broadcast to the keys. The lines they touch and the in-batch decisions are both
    small, and one full outer join puts them side by side.
    """
    pairs = findings.where((F.col("kind") == PAIR) & F.col("fingerprint").isNotNull()).select(
        "event_id", "fingerprint", F.col("status").alias("_pair"), F.col("error").alias("_pair_error")
    )
    ids = findings.where(F.col("kind") == ID_CLAIM).select(
        "event_id", F.col("status").alias("_id"), F.col("error").alias("_id_error")
    )
    touched = (
        keys.join(F.broadcast(pairs), ["event_id", "fingerprint"], "left")
        .join(F.broadcast(ids), "event_id", "left")
        .where(F.col("_pair").isNotNull() | F.col("_id").isNotNull())
        .withColumnRenamed("event_id", "_key_event_id")
    )
    both = in_batch.join(touched, "row_id", "full_outer")
    in_batch_action, error = F.col("action"), (F.col("_pair") == ERROR) | (F.col("_id") == ERROR)
    action = (
        F.when(in_batch_action == NATURAL_DUPLICATE, in_batch_action)
        .when(error, F.lit(MANIFEST_ERROR))
        .when(F.col("_pair") == HELD, F.lit(CROSS_BATCH_DUPLICATE))
        .when(in_batch_action.isNotNull(), in_batch_action)
        .when((F.col("_id") == HELD) & F.lit(synthetic), F.lit(CROSS_BATCH_RENAME))
    )
    # A cross-batch rename's id is unique in the batch (else it would be renamed in-batch): ordinal 0.
    cross_batch_id = synthetic_event_id(run, event_id="_key_event_id", ordinal=F.lit(0))
    return (
        both.withColumn("_action", action)
        .where(F.col("_action").isNotNull())
        .select(
            "row_id",
            F.col("_action").alias("action"),
            F.coalesce("event_id", "_key_event_id").alias("event_id"),
            F.when(F.col("_action") == SYNTHETIC_RENAME, F.col("new_event_id"))
            .when(F.col("_action") == CROSS_BATCH_RENAME, cross_batch_id)
            .alias("new_event_id"),
            F.when(F.col("_action") == MANIFEST_ERROR, F.coalesce("_pair_error", "_id_error")).alias("failure"),
        )
    )


def synthetic_event_id(
    run: str,
    event_id: str = "event_id",
    fingerprint: str = "fingerprint",
    etl_tstamp: str = "etl_tstamp",
    line_hash: str = "line_hash",
    row_id: str = "row_id",
    ordinal: Column | None = None,
) -> Column:
    """The deterministic new id of a synthetic duplicate of batch `run` (its run folder), as a column over
    dedup keys: uuid5 of `run|event_id|fingerprint|etl_tstamp|line_hash|ordinal`.

    `ordinal` numbers otherwise identical keys; a window computes it unless the caller knows it. The run
    keeps apart the ids of one line renamed in several batches (see the module docstring); it is validated
    here because a run folder name holds no `|`, so it cannot run into the original id.
    """
    validate_run_folder(run)
    if ordinal is None:
        identical = Window.partitionBy(event_id, fingerprint, etl_tstamp, line_hash).orderBy(row_id)
        ordinal = F.row_number().over(identical) - 1
    name = F.concat_ws(
        "|",
        F.lit(run),
        F.col(event_id),
        F.coalesce(F.col(fingerprint), F.lit("")),
        F.coalesce(F.date_format(etl_tstamp, "yyyy-MM-dd HH:mm:ss.SSSSSS"), F.lit("")),
        F.col(line_hash).cast("string"),
        ordinal.cast("string"),
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
        [], "row_id BIGINT, action STRING, event_id STRING, new_event_id STRING, failure STRING"
    )
