"""Shredding one enriched run folder: parse, deduplicate, render, publish (FORMATS.md §1-5).

Parsing and rendering a line (131 fields, three JSON documents) is what the job costs, so every line is
parsed and rendered exactly once, before deduplication has decided anything:

1. *Parse pass.* Parse every line and render its output at once: a bad row, or the event's atomic-events
   line and its entity lines, each kept as the text before the event's id and the text after it
   (shred.py), because deduplication may still give the event another id. Lines in canonical form, nearly
   all of them, take the fast path (canonical.py); the rest are staged with their text, then judged by the
   full parser's checks of the fields the fast path left pending (parse.py's parse_failures) in a second,
   small job, which makes bad rows of the bad ones; any good ones left are parsed in full in a third. The
   staged Parquet holds, per line, its narrow dedup keys (dedup.py) and its rendered records; lines, bad
   lines and the earliest etl_tstamp are counted on the way (Spark observations, not extra jobs).
2. *Decisions.* From the keys alone decide which lines are duplicates to drop and which events get a new id.
   Only lines whose id is shared are ever shuffled, so this stays small. With an event manifest, every
   event kept in-batch is then checked against it (manifest/), and its answers become more decisions:
   cross-batch duplicates to drop, cross-batch synthetic duplicates to rename, and events the manifest
   could not check, which become loader_runtime_error bad rows (events/dedup.py).
   The keys are read back from the staging alone (Parquet reads only their columns).
3. *Output pass.* Read the staged records, join the (small, broadcast) decisions by row_id, leave out the
   lines of dropped duplicates, put each event's final id between the two parts of its lines, and add the
   `duplicate` context of a renamed event. No line is parsed again: this pass costs about what copying the
   output costs. All outputs leave in one partitioned write. Only the events the manifest could not
   check (none with the lake manifest; DynamoDB failures) are read and parsed once more, those lines
   alone, to become loader_runtime_error bad rows with the event as JSON.
4. *Publish.* Arrange the written folders into the loader layout, then swap the run folder's output into
   place and write `shredding_complete.json` last.

Invariant, checked before anything is published: lines read = good + bad + duplicates removed, where bad
counts parse failures and events the manifest could not check; and the output pass found every line the
parse pass staged, each decision on the line it was taken for.
"""

from __future__ import annotations

import json
import logging
import uuid
from dataclasses import dataclass, field
from datetime import datetime, timezone

from pyspark.sql import DataFrame, Observation, SparkSession
from pyspark.sql import functions as F

from snowplow_assets.events import bad_rows, dedup, shred, templates
from snowplow_assets.events.completion import shredding_complete
from snowplow_assets.events.canonical import fast_path_available, parse_canonical
from snowplow_assets.events.output_folders import ATOMIC_EVENTS, BAD, FOLDER, RECORD_TYPE, entity_folder_sql, layout_folder
from snowplow_assets.events.parse import parse_enriched, parse_failures
from snowplow_assets.events.reader import read_lines, run_folder_files
from snowplow_assets.events.sql import case, identifier, literal, named_struct
from snowplow_assets.lake import Lake
from snowplow_assets.manifest.base import Batch, EventManifest, batch_etl_time
from snowplow_assets.phase_times import PhaseTimes
from snowplow_assets.spark import session_conf, unsorted_partitioned_write
from snowplow_assets.storage import LakeFileSystem

log = logging.getLogger(__name__)

# Decision actions that remove a line from the good output, those that give an event a new id, and those
# that turn a good line into a bad row.
DROP_ACTIONS = (dedup.NATURAL_DUPLICATE, dedup.CROSS_BATCH_DUPLICATE)
RENAME_ACTIONS = (dedup.SYNTHETIC_RENAME, dedup.CROSS_BATCH_RENAME)
ERROR_ACTIONS = (dedup.MANIFEST_ERROR,)

# Above this many decisions the join falls back from a broadcast to a shuffle join.
BROADCAST_DECISIONS_LIMIT = 2_000_000

# The dedup keys read back from the parse pass's staging (dedup.py), with what the summary needs.
KEY_COLUMNS = ("row_id", "event_id", "fingerprint", "etl_tstamp", "line_hash", "collector_tstamp", "entity_types")

# The phases of shred_run_folder, in order, as ShredReport.phase_seconds names them. One that did not happen
# is absent: the full parser's (its checks of the pending fields, and any full parse after them) when the
# fast path left it no line, the event manifest's without a manifest.
PARSE, FULL_PARSE, DECISIONS, EVENT_MANIFEST, SUMMARY, OUTPUT, PUBLISH = (
    "parse", "full_parse", "decisions", "event_manifest", "summary", "output", "publish"
)
PHASES = (PARSE, FULL_PARSE, DECISIONS, EVENT_MANIFEST, SUMMARY, OUTPUT, PUBLISH)


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
    # Wall seconds of each phase of the job (PHASES), each without the phases inside it.
    phase_seconds: dict[str, float] = field(default_factory=dict)

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
    phases = PhaseTimes()
    if options.event_manifest is not None:
        with phases.phase(EVENT_MANIFEST):
            options.event_manifest.verify()
    with phases.phase(PARSE):
        files = run_folder_files(fs, lake.enriched_run(run))
        _remove_abandoned_staging(fs, lake, run)
    staging = lake.shred_staging(run, uuid.uuid4().hex[:16])
    try:
        with phases.phase(PARSE):
            lines = read_lines(spark, fs, files)
            parsed, parse_counts, earliest_etl_time = _parse_pass(spark, fs, lines, f"{staging}/parsed", phases)
        keys = parsed.where(F.col("good")).select(*KEY_COLUMNS)
        batch = Batch(run, batch_etl_time(earliest_etl_time, run))
        with phases.phase(DECISIONS):
            decisions, duplicates, manifest_report = _write_decisions(spark, fs, keys, options, batch, staging, phases)
        with phases.phase(SUMMARY):
            summary = _summarise_survivors(keys, decisions, renamed=sum(duplicates[a] for a in RENAME_ACTIONS))

        write = f"{staging}/write"
        with phases.phase(OUTPUT):
            output_counts = _write_outputs(fs, parsed, decisions, sum(duplicates.values()), options, write)
            runtime_error_counts = None
            if any(duplicates[a] for a in ERROR_ACTIONS):
                # The same DataFrame again: the same scan of the same files numbers the lines the same way.
                runtime_error_counts = _write_runtime_errors(fs, lines, decisions, options, write)
        _check_conservation(parse_counts, output_counts, runtime_error_counts, duplicates, summary.good)
        with phases.phase(PUBLISH):
            _arrange_layout(fs, f"{staging}/write", f"{staging}/good", f"{staging}/bad")

        report = ShredReport(
            run=run,
            good_output=lake.shredded_good(run),
            bad_output=lake.shredded_bad(run),
            input_files=len(files),
            lines_read=parse_counts["lines"],
            good=summary.good,
            bad=parse_counts["bad"] + sum(duplicates[a] for a in ERROR_ACTIONS),
            duplicates=duplicates,
            entity_types=summary.entity_types,
            min_collector_tstamp=summary.min_collector_tstamp,
            max_collector_tstamp=summary.max_collector_tstamp,
            started=started,
            completed=datetime.now(timezone.utc),
            event_manifest=manifest_report,
            # The very dict the phases are timed into: publishing writes the marker, which is made from the
            # report, so the report exists before its last phase ends.
            phase_seconds=phases.seconds,
        )
        with phases.phase(PUBLISH):
            _publish(fs, lake, run, staging, report, options)
        return report
    finally:
        fs.delete(staging)


def _remove_abandoned_staging(fs: LakeFileSystem, lake: Lake, run: str) -> None:
    """Staging folders of earlier attempts that crashed; one run per partition at a time makes this safe."""
    for entry in fs.list_dir(lake.uri("shredded", ".staging")):
        if entry.name.startswith(f"{run}."):
            fs.delete(entry.uri)


def _parse_pass(
    spark: SparkSession, fs: LakeFileSystem, lines: DataFrame, path: str, phases: PhaseTimes
) -> tuple[DataFrame, dict[str, int], int | None]:
    """Stage every line's keys and rendered records; return them, the line counts and the earliest etl_tstamp
    of the good lines, epoch seconds.

    Lines in canonical form, nearly all of them, take the fast path (canonical.py). The few others are
    staged with their text, and judged in a second, small job by the full parser's checks of the fields the
    fast path could not vouch for: the bad lines among them, nearly all of them, become bad rows there. Only
    lines found good in another form are then parsed in full, in a third. Each job stages the same columns.
    """
    canonical_path, judged_path, full_path = f"{path}/canonical", f"{path}/judged", f"{path}/full"
    if not fast_path_available(spark):
        log.warning("the shredder's fast path is not in this Spark session (see snowplow_assets/jvm/): "
                    "every line takes the full parser")
        with phases.phase(FULL_PARSE):
            counts, earliest = _parse_pass_in_full(fs, lines, full_path)
        return spark.read.parquet(fs.spark_path(full_path)), counts, earliest
    observation = Observation("canonical_pass")
    lines_checked = parse_canonical(lines).observe(
        observation,
        F.count(F.lit(1)).alias("lines"),
        F.count_if(~F.col("canonical")).alias("pending"),
        F.unix_seconds(F.min("etl_tstamp")).alias("earliest_etl_time"),
        F.array_distinct(F.flatten(F.collect_set("pending_fields"))).alias("pending_fields"),
    )
    records = case(("canonical", _event_records("atomic_head", "atomic_tail")))
    pending_line = "CASE WHEN NOT canonical THEN line END"
    _write_staged(fs, _staged(lines_checked, "canonical", records, pending_line), canonical_path)
    pending_fields = observation.get["pending_fields"] or []
    checked, checked_earliest = _counts_and_earliest(observation, "pending_fields")
    counts, earliest = {"lines": checked["lines"], "bad": 0}, [checked_earliest]
    staged_paths = [canonical_path]
    if checked["pending"]:
        with phases.phase(FULL_PARSE):
            staged = spark.read.parquet(fs.spark_path(canonical_path))
            judged = _judge_pending(fs, staged, pending_fields, judged_path)
        _check_handed_on(checked["pending"], judged["lines"], "the checks of their pending fields")
        counts["bad"] += judged["bad"]
        staged_paths.append(judged_path)
        if judged["pending"]:
            with phases.phase(FULL_PARSE):
                pending = _pending(spark.read.parquet(fs.spark_path(judged_path)))
                pending = pending.select("row_id", F.col("pending_line").alias("line"))
                full, full_earliest = _parse_pass_in_full(fs, pending, full_path)
            _check_handed_on(judged["pending"], full["lines"], "the full parser")
            counts["bad"] += full["bad"]
            earliest.append(full_earliest)
            staged_paths.append(full_path)
    parsed = spark.read.parquet(*(fs.spark_path(p) for p in staged_paths)).where(F.col("pending_line").isNull())
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
        "records": f"CASE WHEN failure IS NOT NULL THEN {_parsing_error_records('pending_line')} END",
        "pending_line": "CASE WHEN failure IS NULL THEN pending_line END",
    }
    # The staged columns in their order; the keys and entity types stay null, as on any line that is not good.
    null = "CAST(NULL AS {})"
    columns = (f"{judgement.get(f.name, null.format(f.dataType.simpleString()))} AS {identifier(f.name)}"
               for f in staged.schema)
    _write_staged(fs, judged.selectExpr(*columns), path)
    return _observed(observation)


def _parse_pass_in_full(fs: LakeFileSystem, lines: DataFrame, path: str) -> tuple[dict[str, int], int | None]:
    """The parse pass of the lines the fast path left: the full parser (parse.py) and shred.py's rendering."""
    observation = Observation("full_parse")
    parsed = parse_enriched(lines).observe(
        observation,
        F.count(F.lit(1)).alias("lines"),
        F.count_if(F.col("failure").isNotNull()).alias("bad"),
        F.unix_seconds(F.min(F.when(F.col("failure").isNull(), F.col("etl_tstamp")))).alias("earliest_etl_time"),
    )
    parsed = render_entities(parsed.selectExpr("*", f"{_ROOT_TSTAMP} AS root_tstamp"), "failure IS NULL")
    records = case(
        ("failure IS NOT NULL", _parsing_error_records("line")), otherwise=_event_records(*shred.atomic_events_parts())
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


def _write_decisions(
    spark: SparkSession,
    fs: LakeFileSystem,
    keys: DataFrame,
    options: ShredOptions,
    batch: Batch,
    staging: str,
    phases: PhaseTimes,
) -> tuple[DataFrame, dict[str, int], EventManifestReport | None]:
    """Materialise the decisions once, so the summary and the output pass see exactly the same ones; count them
    by action.

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
        with phases.phase(EVENT_MANIFEST):
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


_ROOT_TSTAMP = shred.render_timestamp("collector_tstamp")


def _record(output: str, head: str, tail: str = "CAST(NULL AS STRING)") -> str:
    """One line of a whole output, `head || event id || tail` (a null tail: the head is the whole line, no
    id in it), and the folder it is written to (`FOLDER`)."""
    return named_struct(folder=literal(output), head=head, tail=tail)


def _entity_record(entity: str, root_tstamp: str) -> str:
    """An entity's line, as _record's, in its type's folder (output_folders.ENTITY_FOLDER): `entity` a
    parse.ENTITY_TYPE."""
    values = shred.entity_values(entity, root_tstamp)
    head, tail = (templates.sql(t, values) for t in (shred.ENTITY_LINE_HEAD, shred.ENTITY_LINE_TAIL))
    return named_struct(folder=entity_folder_sql(values), head=head, tail=tail)


def render_entities(parsed: DataFrame, good: str) -> DataFrame:
    """A parsed event (parse.py) with `entity_lines`, a record per entity in shredding order, and
    `entity_types`, each entity's schema and kind, as the fast path's function renders them itself from the
    same templates (canonical.py); both null unless `good`. `root_tstamp` names the hierarchy's rootTstamp."""
    with_entities = parsed.selectExpr("*", f"CASE WHEN {good} THEN {shred.event_entities()} END AS _entities")
    return with_entities.selectExpr(
        *(identifier(c) for c in parsed.columns),
        f"transform(_entities, e -> {_entity_record('e.entity', 'root_tstamp')}) AS entity_lines",
        "transform(_entities, e -> named_struct('schema', e.entity.schema, 'kind', e.kind)) AS entity_types",
    )


def _parsing_error_records(line: str) -> str:
    """SQL for the output of a line the parser rejected: its loader_parsing_error bad row, from `failure`."""
    return f"array({_record(BAD, bad_rows.loader_parsing_error('failure', line))})"


def _event_records(atomic_head: str, atomic_tail: str) -> str:
    """SQL for the output lines of a good event: its atomic-events line, from the two parts around its id,
    then its `entity_lines`."""
    return f"concat(array({_record(ATOMIC_EVENTS, atomic_head, atomic_tail)}), entity_lines)"


def _action_in(actions: tuple[str, ...]) -> str:
    return "action IN (" + ", ".join(literal(a) for a in actions) + ")"


def _write_outputs(
    fs: LakeFileSystem,
    parsed: DataFrame,
    decisions: DataFrame,
    decision_count: int,
    options: ShredOptions,
    path: str,
) -> dict[str, int]:
    """Apply the decisions to the staged records and write every output of the batch in one pass."""
    decided = decisions.select("row_id", "action", "new_event_id", F.col("event_id").alias("_decided_event_id"))
    if decision_count <= BROADCAST_DECISIONS_LIMIT:
        decided = F.broadcast(decided)
    dropped, renamed, errored = _action_in(DROP_ACTIONS), _action_in(RENAME_ACTIONS), _action_in(ERROR_ACTIONS)

    observation = Observation("output_pass")
    lines = (
        parsed.select("row_id", "good", "event_id", "collector_tstamp", "records")
        .join(decided, "row_id", "left")
        .observe(
            observation,
            F.count(F.lit(1)).alias("lines"),
            F.count_if(~F.col("good")).alias("bad"),
            F.count_if(F.expr(dropped)).alias("dropped"),
            F.count_if(F.expr(renamed)).alias("renamed"),
            F.count_if(F.expr(errored)).alias("runtime_errors"),
            F.count_if(F.col("action").isNotNull()).alias("decided"),
            F.count_if(F.expr("action IS NOT NULL AND (NOT good OR _decided_event_id != event_id)")).alias("misaligned"),
        )
    )
    # A renamed event's duplicate context names its original id and goes first among its derived contexts;
    # the order of entity lines within a type's files carries no meaning, so it is simply one more record.
    duplicate = f"({shred.duplicate_context('event_id')})"
    duplicate_record = _entity_record(duplicate, _ROOT_TSTAMP)
    records = case(
        (f"{dropped} OR {errored}", f"CAST(array() AS ARRAY<{RECORD_TYPE}>)"),
        (renamed, f"concat(array({duplicate_record}), records)"),
        otherwise="records",
    )
    output = lines.selectExpr(
        f"CASE WHEN {renamed} THEN new_event_id ELSE event_id END AS _id", f"explode({records}) AS r"
    ).selectExpr(
        f"r.folder AS {FOLDER}",
        "CASE WHEN r.tail IS NULL THEN r.head ELSE concat(r.head, _id, r.tail) END AS value",
    )
    with session_conf(output.sparkSession, unsorted_partitioned_write(_OPEN_TEXT_FILES)):
        output.write.mode("overwrite").partitionBy(FOLDER).option(
            "compression", _text_compression(options)
        ).text(fs.spark_path(path))
    return _observed(observation)


# The output pass writes a batch's few outputs (atomic events, bad rows, an entity type each) as text, with
# a file open per output in each task rather than sorting every line by its folder (measured: 11.8 against
# 17.0 seconds at 1,000,000 events); past this many outputs, Spark sorts the rest.
_OPEN_TEXT_FILES = 64


def _write_runtime_errors(
    fs: LakeFileSystem, lines: DataFrame, decisions: DataFrame, options: ShredOptions, path: str
) -> dict[str, int]:
    """loader_runtime_error bad rows for the events the manifest could not check, added to the output.

    Their payload is the event as JSON, typed, so these lines (few) are read and parsed once more.
    """
    errored = decisions.where(F.col("action").isin(*ERROR_ACTIONS)).select(
        "row_id", F.col("event_id").alias("_decided_event_id"), F.col("failure").alias("_manifest_failure")
    )
    observation = Observation("runtime_errors")
    events = parse_enriched(lines.join(F.broadcast(errored), "row_id")).observe(
        observation,
        F.count(F.lit(1)).alias("lines"),
        F.count_if(F.expr("failure IS NOT NULL OR event_id != _decided_event_id")).alias("misaligned"),
    )
    runtime_error = bad_rows.loader_runtime_error("_manifest_failure", bad_rows.event_json("line"))
    (
        events.selectExpr(f"{_record(BAD, runtime_error)} AS r")
        .selectExpr(f"r.folder AS {FOLDER}", "r.head AS value")
        .write.mode("append")
        .partitionBy(FOLDER)
        .option("compression", _text_compression(options))
        .text(fs.spark_path(path))
    )
    return _observed(observation)


def _text_compression(options: ShredOptions) -> str:
    return "gzip" if options.compression == "GZIP" else "none"


def _check_conservation(
    parse_pass: dict[str, int],
    output_pass: dict[str, int],
    runtime_errors: dict[str, int] | None,
    duplicates: dict[str, int],
    good: int,
) -> None:
    """Every line is good, bad or a removed duplicate; the output pass found every staged line, and every
    decision on the line (and, for manifest errors, the re-read line) it was taken for."""
    expected_drops = sum(n for a, n in duplicates.items() if a in DROP_ACTIONS)
    expected_renames = sum(n for a, n in duplicates.items() if a in RENAME_ACTIONS)
    expected_errors = sum(n for a, n in duplicates.items() if a in ERROR_ACTIONS)
    problems = [
        f"{name}: parse pass {parse_pass[name]}, output pass {output_pass[name]}"
        for name in ("lines", "bad")
        if parse_pass[name] != output_pass[name]
    ]
    if output_pass["misaligned"] or output_pass["decided"] != sum(duplicates.values()):
        problems.append(
            f"decisions matched {output_pass['decided']} of {sum(duplicates.values())} lines, "
            f"{output_pass['misaligned']} on a different event"
        )
    applied = (output_pass["dropped"], output_pass["renamed"], output_pass["runtime_errors"])
    if applied != (expected_drops, expected_renames, expected_errors):
        problems.append(f"applied {applied[0]} drops, {applied[1]} renames and {applied[2]} manifest errors, "
                        f"decided {expected_drops}, {expected_renames} and {expected_errors}")
    if expected_errors and (runtime_errors is None or (runtime_errors["lines"], runtime_errors["misaligned"]) != (expected_errors, 0)):
        found = runtime_errors or {"lines": 0, "misaligned": 0}
        problems.append(f"the re-read for {expected_errors} manifest errors found {found['lines']} lines, "
                        f"{found['misaligned']} of them another event: the two reads numbered lines differently")
    if output_pass["lines"] != good + output_pass["bad"] + output_pass["runtime_errors"] + output_pass["dropped"]:
        problems.append(f"{output_pass['lines']} lines read != {good} good + {output_pass['bad']} bad "
                        f"+ {output_pass['runtime_errors']} manifest errors + {output_pass['dropped']} duplicates removed")
    if problems:
        raise RuntimeError("shred output not published, lines are not accounted for: " + "; ".join(problems))


def _arrange_layout(fs: LakeFileSystem, written: str, good: str, bad: str) -> None:
    """Move the output pass's folders into the loader layout of FORMATS.md §3."""
    for entry in fs.list_dir(written):
        if entry.is_dir:
            fs.move(entry.uri, layout_folder(entry.name, good, bad))
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


def _counts_and_earliest(observation: Observation, *other: str) -> tuple[dict[str, int], int | None]:
    """An observation's counts, and its `earliest_etl_time` (null when it saw no good line); `other`
    observations are left out."""
    observed = {name: value for name, value in observation.get.items() if name not in other}
    earliest = observed.pop("earliest_etl_time")
    return {name: int(value or 0) for name, value in observed.items()}, earliest


def _observed(observation: Observation) -> dict[str, int]:
    return {name: int(value or 0) for name, value in observation.get.items()}


def _utc(value: datetime | None) -> datetime | None:
    return value.replace(tzinfo=timezone.utc) if value is not None else None
