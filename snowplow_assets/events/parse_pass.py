"""The parse pass of a shred: every line of a run folder parsed and rendered once, and staged as Parquet.

Parsing and rendering a line (131 fields, three JSON documents) is what the job costs, so it happens here
exactly once, before deduplication has decided anything. Per line the staging holds its narrow dedup keys
(dedup.py), whether it is good, and its output records (output_records.py): a bad row, or the event's
atomic-events line and its entity lines, each kept as the text before the event's id and the text after
it, because deduplication may still give the event another id. Lines, bad lines and the earliest
etl_tstamp are counted on the way (Spark observations, not extra jobs).

Lines in canonical form, nearly all of them, take the fast path (canonical.py); the rest are staged with
their text, then judged by the full parser's checks of the fields the fast path left pending
(parse.py's parse_failures) in a second, small job, which makes bad rows of the bad ones; any good ones
left are parsed in full in a third.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from contextlib import AbstractContextManager

from pyspark.sql import DataFrame, Observation, SparkSession
from pyspark.sql import functions as F

from snowplow_assets.events import dedup, shred
from snowplow_assets.events.canonical import fast_path_available, parse_canonical
from snowplow_assets.events.output_folders import FOLDER
from snowplow_assets.events.output_records import (
    ROOT_TSTAMP,
    event_records,
    parsing_error_records,
    render_entities,
)
from snowplow_assets.events.parse import parse_enriched, parse_failures
from snowplow_assets.events.sql import case, identifier
from snowplow_assets.spark import observed_counts
from snowplow_assets.storage import LakeFileSystem

log = logging.getLogger(__name__)


def parse_pass(
    spark: SparkSession,
    fs: LakeFileSystem,
    lines: DataFrame,
    path: str,
    timing_full_parse: Callable[[], AbstractContextManager[None]],
) -> tuple[DataFrame, dict[str, int], int | None]:
    """Stage every line of `lines` under `path`; return the staged lines, no longer pending, with the counts
    of lines and bad lines and the earliest etl_tstamp of the good ones, epoch seconds.

    The fast path's jobs run as they are; the full parser's, when there are lines left for it, each inside
    `timing_full_parse()`, so that a report can tell them apart.
    """
    canonical_path, judged_path, full_path = f"{path}/canonical", f"{path}/judged", f"{path}/full"
    if not fast_path_available(spark):
        log.warning(
            "the shredder's fast path is not in this Spark session (see snowplow_assets/jvm/): "
            "every line takes the full parser"
        )
        with timing_full_parse():
            counts, earliest = _parse_in_full(fs, lines, full_path)
        return spark.read.parquet(fs.spark_read_path(full_path)), counts, earliest
    observation = Observation("canonical_pass")
    lines_checked = parse_canonical(lines).observe(
        observation,
        F.count(F.lit(1)).alias("lines"),
        F.count_if(~F.col("canonical")).alias("pending"),
        F.unix_seconds(F.min("etl_tstamp")).alias("earliest_etl_time"),
        F.array_distinct(F.flatten(F.collect_set("pending_fields"))).alias("pending_fields"),
    )
    records = case(("canonical", event_records("atomic_head", "atomic_tail")))
    pending_line = "CASE WHEN NOT canonical THEN line END"
    _write_staged(fs, _staged(lines_checked, "canonical", records, pending_line), canonical_path)
    pending_fields = observation.get["pending_fields"] or []
    checked, checked_earliest = _counts_and_earliest(observation, "pending_fields")
    counts, earliest = {"lines": checked["lines"], "bad": 0}, [checked_earliest]
    staged_paths = [canonical_path]
    if checked["pending"]:
        with timing_full_parse():
            staged = spark.read.parquet(fs.spark_read_path(canonical_path))
            judged = _judge_pending(fs, staged, pending_fields, judged_path)
        _check_handed_on(checked["pending"], judged["lines"], "the checks of their pending fields")
        counts["bad"] += judged["bad"]
        staged_paths.append(judged_path)
        if judged["pending"]:
            with timing_full_parse():
                pending = _pending(spark.read.parquet(fs.spark_read_path(judged_path)))
                pending = pending.select("row_id", F.col("pending_line").alias("line"))
                full, full_earliest = _parse_in_full(fs, pending, full_path)
            _check_handed_on(judged["pending"], full["lines"], "the full parser")
            counts["bad"] += full["bad"]
            earliest.append(full_earliest)
            staged_paths.append(full_path)
    parsed = spark.read.parquet(*(fs.spark_read_path(p) for p in staged_paths)).where(F.col("pending_line").isNull())
    return parsed, counts, min((t for t in earliest if t is not None), default=None)


def _pending(staged: DataFrame) -> DataFrame:
    """The staged lines that a later job of the parse pass still has to parse, with the staged columns that
    such a line has a value in (the rest, its keys and records, are null). Only those columns are read:
    without column statistics, the staging's pages cannot be skipped, and its records are most of its bytes."""
    return staged.where(F.col("pending_line").isNotNull()).select(*_PENDING_COLUMNS)


_PENDING_COLUMNS = ("row_id", "line_hash", "good", "pending_line")


def _check_handed_on(left: int, read: int, to: str) -> None:
    if read != left:
        raise RuntimeError(f"{left} lines were left to {to}, which read {read}")


def _judge_pending(fs: LakeFileSystem, staged: DataFrame, fields: list[int], path: str) -> dict[str, int]:
    """Stage the lines the fast path left in `staged` again, each bad one now with its bad row, judged by the
    full parser's checks of `fields`, every field the fast path left pending on any of them (parse_failures:
    the same failure the full parser finds, with a plan a fraction of its size). The others stay pending."""
    observation = Observation("judged")
    judged = parse_failures(_pending(staged), fields, line_column="pending_line").observe(
        observation,
        F.count(F.lit(1)).alias("lines"),
        F.count_if(F.col("failure").isNotNull()).alias("bad"),
        F.count_if(F.col("failure").isNull()).alias("pending"),
    )
    judgement = {
        **{c: identifier(c) for c in _PENDING_COLUMNS},
        "records": f"CASE WHEN failure IS NOT NULL THEN {parsing_error_records('pending_line')} END",
        "pending_line": "CASE WHEN failure IS NULL THEN pending_line END",
    }
    # The staged columns in their order; the keys and entity types stay null, as on any line that is not good.
    null = "CAST(NULL AS {})"
    columns = (
        f"{judgement.get(f.name, null.format(f.dataType.simpleString()))} AS {identifier(f.name)}"
        for f in staged.schema
    )
    _write_staged(fs, judged.selectExpr(*columns), path)
    return observed_counts(observation)


def _parse_in_full(fs: LakeFileSystem, lines: DataFrame, path: str) -> tuple[dict[str, int], int | None]:
    """The parse pass of the lines the fast path left: the full parser (parse.py) and shred.py's rendering."""
    observation = Observation("full_parse")
    parsed = parse_enriched(lines).observe(
        observation,
        F.count(F.lit(1)).alias("lines"),
        F.count_if(F.col("failure").isNotNull()).alias("bad"),
        F.unix_seconds(F.min(F.when(F.col("failure").isNull(), F.col("etl_tstamp")))).alias("earliest_etl_time"),
    )
    parsed = render_entities(parsed.selectExpr("*", f"{ROOT_TSTAMP} AS root_tstamp"), "failure IS NULL")
    records = case(
        ("failure IS NOT NULL", parsing_error_records("line")), otherwise=event_records(*shred.atomic_events_parts())
    )
    _write_staged(fs, _staged(parsed, "failure IS NULL", records, pending_line="NULL"), path)
    return _counts_and_earliest(observation)


def _staged(parsed: DataFrame, good: str, records: str, pending_line: str) -> DataFrame:
    """What the parse pass stages per line: its dedup keys (dedup.py), whether it is good, its output records,
    and `pending_line`, its text if it still needs the full parser (and then nothing else). `parsed` has the
    good lines' `entity_types` (render_entities)."""
    return dedup.dedup_keys(
        parsed,
        "collector_tstamp",
        "entity_types",
        F.expr(f"coalesce({good}, false)").alias("good"),
        F.expr(records).alias("records"),
        F.expr(f"CAST({pending_line} AS STRING)").alias("pending_line"),
    )


# The staging lives for one run and is read back whole: column statistics (nothing filters on them) and page
# checksums cost time and save nothing. A dictionary pays only where values repeat: each record's folder and
# each entity's type, a few dozen values in a batch, then go as small numbers instead of their text, and the
# output pass, which reads them back, took 5-6% less time (benchmarks/README.md); the rendered lines are
# long and rarely repeat, so every other column is written plain. zstd writes and reads as fast as Spark's
# default, snappy, here, in a third of the bytes (the rendered lines are JSON and TSV): less to store and
# move when the lake, and with it the staging, is on S3.
STAGING_DICTIONARY_COLUMNS = (
    # Spark writes an array's elements as `<column>.list.element`, Parquet's standard layout of a list.
    f"records.list.element.{FOLDER}",
    "entity_types.list.element.schema",
    "entity_types.list.element.kind",
)
_STAGING_OPTIONS = {
    "compression": "zstd",
    "parquet.enable.dictionary": "false",
    **{f"parquet.enable.dictionary#{column}": "true" for column in STAGING_DICTIONARY_COLUMNS},
    "parquet.column.statistics.enabled": "false",
    "parquet.page.write-checksum.enabled": "false",
}


def _write_staged(fs: LakeFileSystem, staged: DataFrame, path: str) -> None:
    staged.write.mode("overwrite").options(**_STAGING_OPTIONS).parquet(fs.spark_path(path))


def _counts_and_earliest(observation: Observation, *other: str) -> tuple[dict[str, int], int | None]:
    """An observation's counts, and its `earliest_etl_time` (null when it saw no good line); `other`
    observations are left out."""
    observed = {name: value for name, value in observation.get.items() if name not in other}
    earliest = observed.pop("earliest_etl_time")
    return {name: int(value or 0) for name, value in observed.items()}, earliest
