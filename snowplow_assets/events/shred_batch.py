"""Shredding one enriched run folder: parse, decide, write, publish (FORMATS.md §1-5).

Each line is parsed and rendered exactly once, before deduplication has decided anything, because that is
what the job costs; every later step works on narrow keys or on text already rendered:

1. *Parse pass* (parse_pass.py). Every line is parsed, and its output records (output_records.py), a bad
   row or the event's lines with a gap for its id, are staged as Parquet with its dedup keys.
2. *Decisions* (here, with dedup.py's rules). With an Iglu resolver, the events whose schemas no registry
   holds are decided first, into loader_iglu_error bad rows (iglu_errors.py), and take no part in the rest.
   From the keys alone decide which lines are duplicates to drop and which events get a new id. Only lines
   whose id is shared are ever shuffled, so this stays small. With an event manifest, every event kept
   in-batch is then checked against it (manifest/), and its answers become more decisions: cross-batch
   duplicates to drop, cross-batch synthetic duplicates to rename, and events the manifest could not
   check, which become loader_runtime_error bad rows. The keys are read back from the staging alone
   (Parquet reads only their columns).
3. *Output pass* (output_pass.py). The decisions applied to the staged records, every output written in
   one pass, each event's final id put in.
4. *Publish* (here). Arrange the written folders into the loader layout, then swap the run folder's output
   into place and write `shredding_complete.json` last.

Invariant, checked before anything is published: lines read = good + bad + duplicates removed, where bad
counts parse failures, events of unresolved schemas and events the manifest could not check; and the
output pass found every line the parse pass staged, each decision on the line it was taken for.
"""

from __future__ import annotations

import functools
import json
import uuid
from dataclasses import dataclass, field
from datetime import datetime, timezone

from pyspark.sql import DataFrame, Observation, SparkSession
from pyspark.sql import functions as F

from snowplow_assets.events import dedup, shred
from snowplow_assets.events.completion import shredding_complete
from snowplow_assets.events.dedup import DROP_ACTIONS, ERROR_ACTIONS, IGLU_ERROR, MANIFEST_ERROR, RENAME_ACTIONS
from snowplow_assets.events.iglu_errors import split_unresolved
from snowplow_assets.events.iglu_resolver import IgluResolver
from snowplow_assets.events.output_folders import ATOMIC_EVENTS, layout_folder
from snowplow_assets.events.output_pass import write_event_errors, write_outputs
from snowplow_assets.events.parse_pass import parse_pass
from snowplow_assets.events.reader import read_lines, run_folder_files
from snowplow_assets.lake import Lake
from snowplow_assets.manifest.base import Batch, EventManifest, batch_etl_time, manifest_keys
from snowplow_assets.manifest.claims_journal import clear_claims, earlier_claims, write_claims
from snowplow_assets.manifest.populate import shredded_event_keys
from snowplow_assets.phase_times import PhaseTimes
from snowplow_assets.spark import observed_counts
from snowplow_assets.storage import LakeFileSystem

# The dedup keys read back from the parse pass's staging (dedup.py), with what the summary needs.
KEY_COLUMNS = ("row_id", "event_id", "fingerprint", "etl_tstamp", "line_hash", "collector_tstamp", "entity_types")

# The phases of shred_run_folder, in order, as ShredReport.phase_seconds names them. One that did not happen
# is absent: the full parser's (its checks of the pending fields, and any full parse after them) when the
# fast path left it no line, the Iglu lookup's without a resolver, the event manifest's without a manifest.
PARSE, FULL_PARSE, IGLU, DECISIONS, EVENT_MANIFEST, SUMMARY, OUTPUT, PUBLISH = (
    "parse",
    "full_parse",
    "iglu",
    "decisions",
    "event_manifest",
    "summary",
    "output",
    "publish",
)
PHASES = (PARSE, FULL_PARSE, IGLU, DECISIONS, EVENT_MANIFEST, SUMMARY, OUTPUT, PUBLISH)


@dataclass(frozen=True)
class ShredOptions:
    dedup: dedup.InBatchDedup = dedup.InBatchDedup()
    compression: str = "NONE"
    # Cross-batch deduplication: off without a manifest. Both kinds presuppose their in-batch kind.
    event_manifest: EventManifest | None = None
    cross_batch_synthetic: bool = True
    # Events whose schemas no registry of the resolver holds are loader_iglu_error bad rows; without one,
    # every schema that matches the Iglu URI pattern is shredded.
    iglu_resolver: IgluResolver | None = None

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
    bad: int  # bad rows written: parse failures, events of unresolved schemas, events the manifest could not check
    duplicates: dict[str, int]  # decision action -> lines: drops, renames and errors alike
    entity_types: list[EntityTypeCount]
    # ISO 8601 in UTC to the millisecond, as the marker has them ("2026-03-01T10:00:00.123Z"): _COLLECTOR_RANGE.
    min_collector_tstamp: str | None
    max_collector_tstamp: str | None
    started: datetime
    completed: datetime
    event_manifest: EventManifestReport | None = None
    unresolved_schemas: list[str] = field(default_factory=list)  # schema URIs no Iglu registry holds
    dedup: dedup.InBatchDedup = field(default_factory=dedup.InBatchDedup)  # the in-batch deduplication applied
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
        """Events the event manifest could not check (loader_runtime_error bad rows)."""
        return self.duplicates.get(MANIFEST_ERROR, 0)

    @property
    def iglu_errors(self) -> int:
        """Events whose schemas no Iglu registry holds (loader_iglu_error bad rows)."""
        return self.duplicates.get(IGLU_ERROR, 0)


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
        remove_abandoned_staging(fs, lake, run)
    staging = lake.shred_staging(run, uuid.uuid4().hex[:16])
    try:
        with phases.phase(PARSE):
            lines = read_lines(spark, fs, files)
            parsed, parse_counts, earliest_etl_time = parse_pass(
                spark, fs, lines, f"{staging}/parsed", lambda: phases.phase(FULL_PARSE)
            )
        keys = parsed.where(F.col("good")).select(*KEY_COLUMNS)
        batch = Batch(run, batch_etl_time(earliest_etl_time, run))
        with phases.phase(DECISIONS):
            resolved_keys, unresolved_decisions, unresolved_schemas = keys, None, []
            if options.iglu_resolver is not None:
                with phases.phase(IGLU):
                    resolved_keys, unresolved_decisions, unresolved_schemas = split_unresolved(
                        keys, options.iglu_resolver
                    )
            decisions, duplicates, manifest_report, stale = _write_decisions(
                spark, fs, lake, resolved_keys, unresolved_decisions, options, batch, staging, phases
            )
        with phases.phase(SUMMARY):
            summary = _summarise_survivors(keys, decisions, renamed=sum(duplicates[a] for a in RENAME_ACTIONS))

        write = f"{staging}/write"
        with phases.phase(OUTPUT):
            output_counts = write_outputs(fs, parsed, decisions, sum(duplicates.values()), options.compression, write)
            event_error_counts = None
            if any(duplicates[a] for a in ERROR_ACTIONS):
                # The same DataFrame again: the same scan of the same files numbers the lines the same way.
                event_error_counts = write_event_errors(fs, lines, decisions, options.compression, write)
        _check_conservation(parse_counts, output_counts, event_error_counts, duplicates, summary.good)
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
            unresolved_schemas=unresolved_schemas,
            dedup=options.dedup,
            # The very dict the phases are timed into: publishing writes the marker, which is made from the
            # report, so the report exists before its last phase ends.
            phase_seconds=phases.seconds,
        )
        with phases.phase(PUBLISH):
            _publish(fs, lake, run, staging, report, options)
        manifest = options.event_manifest
        if manifest is not None and manifest.keeps_entries_across_runs and report.event_manifest is not None:
            # Only now: until the new output is in place, the old one still loads the events these keys name.
            with phases.phase(EVENT_MANIFEST):
                forgotten = manifest.forget(batch, stale) if stale is not None else {}
                report.event_manifest.counts.update(forgotten)
                if not forgotten.get("stale_entries_not_removed"):  # else the next run tries them again
                    clear_claims(fs, lake, run)
        return report
    finally:
        fs.delete(staging)


def remove_abandoned_staging(fs: LakeFileSystem, lake: Lake, run: str) -> None:
    """Staging folders of earlier attempts that crashed; one run per partition at a time makes this safe. Also
    when the folder is skipped (cli/manifest.py): no run of it follows to remove them."""
    for entry in fs.list_dir(lake.uri("shredded", ".staging")):
        if entry.name.startswith(f"{run}."):
            fs.delete(entry.uri)


def _write_decisions(
    spark: SparkSession,
    fs: LakeFileSystem,
    lake: Lake,
    keys: DataFrame,
    unresolved: DataFrame | None,
    options: ShredOptions,
    batch: Batch,
    staging: str,
    phases: PhaseTimes,
) -> tuple[DataFrame, dict[str, int], EventManifestReport | None, DataFrame | None]:
    """Materialise the decisions once, so the summary and the output pass see exactly the same ones; count them
    by action. `keys` are the events to deduplicate, those whose schemas resolved; `unresolved` the decisions
    that make the others loader_iglu_error bad rows (iglu_errors.py), which join the rest here.

    With an event manifest, the in-batch decisions are materialised first: the events they keep are what
    the manifest checks (and, with DynamoDB, writes) exactly once. Where the manifest keeps what an earlier
    run of the batch recorded (`keeps_entries_across_runs`), this run's keys are journalled before they are
    written, and the keys of the batch's published output and of earlier runs' journals that this run no
    longer records are returned too, to be forgotten once the new output is in place (claims_journal.py).
    """
    decisions = dedup.in_batch_decisions(keys, options.dedup, batch.run)
    manifest_report = stale = None
    if options.event_manifest is not None:
        decisions = _materialise(spark, fs, decisions, f"{staging}/in-batch-decisions")
        naturally_dropped = decisions.where(F.col("action") == dedup.NATURAL_DUPLICATE).select("row_id")
        kept = keys.join(naturally_dropped, "row_id", "left_anti").select("event_id", "fingerprint")
        manifest = options.event_manifest
        with phases.phase(EVENT_MANIFEST):
            if manifest.keeps_entries_across_runs:
                claimed_before = earlier_claims(spark, fs, lake, batch.run)
                recorded_now = write_claims(
                    spark, fs, lake, batch.run, manifest_keys(kept, options.cross_batch_synthetic)
                )
            check = manifest.check_and_set(kept, batch, options.cross_batch_synthetic, work=f"{staging}/event-manifest")
        decisions = dedup.cross_batch_decisions(
            keys, decisions, check.findings, options.cross_batch_synthetic, batch.run
        )
        manifest_report = EventManifestReport(
            manifest.backend, manifest.describe(), batch, batch.ttl(manifest.ttl_days), check.counts
        )
        if manifest.keeps_entries_across_runs:
            # What the published output and the earlier runs' claims hold (claims_journal.py); a first run has
            # neither, and no Spark job for them.
            recorded_before = [] if claimed_before is None else [claimed_before]
            if fs.exists(lake.shredded_good(batch.run)):
                published = shredded_event_keys(spark, fs, lake, [batch.run])
                recorded_before.append(manifest_keys(published, options.cross_batch_synthetic))
            if recorded_before:
                candidates = functools.reduce(DataFrame.unionByName, recorded_before)
                stale = write_claims(spark, fs, lake, batch.run, candidates.subtract(recorded_now))
    if unresolved is not None:
        decisions = decisions.unionByName(unresolved)
    observation = Observation("decisions")
    actions = (*DROP_ACTIONS, *RENAME_ACTIONS, *ERROR_ACTIONS)
    counts = [F.count_if(F.col("action") == action).alias(action) for action in actions]
    return (
        _materialise(spark, fs, decisions.observe(observation, *counts), f"{staging}/decisions"),
        observed_counts(observation),
        manifest_report,
        stale,
    )


def _materialise(spark: SparkSession, fs: LakeFileSystem, frame: DataFrame, path: str) -> DataFrame:
    frame.write.mode("overwrite").parquet(fs.spark_path(path))
    return spark.read.parquet(fs.spark_read_path(path))


@dataclass(frozen=True)
class _Survivors:
    good: int
    entity_types: list[EntityTypeCount]
    min_collector_tstamp: str | None
    max_collector_tstamp: str | None


# The collector_tstamp range is formatted by Spark, in the session's time zone (UTC, spark.py), not collected:
# PySpark hands a timestamp to Python in the local time zone of the Python process, and Python's datetime holds
# no year 0, which a valid line may have, so one such line failed every run of its folder. The fixed width
# (four-digit years, as parsing requires) lets the strings compare as the instants do.
_COLLECTOR_RANGE = "yyyy-MM-dd'T'HH:mm:ss.SSS'Z'"


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
            F.date_format(F.min("collector_tstamp"), _COLLECTOR_RANGE).alias("min"),
            F.date_format(F.max("collector_tstamp"), _COLLECTOR_RANGE).alias("max"),
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
        min_collector_tstamp=min(timestamps, default=None),
        max_collector_tstamp=max(timestamps, default=None),
    )


def _check_conservation(
    parse_counts: dict[str, int],
    output_counts: dict[str, int],
    event_errors: dict[str, int] | None,
    duplicates: dict[str, int],
    good: int,
) -> None:
    """Every line is good, bad or a removed duplicate; the output pass found every staged line, and every
    decision on the line (and, for errors, the re-read line) it was taken for."""
    expected_drops = sum(n for a, n in duplicates.items() if a in DROP_ACTIONS)
    expected_renames = sum(n for a, n in duplicates.items() if a in RENAME_ACTIONS)
    expected_errors = sum(n for a, n in duplicates.items() if a in ERROR_ACTIONS)
    problems = [
        f"{name}: parse pass {parse_counts[name]}, output pass {output_counts[name]}"
        for name in ("lines", "bad")
        if parse_counts[name] != output_counts[name]
    ]
    if output_counts["misaligned"] or output_counts["decided"] != sum(duplicates.values()):
        problems.append(
            f"decisions matched {output_counts['decided']} of {sum(duplicates.values())} lines, "
            f"{output_counts['misaligned']} on a different event"
        )
    applied = (output_counts["dropped"], output_counts["renamed"], output_counts["event_errors"])
    if applied != (expected_drops, expected_renames, expected_errors):
        problems.append(
            f"applied {applied[0]} drops, {applied[1]} renames and {applied[2]} errors, "
            f"decided {expected_drops}, {expected_renames} and {expected_errors}"
        )
    if expected_errors and (
        event_errors is None or (event_errors["lines"], event_errors["misaligned"]) != (expected_errors, 0)
    ):
        found = event_errors or {"lines": 0, "misaligned": 0}
        problems.append(
            f"the re-read for {expected_errors} errors found {found['lines']} lines, "
            f"{found['misaligned']} of them another event: the two reads numbered lines differently"
        )
    if output_counts["lines"] != good + output_counts["bad"] + output_counts["event_errors"] + output_counts["dropped"]:
        problems.append(
            f"{output_counts['lines']} lines read != {good} good + {output_counts['bad']} bad "
            f"+ {output_counts['event_errors']} errors + {output_counts['dropped']} duplicates removed"
        )
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
