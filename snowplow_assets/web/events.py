"""The events the web models read: shredded good output (FORMATS.md §3), by collector_tstamp window.

Source: the atomic-events TSV of each complete run folder (one with `shredding_complete.json`) and the
`web_page` context (`shredded-types/vendor=com.snowplowanalytics.snowplow/name=web_page/format=jsonschema/
version=1-*`), whose `data.id` is the page view id shared by a page view and its page pings.

**Which run folders are read** for a window [lower, upper]:

1. By name, without opening anything: a run folder is named after the time its batch was cut, after every
   event in it reached the collector, so a folder named before `lower` cannot hold an event of the window
   and is not looked at. This keeps a run's cost independent of how much history the lake holds. A name
   that is no instant (`run=2026-02-30-…`, the year 0), which lake.RUN_FOLDER accepts, goes on to step 2.
2. By its completion marker: the remaining folders must have `shredding_complete.json` (without it the
   shred is unfinished and the folder is left for a later run); the marker's `timestamps.min`/`max` (the
   folder's earliest and latest collector_tstamp) skip folders entirely outside the window.

Folders after the window (late-arriving data lands in later folders) are read whenever their min/max
overlaps the window. Events are then filtered to the window exactly.

**Which events count**: in the window, an event is dropped, and counted under its reason, when it is
`malformed` (a line without 128 fields, an event_id or a collector_tstamp), a `duplicate` (its event_id was
seen already: the copy with the earliest collector_tstamp, then etl_tstamp, then line text is kept, so the
choice never depends on read order), `late` (sent more than `days_late_allowed` days after the device
created it: dvce_sent_tstamp against dvce_created_tstamp, both on the device clock so a wrong clock does not
matter; an event without either is not late, since its lateness cannot be told: dbt-snowplow-web's comparison
is null for it and drops it uncounted, and webhooks and some server-side trackers send none) or `unidentified` (no domain_sessionid or domain_userid to attribute it to). What remains is valid.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F

from snowplow_assets.events.enriched_schema import ATOMIC_FIELDS, FieldType
from snowplow_assets.events.output_folders import ATOMIC_EVENTS, SHREDDED_TYPES
from snowplow_assets.events.sql import case, identifier
from snowplow_assets.lake import RUN_FOLDER, Lake, run_folder_time
from snowplow_assets.storage import LakeFileSystem
from snowplow_assets.web.run_limits import as_utc

WEB_PAGE_TYPE = "vendor=com.snowplowanalytics.snowplow/name=web_page/format=jsonschema"
_WEB_PAGE_VERSION = "version=1-"
_RUN_IN_PATH = r"/(run=[0-9]{4}-[0-9]{2}-[0-9]{2}-[0-9]{2}-[0-9]{2}-[0-9]{2})/"

# The atomic fields the models use, with their position in the 128-column line.
_POSITION = {f.name: i for i, f in enumerate(ATOMIC_FIELDS)}
_TYPES = {f.name: f.type for f in ATOMIC_FIELDS}
COLUMNS = (
    "event_id",
    "event",
    "collector_tstamp",
    "etl_tstamp",
    "dvce_created_tstamp",
    "dvce_sent_tstamp",
    "derived_tstamp",
    "domain_userid",
    "domain_sessionid",
    "page_url",
    "page_title",
)

MALFORMED, DUPLICATE, LATE, UNIDENTIFIED = "malformed", "duplicate", "late", "unidentified"
DROP_REASONS = (MALFORMED, DUPLICATE, LATE, UNIDENTIFIED)


@dataclass(frozen=True)
class RunFolderSpan:
    run: str
    good: str  # shredded/good/run=…
    min_collector: datetime
    max_collector: datetime


@dataclass(frozen=True)
class FolderSelection:
    folders: list[RunFolderSpan]
    later_data: bool  # some complete folder holds an event after the window and up to now, by its marker
    straddling: list[RunFolderSpan]  # folders whose events reach past now from up to the window's end
    incomplete: list[str]  # folders that may hold window events but have no completion marker yet
    not_opened: int  # folders skipped by name alone
    outside: int  # complete folders whose marker puts all their events outside the window
    empty: int  # complete folders without good events

    @property
    def runs(self) -> list[str]:
        return [f.run for f in self.folders]


def marker_time(value: object, where: str) -> datetime | None:
    """A marker's min or max (a shred report's `min_collector_tstamp`/`max_collector_tstamp`). The year 0 is
    valid in the lake (four digits, FORMATS.md §1) and the shredder writes it (`0000-06-15T00:00:00.000Z`), but
    a Python datetime starts at the year 1: such an instant reads as datetime.min, which is before every window
    as it is, since no window starts before the year 1."""
    if value is None:
        return None
    if not isinstance(value, str):
        raise ValueError(f"{where}: timestamp {value!r} is not a string")
    if value.startswith("0000-"):
        datetime.fromisoformat("2000" + value[4:])  # the rest must still be a timestamp (2000 is leap, as 0 is)
        return datetime.min.replace(tzinfo=UTC)
    return as_utc(datetime.fromisoformat(value))


def read_marker_span(fs: LakeFileSystem, lake: Lake, run: str) -> tuple[datetime, datetime] | None:
    """(min, max) collector_tstamp of a complete run folder from its marker; None when it has no good event."""
    uri = lake.shredding_complete(run)
    try:
        data = json.loads(fs.read_text(uri))["data"]
        stamps, good = data["timestamps"], data["count"]["good"]
        earliest, latest = marker_time(stamps.get("min"), uri), marker_time(stamps.get("max"), uri)
    except (ValueError, KeyError, TypeError) as error:
        raise ValueError(f"unreadable completion marker {uri}: {error}") from error
    if not good or earliest is None or latest is None:
        return None
    return earliest, latest


def select_run_folders(
    fs: LakeFileSystem, lake: Lake, lower: datetime, upper: datetime, now: datetime | None = None
) -> FolderSelection:
    """The complete run folders that can hold events with lower <= collector_tstamp <= upper (module doc).

    `later_data` counts events after `upper` up to `now` only: one collected after `now` is a collector's clock
    set ahead, not data that has arrived past the window. Counted, one such event anywhere made every quiet
    run move last_success past the data that had arrived, and a folder delayed longer than the lookback was
    then read by no window (until 2026-11-28; found by fuzzing). A marker whose earliest or latest event lies
    in (upper, now] says so; one whose events run from the window's end or before to after `now` cannot tell,
    and its folder is `straddling`, for the caller to read.
    """
    lower, upper = as_utc(lower), as_utc(upper)
    until = None if now is None else as_utc(now)
    chosen: list[RunFolderSpan] = []
    incomplete: list[str] = []
    straddling: list[RunFolderSpan] = []
    later = False
    not_opened = outside = empty = 0
    for entry in fs.list_dir(lake.uri("shredded", "good")):
        if not entry.is_dir or not RUN_FOLDER.fullmatch(entry.name):
            continue
        cut = run_folder_time(entry.name)
        if cut is not None and cut < lower:
            not_opened += 1
            continue
        if not fs.exists(lake.shredding_complete(entry.name)):
            incomplete.append(entry.name)
            continue
        span = read_marker_span(fs, lake, entry.name)
        if span is None:
            empty += 1
            continue
        earliest, latest = span
        folder = RunFolderSpan(entry.name, lake.shredded_good(entry.name), earliest, latest)
        if latest > upper:
            if until is None or latest <= until or upper < earliest <= until:
                later = True
            elif earliest <= upper:
                straddling.append(folder)
        if latest < lower or earliest > upper:
            outside += 1
            continue
        chosen.append(folder)
    return FolderSelection(chosen, later, straddling, incomplete, not_opened, outside, empty)


def micros(value: datetime) -> int:
    return (as_utc(value) - datetime(1970, 1, 1, tzinfo=UTC)) // timedelta(microseconds=1)


def timestamp_sql(value: datetime) -> str:
    """A Spark SQL timestamp for an instant, independent of the session and Python time zones."""
    return f"timestamp_micros({micros(value)}L)"


def from_micros(value: int | None) -> datetime | None:
    return None if value is None else datetime(1970, 1, 1, tzinfo=UTC) + timedelta(microseconds=value)


def _field(name: str) -> str:
    raw = f"nullif(try_element_at(_f, {_POSITION[name] + 1}), '')"
    if _TYPES[name] is FieldType.TIMESTAMP:
        return f"try_cast({raw} AS TIMESTAMP) AS {identifier(name)}"
    return f"{raw} AS {identifier(name)}"


def _web_page_folders(fs: LakeFileSystem, folder: RunFolderSpan) -> list[str]:
    base = f"{folder.good}/{SHREDDED_TYPES}/{WEB_PAGE_TYPE}"
    return [e.uri for e in fs.list_dir(base) if e.is_dir and e.name.startswith(_WEB_PAGE_VERSION)]


def read_events(
    spark: SparkSession, fs: LakeFileSystem, folders: list[RunFolderSpan], page_ids: bool = True
) -> DataFrame:
    """Every atomic event of the folders: `line`, `run`, `_fields` (field count), COLUMNS and, with
    `page_ids`, `page_view_id` from the web_page context.

    A context belongs to the copy of the event whose collector_tstamp is its `rootTstamp`, as the loaders join
    entities (root_id and root_tstamp): with synthetic deduplication off, a run folder keeps copies of an id
    that differ in what else they carry, and until 2026-11-28 every copy took the smallest page view id of all
    their contexts. An event with several web_page contexts, or copies that share their collector_tstamp too,
    takes the smallest id, so the choice does not depend on order.
    """
    if not folders:
        schema = ", ".join(
            f"{identifier(c)} {'TIMESTAMP' if _TYPES[c] is FieldType.TIMESTAMP else 'STRING'}" for c in COLUMNS
        )
        empty = spark.createDataFrame([], f"line STRING, run STRING, _fields INT, {schema}, page_view_id STRING")
        return empty if page_ids else empty.drop("page_view_id")
    atomic = spark.read.text([fs.spark_read_path(f"{f.good}/{ATOMIC_EVENTS}") for f in folders]).selectExpr(
        "value AS line",
        f"regexp_extract(_metadata.file_path, '{_RUN_IN_PATH}', 1) AS run",
        "split(value, '\\t', -1) AS _f",
    )
    atomic = atomic.selectExpr("line", "run", "size(_f) AS _fields", *(_field(c) for c in COLUMNS))
    if not page_ids:
        return atomic
    web_page_paths = [fs.spark_read_path(uri) for f in folders for uri in _web_page_folders(fs, f)]
    if not web_page_paths:
        return atomic.withColumn("page_view_id", F.lit(None).cast("string"))
    page_ids = (
        spark.read.text(web_page_paths)
        .selectExpr(
            f"regexp_extract(_metadata.file_path, '{_RUN_IN_PATH}', 1) AS run",
            "get_json_object(value, '$.hierarchy.rootId') AS event_id",
            "try_cast(get_json_object(value, '$.hierarchy.rootTstamp') AS TIMESTAMP) AS collector_tstamp",
            "get_json_object(value, '$.data.id') AS page_view_id",
        )
        .groupBy("run", "event_id", "collector_tstamp")
        .agg(F.min("page_view_id").alias("page_view_id"))
    )
    # By run folder too: another copy of the event in another folder has its own entities.
    return atomic.join(page_ids, ["run", "event_id", "collector_tstamp"], "left")


def in_window(events: DataFrame, lower: datetime, upper: datetime) -> DataFrame:
    """Events collected in [lower, upper], and lines without a readable collector_tstamp: those belong to no
    window, so every run that reads their folder counts them as malformed rather than losing them."""
    between = f"collector_tstamp BETWEEN {timestamp_sql(lower)} AND {timestamp_sql(upper)}"
    return events.where(f"{between} OR collector_tstamp IS NULL")


def classify(events: DataFrame, days_late_allowed: int) -> DataFrame:
    """Add `drop_reason`: null for a valid event, else one of DROP_REASONS (module doc)."""
    well_formed = f"_fields = {len(ATOMIC_FIELDS)} AND event_id IS NOT NULL AND collector_tstamp IS NOT NULL"
    # A malformed line whose id is readable must not outrank a well-formed copy, or the event would be lost.
    first_copy = (
        f"row_number() OVER (PARTITION BY event_id ORDER BY NOT ({well_formed}), collector_tstamp, etl_tstamp, line)"
        " = 1"
    )
    late = f"dvce_sent_tstamp > dvce_created_tstamp + make_interval(0, 0, 0, {int(days_late_allowed)})"
    reason = case(
        (f"NOT ({well_formed})", f"'{MALFORMED}'"),
        (f"NOT ({first_copy})", f"'{DUPLICATE}'"),
        (f"coalesce({late}, false)", f"'{LATE}'"),
        ("domain_sessionid IS NULL OR domain_userid IS NULL", f"'{UNIDENTIFIED}'"),
    )
    return events.withColumn("drop_reason", F.expr(reason))


def drop_counts() -> list[Column]:
    """Observation metrics over classified events: `events`, one count per drop reason, `valid`, and the
    latest collector_tstamp (`max_collector_micros`)."""
    return [
        F.count(F.lit(1)).alias("events"),
        *(F.count_if(F.col("drop_reason") == reason).alias(reason) for reason in DROP_REASONS),
        F.count_if(F.col("drop_reason").isNull()).alias("valid"),
        F.max(F.unix_micros("collector_tstamp")).alias("max_collector_micros"),
    ]


def event_time(prefix: str = "") -> str:
    """When the event happened: derived_tstamp (the collector time corrected for device delays), else collector."""
    return f"coalesce({prefix}derived_tstamp, {prefix}collector_tstamp)"
