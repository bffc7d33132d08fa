"""Change and delete histories: ingesting one landing folder, and reading records back by time window.

Ingesting `cdc/landing/<folder>/` writes, for that folder only:

    cdc/history/<folder>/model=<m>/hour=<yyyy-MM-dd-HH>/part-*.parquet   inserts and updates
    cdc/deletes/<folder>/model=<m>/hour=<yyyy-MM-dd-HH>/part-*.parquet   deletes (tombstones included)
    cdc/bad/<folder>/part-*                                              bad rows, JSON lines with a reason
    cdc/ingested/<folder>.json                                           summary, written last

Rows (both histories): `__model, __key, __timestamp, __kind, __topic, __partition, __offset, __data` (the
extracted row as a JSON object with sorted keys; NULL for deletes), `__value` (the raw value's JSON text)
and `__landing`. The `hour` of `__timestamp` (UTC) lets a batch read only the hours of its window.

One Spark job parses, classifies and writes every record, and counts on the way: lines, blank lines,
records per outcome (ignored ones are counted and written nowhere) and bad reason, per model the changes,
deletes, time range and the JSON type of every key of its rows (columns.py), and how each topic the records
name was read (stale_landings.py). A second job writes the bad rows, only when there are any, and must find
as many as the first counted. Nothing is published unless lines = blank + changes + deletes + bad +
ignored.

Re-ingesting a folder replaces its three folders and its summary (staged, then swapped in: the summary is
removed first and written last, so a reader never takes a half-replaced landing as ingested). The records
written are a function of the folder's files, so ingesting the same folder again changes nothing but the
summary's token and time, which tell batches the landing must be looked at again.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterable, Mapping, Set
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime

from pyspark.sql import DataFrame, Observation, SparkSession
from pyspark.sql import functions as F

from snowplow_assets.cdc.columns import ModelColumns, merge_column_kinds, resolve_columns, top_level_kinds
from snowplow_assets.cdc.contracts import BAD, BAD_REASONS, DELETES, HISTORY, IGNORED, classify
from snowplow_assets.cdc.landing import is_blank, landing_files, parse_envelopes, read_lines
from snowplow_assets.cdc.models import TOPIC_NAME, CdcModels, ModelSpec
from snowplow_assets.cdc.order import MODEL, STATE_COLUMNS, STATE_SCHEMA, TABLE_KEY, TIMESTAMP
from snowplow_assets.cdc.staging import ingestion_owner, new_staging
from snowplow_assets.events.sql import literal
from snowplow_assets.lake import Lake, validate_cdc_landing_folder
from snowplow_assets.spark import session_conf
from snowplow_assets.storage import LakeFileSystem, is_data_file

VALUE, LANDING = "__value", "__landing"
HISTORY_COLUMNS = (*STATE_COLUMNS, VALUE, LANDING)
HISTORY_SCHEMA = f"{STATE_SCHEMA}, {VALUE} STRING, {LANDING} STRING"
HOUR_SQL_FORMAT, HOUR_FORMAT = "yyyy-MM-dd-HH", "%Y-%m-%d-%H"
# A real landing names a few topics; a landing of junk naming more is not summarised by topic.
MAX_TOPICS_RECORDED = 1000


@dataclass
class ModelSummary:
    """What one landing holds for one model; batches plan their reads from it without touching data."""

    changes: int = 0
    deletes: int = 0
    min_ms: int | None = None  # earliest change or delete
    max_ms: int | None = None
    max_change_ms: int | None = None
    max_delete_ms: int | None = None
    columns: dict[str, str] = field(default_factory=dict)  # key of its rows -> JSON kind (columns.py)
    truncates: int = 0  # of its deletes, the truncates (order.py), which readers must apply to every key


@dataclass
class IngestedLanding:
    landing: str
    token: str  # new on every ingestion
    ingested_at: str
    files: int
    lines: int
    blank_lines: int
    changes: int
    deletes: int
    bad: int
    bad_reasons: dict[str, int]
    models: dict[str, ModelSummary]
    # topic -> how it was read (models.CdcModels.reading; None: bad rows), for every topic the landing's
    # records name that a model could declare; None for a landing ingested before 2026-11-26 or naming more
    # than MAX_TOPICS_RECORDED such topics.
    topics: dict[str, str | None] | None = None
    # Records of topics no model declares that an ignored_topics pattern fits (0 before 2026-11-27).
    ignored: int = 0

    def to_json(self) -> str:
        return json.dumps(asdict(self), indent=2, sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> IngestedLanding:
        data = json.loads(text)
        data["models"] = {name: ModelSummary(**summary) for name, summary in data["models"].items()}
        return cls(**data)


def ingest_landing(
    spark: SparkSession, fs: LakeFileSystem, lake: Lake, landing: str, models: CdcModels
) -> IngestedLanding:
    folder = lake.cdc_landing(landing)
    if not fs.exists(folder):
        raise FileNotFoundError(f"no such landing folder: {folder}")
    files = landing_files(fs, folder)
    staging = new_staging(fs, lake, ingestion_owner(landing))
    try:
        lines_seen = Observation("cdc_lines")
        lines = read_lines(spark, fs, files).observe(
            lines_seen, F.count(F.lit(1)).alias("lines"), F.count_if(F.expr(is_blank())).alias("blank")
        )
        classified = classify(parse_envelopes(lines), models)
        records_seen = Observation("cdc_records")
        names = sorted(models.models)
        good = classified.observe(records_seen, *_record_counts(names)).where(f"__output IN ('{HISTORY}', '{DELETES}')")
        good.selectExpr(
            *(c for c in HISTORY_COLUMNS if c != LANDING),
            f"{literal(landing)} AS {LANDING}",
            "__output AS output",
            "__model AS model",
            f"date_format({TIMESTAMP}, '{HOUR_SQL_FORMAT}') AS hour",
        ).write.partitionBy("output", "model", "hour").parquet(fs.spark_path(f"{staging}/write"))
        counts = {**_observed(lines_seen), **_observed(records_seen)}
        _write_bad_rows(fs, classified, landing, counts["bad"], f"{staging}/bad")
        _check_accounted_for(counts, names)
        for output in (HISTORY, DELETES):
            move_partition(fs, f"{staging}/write/output={output}", f"{staging}/{output}")

        ingested = IngestedLanding(
            landing=landing,
            token=uuid.uuid4().hex[:16],
            ingested_at=datetime.now(UTC).isoformat(),
            files=len(files),
            lines=counts["lines"],
            blank_lines=counts["blank"],
            changes=counts["changes"],
            deletes=counts["deletes"],
            bad=counts["bad"],
            ignored=counts["ignored"],
            bad_reasons={reason: counts[f"bad_{reason}"] for reason in BAD_REASONS if counts[f"bad_{reason}"]},
            models={
                name: _model_summary(counts, index)
                for index, name in enumerate(names)
                if counts[f"changes_{index}"] or counts[f"deletes_{index}"]
            },
            topics=_topic_readings(counts["topics"], models),
        )
        fs.delete(lake.cdc_ingested(landing))
        fs.replace_tree(f"{staging}/{HISTORY}", lake.cdc_history(landing))
        fs.replace_tree(f"{staging}/{DELETES}", lake.cdc_deletes(landing))
        fs.replace_tree(f"{staging}/bad", lake.cdc_bad(landing))
        fs.write_text(lake.cdc_ingested(landing), ingested.to_json())
        return ingested
    finally:
        fs.delete(staging)


def move_partition(fs: LakeFileSystem, written: str, target: str) -> None:
    """Move a partition folder of a partitioned write to `target`. Spark makes no folder for a partition
    without rows; readers expect one, so an empty folder stands for it."""
    if fs.exists(written):
        fs.move(written, target)
    else:
        fs.make_dirs(target)


def _record_counts(models: list[str]) -> list:
    counts = [
        F.count(F.lit(1)).alias("records"),
        F.count_if(F.col("__output") == HISTORY).alias("changes"),
        F.count_if(F.col("__output") == DELETES).alias("deletes"),
        F.count_if(F.col("__output") == BAD).alias("bad"),
        F.count_if(F.col("__output") == IGNORED).alias("ignored"),
        *(F.count_if(F.col("__reason") == reason).alias(f"bad_{reason}") for reason in BAD_REASONS),
        # Only names a model could declare (models.TOPIC_NAME): no other topic can ever be read otherwise.
        F.expr(
            f"slice(array_sort(collect_set(CASE WHEN __topic RLIKE {literal(TOPIC_NAME.pattern)} THEN __topic END)), "
            f"1, {MAX_TOPICS_RECORDED + 1})"
        ).alias("topics"),
    ]
    for index, name in enumerate(models):
        is_model = f"__model = {literal(name)}"
        change, delete = f"{is_model} AND __output = '{HISTORY}'", f"{is_model} AND __output = '{DELETES}'"
        counts += [
            F.count_if(F.expr(change)).alias(f"changes_{index}"),
            F.count_if(F.expr(delete)).alias(f"deletes_{index}"),
            F.expr(f"unix_millis(min(CASE WHEN {change} OR {delete} THEN {TIMESTAMP} END))").alias(f"min_{index}"),
            F.expr(f"unix_millis(max(CASE WHEN {change} OR {delete} THEN {TIMESTAMP} END))").alias(f"max_{index}"),
            F.expr(f"unix_millis(max(CASE WHEN {change} THEN {TIMESTAMP} END))").alias(f"max_change_{index}"),
            F.expr(f"unix_millis(max(CASE WHEN {delete} THEN {TIMESTAMP} END))").alias(f"max_delete_{index}"),
            F.expr(f"schema_of_variant_agg(CASE WHEN {change} THEN __row END)").alias(f"columns_{index}"),
            F.count_if(F.expr(f"{delete} AND __key = {literal(TABLE_KEY)}")).alias(f"truncates_{index}"),
        ]
    return counts


def _topic_readings(topics: list[str], models: CdcModels) -> dict[str, str | None] | None:
    if len(topics) > MAX_TOPICS_RECORDED:
        return None
    return {topic: models.reading(topic) for topic in topics}


def _model_summary(counts: dict, index: int) -> ModelSummary:
    return ModelSummary(
        changes=counts[f"changes_{index}"],
        deletes=counts[f"deletes_{index}"],
        min_ms=counts[f"min_{index}"],
        max_ms=counts[f"max_{index}"],
        max_change_ms=counts[f"max_change_{index}"],
        max_delete_ms=counts[f"max_delete_{index}"],
        columns=top_level_kinds(counts[f"columns_{index}"]),
        truncates=counts[f"truncates_{index}"],
    )


def _write_bad_rows(fs: LakeFileSystem, classified: DataFrame, landing: str, expected: int, path: str) -> None:
    if not expected:
        fs.make_dirs(path)
        return
    written = Observation("cdc_bad_rows")
    row = (
        "to_json(named_struct('reason', __reason, 'message', __message, "
        f"'landing', {literal(landing)}, 'file', __file, 'topic', __topic, 'partition', __partition, "
        "'offset', __offset, 'timestamp', date_format(__timestamp, \"yyyy-MM-dd'T'HH:mm:ss.SSS'Z'\"), "
        "'line', __line)) AS value"
    )
    (
        classified.where(f"__output = '{BAD}'")
        .observe(written, F.count(F.lit(1)).alias("bad"))
        .selectExpr(row)
        .coalesce(1)
        .write.text(fs.spark_path(path))
    )
    if _observed(written)["bad"] != expected:
        raise RuntimeError(
            f"landing {landing} changed while it was ingested: {expected} bad records, then "
            f"{_observed(written)['bad']}; not published"
        )


def _check_accounted_for(counts: dict, models: list[str]) -> None:
    problems = []
    if counts["lines"] != counts["blank"] + counts["records"]:
        problems.append(f"{counts['lines']} lines != {counts['blank']} blank + {counts['records']} records")
    if counts["records"] != counts["changes"] + counts["deletes"] + counts["bad"] + counts["ignored"]:
        problems.append(
            f"{counts['records']} records != {counts['changes']} changes + {counts['deletes']} deletes "
            f"+ {counts['bad']} bad + {counts['ignored']} ignored"
        )
    if counts["bad"] != sum(counts[f"bad_{reason}"] for reason in BAD_REASONS):
        problems.append(f"{counts['bad']} bad records, but their reasons add up to another number")
    for kind in ("changes", "deletes"):
        if counts[kind] != sum(counts[f"{kind}_{i}"] for i in range(len(models))):
            problems.append(f"{counts[kind]} {kind}, but the models' {kind} add up to another number")
    if problems:
        raise RuntimeError("landing not published, records are not accounted for: " + "; ".join(problems))


def _observed(observation: Observation) -> dict:
    return {name: (int(value) if isinstance(value, int | float) else value) for name, value in observation.get.items()}


def read_ingested(fs: LakeFileSystem, lake: Lake) -> dict[str, IngestedLanding]:
    """Every ingested landing, by name: those with a summary (a half-replaced one has none)."""
    ingested = {}
    for entry in fs.list_dir(lake.cdc_ingested_root):
        name = entry.name.removesuffix(".json")
        if entry.is_dir or not entry.name.endswith(".json") or name.startswith((".", "_")):
            continue
        validate_cdc_landing_folder(name)
        ingested[name] = IngestedLanding.from_json(fs.read_text(entry.uri))
    return ingested


@dataclass(frozen=True)
class Window:
    """Records with after_ms < __timestamp <= until_ms (epoch milliseconds); None leaves a side open."""

    after_ms: int | None = None
    until_ms: int | None = None

    def overlaps(self, summary: ModelSummary | None) -> bool:
        if summary is None or summary.min_ms is None or summary.max_ms is None:
            return False
        return (self.after_ms is None or summary.max_ms > self.after_ms) and (
            self.until_ms is None or summary.min_ms <= self.until_ms
        )

    def sql(self) -> str:
        bounds = ["TRUE"]
        if self.after_ms is not None:
            bounds.append(f"{TIMESTAMP} > timestamp_millis({self.after_ms})")
        if self.until_ms is not None:
            bounds.append(f"{TIMESTAMP} <= timestamp_millis({self.until_ms})")
        return " AND ".join(bounds)

    def holds_hour(self, hour: str) -> bool:
        start = int(datetime.strptime(hour, HOUR_FORMAT).replace(tzinfo=UTC).timestamp() * 1000)
        return (self.after_ms is None or start + 3_600_000 > self.after_ms) and (
            self.until_ms is None or start <= self.until_ms
        )


class LostHistory(FileNotFoundError):
    """A landing's summary counts records of a model whose history or delete folder is gone."""


class LandingBeingIngested(FileNotFoundError):
    """A landing a batch holds has a history but no summary: an ingestion is publishing it (it removes the
    summary before it swaps the folders, and writes it last), or one was cut short there. A FileNotFoundError,
    so that the step that met it runs again once the ingestion is done (defs/lake_read_retries.py)."""


def fail_if_being_ingested(model: str, held: Iterable[str], unsummarised: Set[str]) -> None:
    """Raise LandingBeingIngested if the newest batch of `model`, which holds the landings `held`, holds one of
    `unsummarised` (unsummarised_landings): read as removed, it would be left out of what is built on the batch."""
    if caught := sorted(set(held) & unsummarised):
        raise LandingBeingIngested(
            f"the newest batch of {model} holds landing(s) {', '.join(caught)}, whose history has no summary: "
            "an ingestion is publishing it, or one was cut short (ingest it again: snowplow-assets process --ingest "
            f"{caught[0]}; or, to take it out, remove its folders under cdc/history and cdc/deletes)"
        )


def unsummarised_landings(fs: LakeFileSystem, lake: Lake, ingested: Mapping[str, IngestedLanding]) -> set[str]:
    """The landings with a history folder and no summary in `ingested` (LandingBeingIngested): one listing."""
    return {
        entry.name
        for entry in fs.list_dir(lake.uri("cdc", "history"))
        if entry.is_dir and entry.name not in ingested and not entry.name.startswith((".", "_"))
    }


def record_files(
    fs: LakeFileSystem, lake: Lake, landing: str, model: str, window: Window, summary: ModelSummary | None = None
) -> list[str]:
    """The history and delete files of one landing and model whose hour folders overlap the window.

    Given the landing's `summary` of the model, a folder it counts records in that holds no hour folder at
    all raises LostHistory: read as empty, its records would be missing from a batch that then holds the
    landing, for good, since later cuts read only its newer records.
    """
    files = []
    for root, what in ((lake.cdc_history(landing), HISTORY), (lake.cdc_deletes(landing), DELETES)):
        hours = [h for h in fs.list_dir(f"{root}/model={model}") if h.is_dir and h.name.startswith("hour=")]
        counted = 0 if summary is None else summary.changes if what == HISTORY else summary.deletes
        if counted and not hours:
            noun = "change" if what == HISTORY else "delete"
            raise LostHistory(
                f"landing {landing}: its {what} of {model} ({root}/model={model}) is gone, though its summary "
                f"counts {counted} {noun}{'s' if counted != 1 else ''}; ingest the landing again "
                f"(`snowplow-assets process --ingest {landing}`, or its cdc_history partition), or remove it "
                "with its summary"
            )
        for hour in hours:
            if window.holds_hour(hour.name[len("hour=") :]):
                files += [f.uri for f in fs.list_files(hour.uri) if is_data_file(f.name)]
    return files


def read_records(
    spark: SparkSession,
    fs: LakeFileSystem,
    lake: Lake,
    reads: dict[tuple[str, str], Window],
    ingested: dict[str, IngestedLanding] | None = None,
) -> tuple[DataFrame, dict[tuple[str, str], int]]:
    """STATE_COLUMNS of every record in `reads` ((model, landing) -> window), and the files read for each.

    Only the hour folders of each window are listed and read; rows are then cut to the exact window. With
    the landings' summaries (`ingested`), a landing whose records of a model are gone raises LostHistory.
    """
    files: list[str] = []
    counts: dict[tuple[str, str], int] = {}
    landings_by_window: dict[tuple[str, Window], list[str]] = {}
    for (model, landing), window in sorted(reads.items(), key=lambda item: item[0]):
        summary = ingested[landing].models.get(model) if ingested is not None and landing in ingested else None
        found = record_files(fs, lake, landing, model, window, summary)
        counts[(model, landing)] = len(found)
        if found:
            files += found
            landings_by_window.setdefault((model, window), []).append(landing)
    if not files:
        return spark.createDataFrame([], STATE_SCHEMA), counts
    wanted = " OR ".join(
        f"({MODEL} = {literal(model)} AND {LANDING} IN ({', '.join(literal(l) for l in landings)}) AND {window.sql()})"
        for (model, window), landings in landings_by_window.items()
    )
    records = read_parquet_files(spark, fs, files, HISTORY_SCHEMA)
    return records.where(wanted).select(*STATE_COLUMNS), counts


_PARALLEL_LISTING = "spark.sql.sources.parallelPartitionDiscovery.threshold"


def read_parquet_files(spark: SparkSession, fs: LakeFileSystem, files: list[str], schema: str | None) -> DataFrame:
    """The rows of exactly these Parquet files (an empty frame for none, which needs a schema).

    Given more than 32 paths, Spark starts a job to list them in parallel, which costs more than the read
    of a small batch. On a local lake these are files the lake layer has just listed, so that job is
    turned off for this read (the setting is read when the frame is created, and then restored); on S3,
    where listing is slow, it is kept.
    """
    if not files:
        if schema is None:
            raise ValueError("no files to read and no schema for an empty frame")
        return spark.createDataFrame([], schema)
    paths = [fs.spark_file_path(f) for f in files]
    reader = spark.read if schema is None else spark.read.schema(schema)
    if not all(path.startswith("file:") for path in paths):
        return reader.parquet(*paths)
    with session_conf(spark, {_PARALLEL_LISTING: str(max(len(paths) + 1, 32))}):
        return reader.parquet(*paths)


def model_landings(ingested: dict[str, IngestedLanding], model: str) -> dict[str, IngestedLanding]:
    """The ingested landings that hold records of `model`."""
    return {name: landing for name, landing in sorted(ingested.items()) if model in landing.models}


def model_columns(ingested: dict[str, IngestedLanding], model: ModelSpec) -> ModelColumns:
    """The model's columns over the given landings: the union of their rows' keys (columns.py). Of names equal
    but for case, the first seen keeps the column: landings in the order of the model's earliest record."""
    summaries = sorted(
        ((name, landing.models[model.name]) for name, landing in model_landings(ingested, model.name).items()),
        key=lambda item: (item[1].min_ms is None, item[1].min_ms or 0, item[0]),
    )
    first_seen = [key for _, summary in summaries for key in sorted(summary.columns)]
    return resolve_columns(merge_column_kinds(*(summary.columns for _, summary in summaries)), model, first_seen)


def truncating(ingested: dict[str, IngestedLanding], reads: dict[tuple[str, str], Window]) -> bool:
    """Whether any landing of `reads` ((model, landing) -> window) holds a truncate of its model (order.py),
    from the summaries alone: readers then apply the truncates, which costs a second look at the records."""
    return any(ingested[landing].models[model].truncates for model, landing in reads)


def records_bound(ingested: dict[str, IngestedLanding], reads: dict[tuple[str, str], Window]) -> int:
    """At most how many records `reads` return, from the summaries alone (whole landings, no windows)."""
    return sum(
        ingested[landing].models[model].changes + ingested[landing].models[model].deletes for model, landing in reads
    )
