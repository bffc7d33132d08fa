"""The latest view: each model's newest batch merged with every record the batch does not hold.

The records a batch does not hold are those after its boundary from the landings it lists, and every
record of the landings ingested (or re-ingested) since it was cut, whatever their timestamps: late records
count as soon as they are ingested. Merged by the order of order.py, the view equals a replay of every
ingested record, whether or not a batch ran since. With no batch yet, or when the newest batch is superseded
(batches.superseded: cut for another spec of the model, or holding a landing ingested again since under
another reading), it is the replay itself.

`latest_table` reads the lake directly (the `latest` command); `write_latest` materialises the same view
per model as `cdc/latest/<model>/` (the cdc_latest asset), written to staging and swapped in.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from snowplow_assets.cdc.batches import BatchManifest, latest_batch, read_batches, superseded, with_truncates_applied
from snowplow_assets.cdc.columns import ModelColumns, typed_view
from snowplow_assets.cdc.history import (
    IngestedLanding,
    Window,
    fail_if_being_ingested,
    model_columns,
    model_landings,
    read_ingested,
    read_parquet_files,
    read_records,
    records_bound,
    truncating,
    unsummarised_landings,
)
from snowplow_assets.cdc.models import ModelSpec
from snowplow_assets.cdc.order import BROADCAST_CHANGES_LIMIT, live, merge_into, reduce_to_state
from snowplow_assets.cdc.staging import LATEST, new_staging
from snowplow_assets.events.sql import identifier
from snowplow_assets.lake import Lake
from snowplow_assets.storage import LakeFileSystem, is_data_file

MANIFEST = "_latest.json"


@dataclass(frozen=True)
class LatestSources:
    model: str
    batch: BatchManifest | None
    reads: dict[str, Window]  # landing -> records read from it besides the batch
    columns: ModelColumns
    files_read: int = 0

    @property
    def boundary_ms(self) -> int | None:
        return self.batch.boundary_ms if self.batch else None


def latest_state(
    spark: SparkSession,
    fs: LakeFileSystem,
    lake: Lake,
    models: list[ModelSpec],
    ingested: dict[str, IngestedLanding] | None = None,
) -> tuple[DataFrame, dict[str, LatestSources]]:
    """The live state (order.STATE_COLUMNS) of the models, in one DataFrame, and what each came from."""
    ingested = read_ingested(fs, lake) if ingested is None else ingested
    unsummarised = unsummarised_landings(fs, lake, ingested)
    reads: dict[tuple[str, str], Window] = {}
    batches: dict[str, BatchManifest | None] = {}
    for model in models:
        batch = latest_batch(fs, lake, model.name)
        if batch is not None:
            fail_if_being_ingested(model.name, batch.landings, unsummarised)
        # A superseded batch holds records a replay would not (batches.superseded), which no merge takes
        # back: replay instead, until the next cut (then in full) replaces it.
        usable = batch is not None and superseded(batch, model, ingested) is None
        batch = batches[model.name] = batch if usable else None
        for name, landing in model_landings(ingested, model.name).items():
            held = batch is not None and batch.landings.get(name) == landing.token
            window = Window(batch.boundary_ms, None) if held and batch is not None else Window()
            if window.overlaps(landing.models[model.name]):
                reads[(model.name, name)] = window
    records, files = read_records(spark, fs, lake, reads, ingested)
    changes = reduce_to_state(records)
    held = [batch for batch in batches.values() if batch is not None]
    state = changes
    if held:
        bound = records_bound(ingested, reads)
        changed = bound if bound <= BROADCAST_CHANGES_LIMIT else changes.count()
        state = merge_into(read_batches(spark, fs, lake, held), changes, changed)
    state = with_truncates_applied(spark, fs, lake, state, records, held, truncating(ingested, reads))
    sources = {
        model.name: LatestSources(
            model.name,
            batches[model.name],
            {landing: window for (name, landing), window in reads.items() if name == model.name},
            model_columns(model_landings(ingested, model.name), model),
            sum(n for (name, _), n in files.items() if name == model.name),
        )
        for model in models
    }
    return live(state), sources


def latest_table(
    spark: SparkSession,
    fs: LakeFileSystem,
    lake: Lake,
    model: ModelSpec,
    columns: list[str] | None = None,
    ingested: dict[str, IngestedLanding] | None = None,
) -> tuple[DataFrame, LatestSources]:
    """The model as a typed table, freshest: its key under the model's key column names, then its columns."""
    state, sources = latest_state(spark, fs, lake, [model], ingested)
    return typed_view(state, model.id, sources[model.name].columns, columns), sources[model.name]


@dataclass
class LatestManifest:
    model: str
    path: str
    rows: int
    batch_boundary_ms: int | None
    landings_read: int
    files_read: int
    columns: dict[str, str]
    written_at: str = field(default_factory=lambda: datetime.now(UTC).isoformat())


def write_latest(spark: SparkSession, fs: LakeFileSystem, lake: Lake, models: list[ModelSpec]) -> list[LatestManifest]:
    """Materialise every model's latest view as Parquet at cdc/latest/<model>/ (with _latest.json)."""
    ingested = read_ingested(fs, lake)
    written = []
    staging = new_staging(fs, lake, LATEST)
    try:
        for model in models:
            table, sources = latest_table(spark, fs, lake, model, ingested=ingested)
            folder = f"{staging}/{model.name}"
            table.orderBy(*(F.col(identifier(n)) for n in model.id)).write.parquet(fs.spark_path(folder))
            # Counted from the files written (their footers): an observation would not report when the
            # adaptive planner replaces an empty result.
            written_files = [f.uri for f in fs.list_files(folder) if is_data_file(f.name)]
            manifest = LatestManifest(
                model=model.name,
                path=lake.cdc_latest(model.name),
                rows=read_parquet_files(spark, fs, written_files, None).count() if written_files else 0,
                batch_boundary_ms=sources.boundary_ms,
                landings_read=len(sources.reads),
                files_read=sources.files_read,
                columns={**dict.fromkeys(model.id, "STRING"), **sources.columns.types},
            )
            fs.write_text(f"{folder}/{MANIFEST}", json.dumps(asdict(manifest), indent=2, sort_keys=True))
            fs.replace_tree(folder, lake.cdc_latest(model.name))
            written.append(manifest)
        return written
    finally:
        fs.delete(staging)
