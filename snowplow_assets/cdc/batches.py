"""Batches: a snapshot of every model at a boundary, cut incrementally (seed 002's copy pipe, made exact).

    cdc/batches/<model>/boundary=<epoch ms>/rows/part-*.parquet       live keys: STATE_COLUMNS (order.py)
    cdc/batches/<model>/boundary=<epoch ms>/deleted/part-*.parquet    tombstones: keys whose last change is a delete
    cdc/batches/<model>/boundary=<epoch ms>/_batch.json               BatchManifest

**Boundary.** The model's latest record (change or delete), capped at now; boundaries never move back: if
the model's latest record falls (landings removed, topics dropped), the previous boundary stays. A model with
no records gets no batch. When no landing holds records of the model any more but its newest batch still
lists landings (they were removed, or ingested again without the model's records), the next cut is a full
one at the previous boundary, empty; after it the model is "no data" again, and its empty batch stays the
newest.

Decision, against the seed: its pipe takes the *earliest* of the change stream's and the delete stream's
latest timestamps ("the slowest stream"), so that a lagging stream's records do not arrive behind a batch
that was cut past them and get lost. A batch here cannot lose them: it records which landings it holds, and a
record that arrives later comes in a landing it does not hold, which the next cut reads in full (late
landings, below). So the rule would protect nothing, and it froze batches in the common case: deletes are
rare, so the delete stream's latest record stays where the last delete was, the boundary with it, and
every later cut was cut again at that boundary while the latest view replayed ever more records after it.
(Until 2026-11-28 the boundary was the slowest stream's.)

**Contents.** A batch at boundary B is the state (order.py) of every record with `__timestamp <= B` of the
landings it lists (`landings`: name -> ingestion token). It keeps tombstones, unlike the seed's pipe, which
removes every key with any delete up to the boundary and so loses keys re-inserted after a delete; and
without them a late insert older than a delete would bring the key back.

**Incremental cut.** The previous batch P (boundary Bp) holds everything up to Bp from its landings. The
next batch at B >= Bp therefore needs P plus
- records with Bp < `__timestamp` <= B from the landings P already holds (the hour folders of that window
  only; landings whose time range misses it are not opened), and
- records with `__timestamp` <= B from landings P does not hold, or holds under an older token: *late*
  landings, whose records may be older than Bp. This is how late records stay exact: a batch tracks which
  landings (by ingestion) it contains, not just a time.
Merging is last-record-wins per key, so re-reading records P already contains (a re-ingested landing)
changes nothing. The merge broadcasts the changes against P instead of shuffling P (order.merge_into).

That holds only while P's landings are read as P read them: a merge cannot take a record back. A landing
P holds that was ingested again under another reading of the model's topics (after a models change,
stale_landings.py) gives other records (other keys, or none of the model's), so P is *superseded* (below).
Each batch records, per landing, the reading it took in (`readings`).

**Full recompute** (`full=True`, or automatically when there is no previous batch, P is superseded: the
model's topics, contracts or id fields changed, or a landing P holds was ingested again since under another
reading; or a landing P holds is no longer ingested) reduces every record up to B. It must give the same
batch as the incremental cut; the tests hold the two to that. The reason is the batch's `reason`.

A batch is cut when the boundary moved or a landing is new or re-ingested; otherwise the model is
"unchanged". A batch at the same boundary as the previous one (late landings only) replaces it.

**Expiry.** Batches cut more than `retention_hours` ago are removed, except each model's newest, which the
next incremental cut and the latest view read.

All models are cut together: one Spark job reduces every model's changes, one writes every snapshot.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Set
from dataclasses import asdict, dataclass
from datetime import UTC, datetime

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from snowplow_assets.cdc.columns import ModelColumns
from snowplow_assets.cdc.history import (
    IngestedLanding,
    Window,
    fail_if_being_ingested,
    model_columns,
    model_landings,
    move_partition,
    read_ingested,
    read_parquet_files,
    read_records,
    records_bound,
    truncating,
    unsummarised_landings,
)
from snowplow_assets.cdc.models import CdcModels, ModelSpec
from snowplow_assets.cdc.order import (
    BROADCAST_CHANGES_LIMIT,
    DELETE,
    KEY,
    KIND,
    MODEL,
    RECORDS,
    STATE_COLUMNS,
    STATE_SCHEMA,
    TABLE_KEY,
    TIMESTAMP,
    merge_into,
    reduce_to_state,
    truncated,
)
from snowplow_assets.cdc.staging import BATCHES, new_staging
from snowplow_assets.cdc.stale_landings import model_readings, reading_changes
from snowplow_assets.events.sql import literal
from snowplow_assets.lake import Lake
from snowplow_assets.shown import shown
from snowplow_assets.storage import LakeFileSystem, is_data_file, retired_copy_of

MANIFEST = "_batch.json"
ROWS, DELETED = "rows", "deleted"
INCREMENTAL, FULL = "incremental", "full"
CUT, UNCHANGED, NO_DATA = "cut", "unchanged", "no data"
_BATCH_FOLDER = re.compile(r"^boundary=(-?\d+)$")


@dataclass
class BatchManifest:
    model: str
    boundary_ms: int
    previous_boundary_ms: int | None
    mode: str  # incremental or full
    reason: str
    cut_at_ms: int
    spec: str  # ModelSpec.digest of the model it was cut for
    landings: dict[str, str]  # landing -> ingestion token of every landing it contains
    columns: dict[str, str]  # column -> type
    previous_columns: dict[str, str] | None  # the previous batch's, for the drift check
    skipped_columns: dict[str, str]
    rows: int
    tombstones: int
    records_read: int
    files_read: int
    landings_read: int
    # landing -> how its topics that fed the model were read when it was ingested (stale_landings.
    # model_readings; None when its summary does not say), for every landing in `landings`. None for a
    # batch cut before 2026-11-27, which did not record it.
    readings: dict[str, dict[str, str] | None] | None = None
    # The time of the model's last truncate (order.py) the batch holds, kept among its tombstones: merges into
    # the batch must apply it. None for none, and for a batch cut before 2026-11-28, which could hold none.
    truncated_ms: int | None = None

    @property
    def cut_at(self) -> str:
        return datetime.fromtimestamp(self.cut_at_ms / 1000, UTC).isoformat()

    @property
    def boundary(self) -> str:
        return datetime.fromtimestamp(self.boundary_ms / 1000, UTC).isoformat()

    def to_json(self) -> str:
        return json.dumps(asdict(self), indent=2, sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> BatchManifest:
        return cls(**json.loads(text))


@dataclass(frozen=True)
class BatchPlan:
    model: ModelSpec
    boundary_ms: int
    previous: BatchManifest | None
    mode: str
    reason: str
    landings: dict[str, str]
    reads: dict[str, Window]  # landing -> records to read from it
    columns: ModelColumns
    readings: dict[str, dict[str, str] | None]  # BatchManifest.readings


@dataclass(frozen=True)
class BatchResult:
    model: str
    status: str  # cut, unchanged or no data
    message: str
    batch: BatchManifest | None  # the model's newest batch after the call
    expired: tuple[int, ...] = ()  # boundaries of the batches removed


def list_batches(fs: LakeFileSystem, lake: Lake, model: str) -> list[BatchManifest]:
    """The model's complete batches, oldest boundary first."""
    batches = []
    for entry in fs.list_dir(lake.cdc_batches(model)):
        manifest = f"{entry.uri}/{MANIFEST}"
        if entry.is_dir and _BATCH_FOLDER.fullmatch(entry.name) and fs.exists(manifest):
            batches.append(BatchManifest.from_json(fs.read_text(manifest)))
    return sorted(batches, key=lambda b: b.boundary_ms)


def latest_batch(fs: LakeFileSystem, lake: Lake, model: str) -> BatchManifest | None:
    batches = list_batches(fs, lake, model)
    return batches[-1] if batches else None


def batch_files(
    fs: LakeFileSystem, lake: Lake, batch: BatchManifest, parts: tuple[str, ...] = (ROWS, DELETED)
) -> list[str]:
    folder = lake.cdc_batch(batch.model, batch.boundary_ms)
    return [f.uri for part in parts for f in fs.list_files(f"{folder}/{part}") if is_data_file(f.name)]


def read_batches(
    spark: SparkSession,
    fs: LakeFileSystem,
    lake: Lake,
    batches: list[BatchManifest],
    parts: tuple[str, ...] = (ROWS, DELETED),
) -> DataFrame:
    """STATE_COLUMNS of the batches (live rows and tombstones, or only `parts`), in one read."""
    files = [f for batch in batches for f in batch_files(fs, lake, batch, parts)]
    return read_parquet_files(spark, fs, files, STATE_SCHEMA).select(*STATE_COLUMNS)


def with_truncates_applied(
    spark: SparkSession,
    fs: LakeFileSystem,
    lake: Lake,
    state: DataFrame,
    newer: DataFrame,
    bases: list[BatchManifest],
    newer_truncate: bool,
) -> DataFrame:
    """`state` (`bases` merged with `newer`: the records read besides them, or their state) without the keys a
    truncate removes (order.truncated). The truncates are those among `newer`, when `newer_truncate` (the
    landings' summaries tell), and those the bases hold. With none, `state` as it is, at no cost."""
    truncates = [newer.select(*STATE_COLUMNS)] if newer_truncate else []
    held = [batch for batch in bases if batch.truncated_ms is not None]
    if held:
        truncates.append(read_batches(spark, fs, lake, held, parts=(DELETED,)))
    if not truncates:
        return state
    return truncated(state, truncates[0] if len(truncates) == 1 else truncates[0].unionByName(truncates[1]))


def plan_batch(
    model: ModelSpec,
    ingested: dict[str, IngestedLanding],
    previous: BatchManifest | None,
    now_ms: int,
    full: bool = False,
    unsummarised: Set[str] = frozenset(),
) -> BatchPlan | str:
    """What the next batch of `model` reads, or why there is none (a message). Raise LandingBeingIngested when
    the previous batch holds a landing of `unsummarised`: read as removed, it was left out of a full batch that
    replaced the previous one, until the next cut (until 2026-11-28)."""
    if previous is not None:
        fail_if_being_ingested(model.name, previous.landings, unsummarised)
    landings = model_landings(ingested, model.name)
    summaries = [landing.models[model.name] for landing in landings.values()]
    latest = max((s.max_ms for s in summaries if s.max_ms is not None), default=None)
    if latest is None:
        # No landing holds the model, but its newest batch may still hold records (its landings were removed,
        # or re-ingested without the model's records): that batch is cut again, empty, at its own boundary, or
        # the view and the column tests would keep the removed records for good.
        if previous is None or (not previous.landings and previous.spec == model.digest):
            return f"{NO_DATA}: no landing holds records of {model.name}"
        boundary = previous.boundary_ms
    else:
        boundary = min(latest, now_ms)
        if previous is not None:
            boundary = max(boundary, previous.boundary_ms)
    tokens = {name: landing.token for name, landing in landings.items()}

    mode, reason = INCREMENTAL, "previous batch plus newer records"
    if full:
        mode, reason = FULL, "full recompute requested"
    elif previous is None:
        mode, reason = FULL, "first batch"
    elif (outdated := superseded(previous, model, ingested)) is not None:
        mode, reason = FULL, outdated
    elif set(previous.landings) - set(tokens):
        mode, reason = FULL, f"landings no longer ingested: {sorted(set(previous.landings) - set(tokens))}"

    if mode == FULL:
        reads = {name: Window(None, boundary) for name in landings}
    else:
        assert previous is not None
        late = {name for name, token in tokens.items() if previous.landings.get(name) != token}
        if boundary == previous.boundary_ms and not late:
            return f"{UNCHANGED}: boundary {boundary} and landings as in the newest batch"
        reads = {
            name: Window(None, boundary) if name in late else Window(previous.boundary_ms, boundary)
            for name in landings
        }
        if late:
            reason += f"; {len(late)} landing(s) new or re-ingested since it"
    reads = {name: window for name, window in reads.items() if window.overlaps(landings[name].models[model.name])}
    readings = {name: model_readings(landing, model.name) for name, landing in landings.items()}
    return BatchPlan(model, boundary, previous, mode, reason, tokens, reads, model_columns(landings, model), readings)


def superseded(batch: BatchManifest, model: ModelSpec, ingested: dict[str, IngestedLanding]) -> str | None:
    """Why `batch` holds records of `model` that a replay of the ingested landings would not hold, or None.

    A merge adds records and never takes one back, so such a batch can be neither the base of an incremental
    cut (the cut is then full) nor part of the latest view (it replays). That is the case when the batch was
    cut for another spec of the model (ModelSpec.digest), and when a landing it holds was ingested again since
    under another reading of the topics that fed or feed the model (a models change, then the re-ingest that
    stale_landings.py asks for): its records of the old reading, under their old keys or in the model at all,
    are in the batch, and the new reading's records would only be merged in beside them. A landing ingested
    again under the same reading gives the same records, which a merge takes in exactly. When either reading
    is not recorded (a batch cut before 2026-11-27, a summary written before 2026-11-26 or naming too many
    topics), the batch cannot be shown to hold the same reading, and is not used.
    """
    if batch.spec != model.digest:
        return "the model's topics, contracts or id fields, or the order of changes, changed"
    changed = []
    for name, token in sorted(batch.landings.items()):
        landing = ingested.get(name)
        if landing is None or landing.token == token:
            continue  # a lost landing is the caller's to handle; an unchanged one holds the same records
        then = None if batch.readings is None else batch.readings.get(name)
        if then is None or landing.topics is None:
            changed.append(f"{name} (reading not recorded)")
        elif changes := reading_changes(then, landing, model.name):
            changed.append(f"{name} ({'; '.join(changes)})")
    if changed:
        return f"landings ingested again under another reading since the batch: {shown(changed)}"
    return None


def cut_batches(
    spark: SparkSession,
    fs: LakeFileSystem,
    lake: Lake,
    models: CdcModels,
    now_ms: int | None = None,
    full: bool = False,
    retention_hours: float | None = None,
    ingested: dict[str, IngestedLanding] | None = None,
) -> list[BatchResult]:
    """Cut the next batch of every model that needs one; then expire old batches. One result per model.
    `ingested` is the lake's landings as `read_ingested` gives them, when the caller has read them already."""
    now_ms = int(time.time() * 1000) if now_ms is None else now_ms
    ingested = read_ingested(fs, lake) if ingested is None else ingested
    unsummarised = unsummarised_landings(fs, lake, ingested)
    plans: list[BatchPlan] = []
    results: dict[str, BatchResult] = {}
    for name, model in sorted(models.models.items()):
        previous = latest_batch(fs, lake, name)
        plan = plan_batch(model, ingested, previous, now_ms, full, unsummarised)
        if isinstance(plan, str):
            results[name] = BatchResult(name, plan.split(":")[0], plan, previous)
        else:
            plans.append(plan)
    if plans:
        for manifest in _cut(spark, fs, lake, plans, ingested, now_ms):
            plan = next(p for p in plans if p.model.name == manifest.model)
            results[manifest.model] = BatchResult(manifest.model, CUT, f"{plan.mode}: {plan.reason}", manifest)
    if retention_hours is not None:
        for name, result in results.items():
            expired = expire_batches(fs, lake, name, now_ms, retention_hours)
            results[name] = BatchResult(result.model, result.status, result.message, result.batch, tuple(expired))
    return [results[name] for name in sorted(results)]


def _cut(
    spark: SparkSession,
    fs: LakeFileSystem,
    lake: Lake,
    plans: list[BatchPlan],
    ingested: dict[str, IngestedLanding],
    now_ms: int,
) -> list[BatchManifest]:
    reads = {(plan.model.name, landing): window for plan in plans for landing, window in plan.reads.items()}
    records, files_read = read_records(spark, fs, lake, reads, ingested)
    changes = reduce_to_state(records, counted=True).persist()
    staging = new_staging(fs, lake, BATCHES)
    try:
        changed = records_bound(ingested, reads)
        if changed > BROADCAST_CHANGES_LIMIT:
            changed = changes.count()
        bases = [plan.previous for plan in plans if plan.mode == INCREMENTAL and plan.previous is not None]
        state = merge_into(read_batches(spark, fs, lake, bases), changes, changed) if bases else changes
        state = with_truncates_applied(spark, fs, lake, state, changes, bases, truncating(ingested, reads))
        (
            state.selectExpr(
                *STATE_COLUMNS,
                f"{MODEL} AS model",
                f"CASE WHEN {KIND} = '{DELETE}' THEN '{DELETED}' ELSE '{ROWS}' END AS state",
            )
            .write.partitionBy("model", "state")
            .parquet(fs.spark_path(f"{staging}/write"))
        )
        # Counted afterwards, not observed on the way: when a stage turns out empty, the adaptive planner
        # replaces the plan above it, and an observation in there never reports.
        read = {r[MODEL]: r["n"] for r in changes.groupBy(MODEL).agg(F.sum(RECORDS).alias("n")).collect()}
        staged = [f.uri for f in fs.list_files(f"{staging}/write") if is_data_file(f.name)]
        written_rows = (
            read_parquet_files(spark, fs, staged, STATE_SCHEMA)
            .groupBy(MODEL, (F.col(KIND) == DELETE).alias("deleted"))
            .agg(
                F.count(F.lit(1)).alias("n"),
                F.expr(f"unix_millis(max(CASE WHEN {KEY} = {literal(TABLE_KEY)} THEN {TIMESTAMP} END))").alias("t"),
            )
            .collect()
        )
        written = {(r[MODEL], r["deleted"]): r["n"] for r in written_rows}
        truncated_ms = {r[MODEL]: r["t"] for r in written_rows if r["t"] is not None}
        manifests = []
        for plan in plans:
            manifest = BatchManifest(
                model=plan.model.name,
                boundary_ms=plan.boundary_ms,
                previous_boundary_ms=plan.previous.boundary_ms if plan.previous else None,
                mode=plan.mode,
                reason=plan.reason,
                cut_at_ms=now_ms,
                spec=plan.model.digest,
                landings=plan.landings,
                columns=plan.columns.types,
                previous_columns=plan.previous.columns if plan.previous else None,
                skipped_columns=plan.columns.skipped,
                rows=sum(n for (model, deleted), n in written.items() if model == plan.model.name and not deleted),
                tombstones=sum(n for (model, deleted), n in written.items() if model == plan.model.name and deleted),
                records_read=int(read.get(plan.model.name, 0)),
                files_read=sum(n for (model, _), n in files_read.items() if model == plan.model.name),
                landings_read=len(plan.reads),
                readings=plan.readings,
                truncated_ms=truncated_ms.get(plan.model.name),
            )
            _publish(fs, lake, staging, manifest)
            manifests.append(manifest)
        return manifests
    finally:
        changes.unpersist()
        fs.delete(staging)


def _publish(fs: LakeFileSystem, lake: Lake, staging: str, manifest: BatchManifest) -> None:
    folder = f"{staging}/{manifest.model}"
    for part in (ROWS, DELETED):
        move_partition(fs, f"{staging}/write/model={manifest.model}/state={part}", f"{folder}/{part}")
    fs.write_text(f"{folder}/{MANIFEST}", manifest.to_json())
    fs.replace_tree(folder, lake.cdc_batch(manifest.model, manifest.boundary_ms))


def expire_batches(fs: LakeFileSystem, lake: Lake, model: str, now_ms: int, retention_hours: float) -> list[int]:
    """Remove the model's batches cut before now - retention, except its newest; return their boundaries."""
    batches = list_batches(fs, lake, model)
    cutoff = now_ms - retention_hours * 3_600_000
    expired = [b.boundary_ms for b in batches[:-1] if b.cut_at_ms < cutoff]
    for boundary in expired:
        fs.delete(lake.cdc_batch(model, boundary))
    for entry in fs.list_dir(lake.cdc_batches(model)):
        retired = retired_copy_of(entry.name)
        if retired is not None and _BATCH_FOLDER.fullmatch(retired):  # left by a replacement that crashed half-way
            fs.delete(entry.uri)
    return expired
