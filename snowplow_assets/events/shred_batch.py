"""Shredding one enriched run folder: parse, deduplicate, render, publish (FORMATS.md §1-5).

The batch is read twice and written once:

1. *Keys pass.* Parse every line; write the narrow dedup keys of the good lines (dedup.py) to the
   staging folder and count lines and bad lines on the way (a Spark observation, not a second job).
2. *Decisions.* From the keys alone decide which lines are duplicates to drop and which events get a new id.
   Only lines whose id is shared are ever shuffled, so this stays small. With an event manifest, every
   event kept in-batch is then checked against it (manifest/), and its answers become more decisions:
   cross-batch duplicates to drop, cross-batch synthetic duplicates to rename, and events the manifest
   could not check, which become loader_runtime_error bad rows (events/dedup.py).
3. *Output pass.* Parse again, join the (small, broadcast) decisions by row_id, and render every line into
   its output records: a bad row, nothing (a dropped duplicate), or an atomic-events line plus its entity
   lines. All outputs leave in one partitioned write.
4. *Publish.* Arrange the written folders into the loader layout, then swap the run folder's output into
   place and write `shredding_complete.json` last.

Invariant, checked before anything is published: lines read = good + bad + duplicates removed, where bad
counts parse failures and events the manifest could not check.
"""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass, field
from datetime import datetime, timezone

from pyspark.sql import DataFrame, Observation, SparkSession
from pyspark.sql import functions as F

from snowplow_assets.events import bad_rows, dedup, shred
from snowplow_assets.events.completion import shredding_complete
from snowplow_assets.events.parse import parse_enriched
from snowplow_assets.events.reader import read_lines, run_folder_files
from snowplow_assets.events.sql import case, literal, named_struct
from snowplow_assets.lake import Lake
from snowplow_assets.manifest.base import Batch, EventManifest, batch_etl_time
from snowplow_assets.storage import LakeFileSystem

# Decision actions that remove a line from the good output, those that give an event a new id, and those
# that turn a good line into a bad row.
DROP_ACTIONS = (dedup.NATURAL_DUPLICATE, dedup.CROSS_BATCH_DUPLICATE)
RENAME_ACTIONS = (dedup.SYNTHETIC_RENAME, dedup.CROSS_BATCH_RENAME)
ERROR_ACTIONS = (dedup.MANIFEST_ERROR,)

# Above this many decisions the join falls back from a broadcast to a shuffle join.
BROADCAST_DECISIONS_LIMIT = 2_000_000

ATOMIC_EVENTS = "atomic-events"
SHREDDED_TYPES = "shredded-types"
BAD = "bad"
_PARTITIONS = ("output", "vendor", "name", "format", "version")
_NO_VALUE = "__HIVE_DEFAULT_PARTITION__"  # Spark's folder value for a null partition column


@dataclass(frozen=True)
class ShredOptions:
    dedup: dedup.InBatchDedup = dedup.InBatchDedup()
    compression: str = "NONE"
    # Cross-batch deduplication: off without a manifest. Both kinds presuppose their in-batch kind.
    event_manifest: EventManifest | None = None
    cross_batch_synthetic: bool = True

    def __post_init__(self) -> None:
        if self.event_manifest is not None and not self.dedup.natural:
            raise ValueError("cross-batch deduplication needs in-batch natural deduplication (FORMATS.md §5)")
        if self.event_manifest is not None and self.cross_batch_synthetic and not self.dedup.synthetic:
            raise ValueError("cross-batch synthetic deduplication needs in-batch synthetic deduplication")


@dataclass(frozen=True)
class EventManifestReport:
    backend: str
    location: str
    batch: Batch
    ttl: int  # epoch seconds: when this batch's entries expire
    counts: dict[str, int]  # per key, see manifest/base.py ManifestCheck


@dataclass(frozen=True)
class EntityTypeCount:
    schema: str
    kind: str  # CONTEXT or SELF_DESCRIBING_EVENT
    count: int


@dataclass
class ShredReport:
    run: str
    good_output: str
    bad_output: str
    input_files: int
    lines_read: int
    good: int
    bad: int  # bad rows written: parse failures and events the manifest could not check
    duplicates: dict[str, int]  # decision action -> lines: drops, renames and manifest errors alike
    entity_types: list[EntityTypeCount]
    min_collector_tstamp: datetime | None
    max_collector_tstamp: datetime | None
    started: datetime
    completed: datetime
    event_manifest: EventManifestReport | None = None
    extra: dict[str, object] = field(default_factory=dict)

    @property
    def removed(self) -> int:
        return sum(n for action, n in self.duplicates.items() if action in DROP_ACTIONS)

    @property
    def renamed(self) -> int:
        return sum(n for action, n in self.duplicates.items() if action in RENAME_ACTIONS)

    @property
    def runtime_errors(self) -> int:
        return sum(n for action, n in self.duplicates.items() if action in ERROR_ACTIONS)


def shred_run_folder(
    spark: SparkSession,
    fs: LakeFileSystem,
    lake: Lake,
    run: str,
    options: ShredOptions = ShredOptions(),
) -> ShredReport:
    started = datetime.now(timezone.utc)
    if options.event_manifest is not None:
        options.event_manifest.verify()
    files = run_folder_files(fs, lake.enriched_run(run))
    token = uuid.uuid4().hex[:16]
    _remove_abandoned_staging(fs, lake, run)
    staging = lake.shred_staging(run, token)
    try:
        # One DataFrame, executed twice: both passes number the lines by the same scan of the same files.
        parsed = parse_enriched(read_lines(spark, fs, files))
        keys_counts, earliest_etl_time = _write_keys(fs, parsed, f"{staging}/keys")
        keys = spark.read.parquet(fs.spark_path(f"{staging}/keys"))
        batch = Batch(run, batch_etl_time(earliest_etl_time, run))
        decisions, duplicates, manifest_report = _write_decisions(spark, fs, keys, options, batch, staging)
        summary = _summarise_survivors(keys, decisions, renamed=sum(duplicates[a] for a in RENAME_ACTIONS))

        output_counts = _write_outputs(
            fs, parsed, decisions, sum(duplicates.values()), options, f"{staging}/write"
        )
        _check_conservation(keys_counts, output_counts, duplicates, summary.good)
        _arrange_layout(fs, f"{staging}/write", f"{staging}/good", f"{staging}/bad")

        report = ShredReport(
            run=run,
            good_output=lake.shredded_good(run),
            bad_output=lake.shredded_bad(run),
            input_files=len(files),
            lines_read=keys_counts["lines"],
            good=summary.good,
            bad=keys_counts["bad"] + sum(duplicates[a] for a in ERROR_ACTIONS),
            duplicates=duplicates,
            entity_types=summary.entity_types,
            min_collector_tstamp=summary.min_collector_tstamp,
            max_collector_tstamp=summary.max_collector_tstamp,
            started=started,
            completed=datetime.now(timezone.utc),
            event_manifest=manifest_report,
        )
        _publish(fs, lake, run, staging, report, options)
        return report
    finally:
        fs.delete(staging)


def _remove_abandoned_staging(fs: LakeFileSystem, lake: Lake, run: str) -> None:
    """Staging folders of earlier attempts that crashed; one run per partition at a time makes this safe."""
    for entry in fs.list_dir(lake.uri("shredded", ".staging")):
        if entry.name.startswith(f"{run}."):
            fs.delete(entry.uri)


def _write_keys(fs: LakeFileSystem, parsed: DataFrame, path: str) -> tuple[dict[str, int], int | None]:
    """Write the keys; return the line counts and the earliest etl_tstamp of the good lines, epoch seconds."""
    observation = Observation("keys_pass")
    parsed = parsed.observe(
        observation,
        F.count(F.lit(1)).alias("lines"),
        F.count_if(F.col("failure").isNotNull()).alias("bad"),
        F.unix_seconds(F.min(F.when(F.col("failure").isNull(), F.col("etl_tstamp")))).alias("earliest_etl_time"),
    )
    entity_types = f"transform({shred.event_entities()}, e -> named_struct('schema', e.entity.schema, 'kind', e.kind))"
    good = parsed.where(F.col("failure").isNull())
    keys = dedup.dedup_keys(good, "collector_tstamp", F.expr(entity_types).alias("entity_types"))
    keys.write.mode("overwrite").parquet(fs.spark_path(path))
    observed = dict(observation.get)
    earliest = observed.pop("earliest_etl_time")
    return {name: int(value or 0) for name, value in observed.items()}, earliest


def _write_decisions(
    spark: SparkSession, fs: LakeFileSystem, keys: DataFrame, options: ShredOptions, batch: Batch, staging: str
) -> tuple[DataFrame, dict[str, int], EventManifestReport | None]:
    """Materialise the decisions once, so both later passes see exactly the same ones; count them by action.

    With an event manifest, the in-batch decisions are materialised first: the events they keep are what
    the manifest checks (and, with DynamoDB, writes) exactly once.
    """
    decisions = dedup.in_batch_decisions(keys, options.dedup)
    manifest_report = None
    if options.event_manifest is not None:
        decisions = _materialise(spark, fs, decisions, f"{staging}/in-batch-decisions")
        naturally_dropped = decisions.where(F.col("action") == dedup.NATURAL_DUPLICATE).select("row_id")
        kept = keys.join(naturally_dropped, "row_id", "left_anti").select("event_id", "fingerprint")
        manifest = options.event_manifest
        check = manifest.check_and_set(kept, batch, options.cross_batch_synthetic, work=f"{staging}/event-manifest")
        decisions = dedup.cross_batch_decisions(keys, decisions, check.findings, options.cross_batch_synthetic)
        manifest_report = EventManifestReport(
            manifest.backend, manifest.describe(), batch, batch.ttl(manifest.ttl_days), check.counts
        )
    observation = Observation("decisions")
    actions = (*DROP_ACTIONS, *RENAME_ACTIONS, *ERROR_ACTIONS)
    counts = [F.count_if(F.col("action") == action).alias(action) for action in actions]
    return (
        _materialise(spark, fs, decisions.observe(observation, *counts), f"{staging}/decisions"),
        _observed(observation),
        manifest_report,
    )


def _materialise(spark: SparkSession, fs: LakeFileSystem, frame: DataFrame, path: str) -> DataFrame:
    frame.write.mode("overwrite").parquet(fs.spark_path(path))
    return spark.read.parquet(fs.spark_path(path))


@dataclass(frozen=True)
class _Survivors:
    good: int
    entity_types: list[EntityTypeCount]
    min_collector_tstamp: datetime | None
    max_collector_tstamp: datetime | None


def _summarise_survivors(keys: DataFrame, decisions: DataFrame, renamed: int) -> _Survivors:
    """Events and entity types that reach the output, in one aggregation over the keys."""
    dropped = decisions.where(F.col("action").isin(*DROP_ACTIONS, *ERROR_ACTIONS)).select("row_id")
    survivors = keys.join(F.broadcast(dropped), "row_id", "left_anti")
    rows = (
        survivors.selectExpr("collector_tstamp", "posexplode_outer(entity_types) AS (position, type)")
        .groupBy(F.expr("type.schema AS schema"), F.expr("type.kind AS kind"))
        .agg(
            F.count("type").alias("entities"),
            F.count_if(F.expr("coalesce(position, 0) = 0")).alias("events"),
            F.min("collector_tstamp").alias("min"),
            F.max("collector_tstamp").alias("max"),
        )
        .collect()
    )
    counts = [EntityTypeCount(r["schema"], r["kind"], r["entities"]) for r in rows if r["schema"] is not None]
    if renamed:
        counts.append(EntityTypeCount(shred.DUPLICATE_SCHEMA, shred.CONTEXT, renamed))
    timestamps = [r[name] for r in rows for name in ("min", "max") if r[name] is not None]
    return _Survivors(
        good=sum(r["events"] for r in rows),
        entity_types=sorted(counts, key=lambda t: (t.schema, t.kind)),
        min_collector_tstamp=_utc(min(timestamps)) if timestamps else None,
        max_collector_tstamp=_utc(max(timestamps)) if timestamps else None,
    )


_RECORD_TYPE = "STRUCT<output: STRING, vendor: STRING, name: STRING, format: STRING, version: STRING, value: STRING>"


def _output_record(output: str, value: str, entity: str | None = None) -> str:
    """One line of output and the partition folders it belongs in."""
    parts = {p: (f"{entity}.{p}" if entity else "CAST(NULL AS STRING)") for p in _PARTITIONS[1:]}
    return named_struct(output=literal(output), **parts, value=value)


def _output_records(dropped: str, errored: str) -> str:
    """SQL for the output lines of one parsed line: a bad row, nothing, or the event and its entities."""
    root_tstamp = shred.render_timestamp("collector_tstamp")
    entity = _output_record(SHREDDED_TYPES, shred.entity_line("e.entity", "event_id", root_tstamp), "e.entity")
    event = f"concat(array({_output_record(ATOMIC_EVENTS, shred.atomic_events_line())}), transform({shred.event_entities()}, e -> {entity}))"
    bad = f"array({_output_record(BAD, bad_rows.loader_parsing_error('failure', 'line'))})"
    runtime_error = bad_rows.loader_runtime_error("_manifest_failure", bad_rows.event_json("line"))
    return case(
        ("failure IS NOT NULL", bad),
        (dropped, f"CAST(array() AS ARRAY<{_RECORD_TYPE}>)"),
        (errored, f"array({_output_record(BAD, runtime_error)})"),
        otherwise=event,
    )


def _write_outputs(
    fs: LakeFileSystem,
    parsed: DataFrame,
    decisions: DataFrame,
    decision_count: int,
    options: ShredOptions,
    path: str,
) -> dict[str, int]:
    decided = decisions.select(
        "row_id",
        "action",
        "new_event_id",
        F.col("event_id").alias("_decided_event_id"),
        F.col("failure").alias("_manifest_failure"),
    )
    if decision_count <= BROADCAST_DECISIONS_LIMIT:
        decided = F.broadcast(decided)
    dropped = "action IN (" + ", ".join(literal(a) for a in DROP_ACTIONS) + ")"
    renamed = "action IN (" + ", ".join(literal(a) for a in RENAME_ACTIONS) + ")"
    errored = "action IN (" + ", ".join(literal(a) for a in ERROR_ACTIONS) + ")"

    observation = Observation("output_pass")
    lines = parsed.join(decided, "row_id", "left").observe(
        observation,
        F.count(F.lit(1)).alias("lines"),
        F.count_if(F.col("failure").isNotNull()).alias("bad"),
        F.count_if(F.expr(dropped)).alias("dropped"),
        F.count_if(F.expr(renamed)).alias("renamed"),
        F.count_if(F.expr(errored)).alias("runtime_errors"),
        F.count_if(F.col("action").isNotNull()).alias("decided"),
        F.count_if(F.expr("action IS NOT NULL AND _decided_event_id != event_id")).alias("misaligned"),
    )
    events = lines.withColumns(
        {
            "derived_contexts": F.expr(
                f"CASE WHEN {renamed} THEN concat(array({shred.duplicate_context('event_id')}), derived_contexts) "
                "ELSE derived_contexts END"
            ),
            "event_id": F.expr(f"CASE WHEN {renamed} THEN new_event_id ELSE event_id END"),
        }
    )
    (
        events.selectExpr(f"explode({_output_records(dropped, errored)}) AS record")
        .select("record.*")
        .write.mode("overwrite")
        .partitionBy(*_PARTITIONS)
        .option("compression", "gzip" if options.compression == "GZIP" else "none")
        .text(fs.spark_path(path))
    )
    return _observed(observation)


def _check_conservation(
    keys_pass: dict[str, int], output_pass: dict[str, int], duplicates: dict[str, int], good: int
) -> None:
    """Every line is good, bad or a removed duplicate, and both reads saw the same lines in the same places."""
    expected_drops = sum(n for a, n in duplicates.items() if a in DROP_ACTIONS)
    expected_renames = sum(n for a, n in duplicates.items() if a in RENAME_ACTIONS)
    expected_errors = sum(n for a, n in duplicates.items() if a in ERROR_ACTIONS)
    problems = [
        f"{name}: keys pass {keys_pass[name]}, output pass {output_pass[name]}"
        for name in ("lines", "bad")
        if keys_pass[name] != output_pass[name]
    ]
    if output_pass["misaligned"] or output_pass["decided"] != sum(duplicates.values()):
        problems.append(
            f"decisions matched {output_pass['decided']} of {sum(duplicates.values())} lines, "
            f"{output_pass['misaligned']} on a different event: the two reads numbered lines differently"
        )
    applied = (output_pass["dropped"], output_pass["renamed"], output_pass["runtime_errors"])
    if applied != (expected_drops, expected_renames, expected_errors):
        problems.append(f"applied {applied[0]} drops, {applied[1]} renames and {applied[2]} manifest errors, "
                        f"decided {expected_drops}, {expected_renames} and {expected_errors}")
    if output_pass["lines"] != good + output_pass["bad"] + output_pass["runtime_errors"] + output_pass["dropped"]:
        problems.append(f"{output_pass['lines']} lines read != {good} good + {output_pass['bad']} bad "
                        f"+ {output_pass['runtime_errors']} manifest errors + {output_pass['dropped']} duplicates removed")
    if problems:
        raise RuntimeError("shred output not published, lines are not accounted for: " + "; ".join(problems))


def _arrange_layout(fs: LakeFileSystem, written: str, good: str, bad: str) -> None:
    """Move Spark's partition folders into the loader layout of FORMATS.md §3."""
    null_partitions = "/".join(f"{name}={_NO_VALUE}" for name in _PARTITIONS[1:])
    moves = {
        f"{written}/output={ATOMIC_EVENTS}/{null_partitions}": f"{good}/{ATOMIC_EVENTS}",
        f"{written}/output={SHREDDED_TYPES}": f"{good}/{SHREDDED_TYPES}",
        f"{written}/output={BAD}/{null_partitions}": bad,
    }
    for source, target in moves.items():
        if fs.exists(source):
            fs.move(source, target)
    for folder in (f"{good}/{ATOMIC_EVENTS}", bad):
        fs.make_dirs(folder)


def _publish(
    fs: LakeFileSystem, lake: Lake, run: str, staging: str, report: ShredReport, options: ShredOptions
) -> None:
    """Unmark, swap in, mark: a crash at any point leaves complete old output or unmarked output."""
    fs.delete(lake.shredding_complete(run))
    fs.replace_tree(f"{staging}/bad", lake.shredded_bad(run))
    fs.replace_tree(f"{staging}/good", lake.shredded_good(run))
    marker = shredding_complete(report, options.compression)
    fs.write_text(lake.shredding_complete(run), json.dumps(marker, indent=2))


def _observed(observation: Observation) -> dict[str, int]:
    return {name: int(value or 0) for name, value in observation.get.items()}


def _utc(value: datetime | None) -> datetime | None:
    return value.replace(tzinfo=timezone.utc) if value is not None else None
