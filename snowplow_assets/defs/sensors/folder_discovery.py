"""The folder sensors (enriched run folders, CDC landings): one definition, and what each does on a tick.

1. Scan the folder's prefix (local disk or S3, through the lake's file system) for sub-folders sorting
   after the cursor, with the readiness rule of run_folders.py, at most `SNOWPLOW_SENSOR_CHUNK_SIZE` new
   ready folders a tick. Every `SNOWPLOW_SENSOR_FULL_LIST_EVERY` ticks (and on the first) the whole prefix
   is listed instead, which finds folders that arrived late with names sorting before the cursor, and
   folders that were empty when the cursor passed them. Its cost is bounded: one listing page per 1,000
   folders, one listing per unregistered folder, one query for the registered partitions.
2. Ask the processing manifest which of the new ready folders may start (`startable_runs`: New or Resolved,
   and valid), and which registered items may start and have no run (`waiting_runs`: one indexed query over
   the registered items, then the lock check; at most `SNOWPLOW_SENSOR_CHUNK_SIZE` a tick): New ones that
   `process` registered without running them (it registers every new ready folder, whatever it was asked to
   run, and may stop or refuse before running them), New ones whose runs were deleted, Resolved ones.
   Anything Processing, Processed, Skipped, Failed without a later Resolved, or invalid gets no run; an item
   whose run is queued or in flight is Processing, so it is never requested twice.
3. Register the new folders as partitions and request one run per startable item. The run key is the
   item's name, or for a resolved item names its Resolved record too, so Dagster's run-key deduplication
   lets the new run through. Asking again for an item whose every run was deleted reuses its key, which no
   remaining run holds.

The cursor is JSON: `after` (the last folder name that needs nothing more) and `ticks`. A cursor set by hand
or left by another version that is not such a JSON object, or whose `after` names no folder of the kind, is
logged and replaced by a new one, whose tick lists everything (`FolderSensorCursor.read`).
"""

import json
from collections.abc import Callable
from dataclasses import asdict, dataclass

import dagster as dg
from dagster._core.definitions.target import ExecutableDefinition

from snowplow_assets.defs.manifests.manifest_locks import startable_runs, waiting_runs
from snowplow_assets.defs.manifests.processing_manifest import ItemKind
from snowplow_assets.defs.resources import LakeResource
from snowplow_assets.lake import Lake
from snowplow_assets.run_folders import empty_named_warning, registered_not_ready, scan_folders
from snowplow_assets.settings import Settings
from snowplow_assets.shown import shown
from snowplow_assets.storage import LakeFileSystem


@dataclass(frozen=True)
class FolderSensorCursor:
    after: str | None = None
    ticks: int = 0

    @classmethod
    def parse(cls, text: str | None) -> "FolderSensorCursor":
        """The cursor `text` holds, a new one for none; `UnreadableCursor` for a text this sensor never writes."""
        if not text:
            return cls()
        try:
            data = json.loads(text)
        except ValueError:
            data = None
        if not isinstance(data, dict):
            raise UnreadableCursor(text)
        after, ticks = data.get("after"), data.get("ticks", 0)
        if not (after is None or isinstance(after, str)) or type(ticks) is not int or ticks < 0:
            raise UnreadableCursor(text)
        return cls(after, ticks)

    @classmethod
    def read(cls, text: str | None, kind: ItemKind) -> tuple["FolderSensorCursor", str | None]:
        """The cursor to go on from, and why `text` was not taken as it is, if it was not.

        A cursor can be set by hand (`dagster sensor cursor --set`, the UI) or left by another version: until
        2026-11-27 a text that was no such JSON object failed every tick, for good. Such a text, or an `after`
        that names no item of `kind` (a version before 2026-11-27 let a name such as `tmp` become the cursor,
        hiding every run folder that sorts before it), starts over with a whole listing."""
        try:
            cursor = cls.parse(text)
        except UnreadableCursor:
            return cls(), f"cursor {text!r} is not one this sensor writes; listing everything"
        if cursor.after is not None and not kind.pattern.fullmatch(cursor.after):
            return cls(), f"cursor {text!r} names no {kind.prefix} folder; listing everything"
        return cursor, None

    def dump(self) -> str:
        return json.dumps(asdict(self), sort_keys=True)


class UnreadableCursor(ValueError):
    def __init__(self, text: str) -> None:
        super().__init__(f"not a folder sensor cursor: {text!r}")


# Unregistered folders a tick opens at most (run_folders.scan_folders' `examine_at_most`). Each is a listing,
# run_folders.LISTING_THREADS at a time; on S3 each takes tens of milliseconds, so a bulk copy of thousands of folders
# without markers, all waiting for quiet, made every tick open every one of them, and at some ten thousand a tick
# would outlast Dagster's sensor timeout (60 s) and register nothing. Bounded, the waiting folders first in name order
# are looked at again each tick, and those after them once these are registered. The cost: more than this many folders
# that never become ready (abandoned uploads) hold back every folder after them until they are skipped, and the tick's
# log names them as waiting.
FOLDERS_EXAMINED_PER_TICK = 2_000


def evaluate_folder_sensor(
    context: dg.SensorEvaluationContext,
    sensor_name: str,
    kind: ItemKind,
    fs: LakeFileSystem,
    parent_uri: str,
    settings: Settings,
) -> dg.SensorResult:
    cursor, unread = FolderSensorCursor.read(context.cursor, kind)
    if unread:
        context.log.warning(unread)
    instance = context.instance
    full = cursor.ticks % settings.sensor_full_list_every == 0
    registered = set(instance.get_dynamic_partitions(kind.partitions_def))
    now = fs.clock(parent_uri)
    scan = scan_folders(
        fs,
        parent_uri,
        registered,
        now=now,
        ready_after_seconds=settings.ready_after_seconds,
        limit=settings.sensor_chunk_size,
        pattern=kind.pattern,
        start_after=None if full else cursor.after,
        examine_at_most=FOLDERS_EXAMINED_PER_TICK,
    )
    new = startable_runs(instance, kind, scan.ready, discovered=dict.fromkeys(scan.ready, sensor_name))
    waiting = waiting_runs(instance, kind, limit=settings.sensor_chunk_size)
    not_ready = registered_not_ready(fs, parent_uri, [run.name for run in waiting], now, settings.ready_after_seconds)
    waiting = [run for run in waiting if run.name not in not_ready]
    runs = list({run.name: run for run in [*new.startable, *waiting]}.values())

    context.log.info(
        f"{'listed all' if full else 'listed after ' + repr(cursor.after)}: {scan.summary()}; "
        f"{len(waiting)} registered waiting for a run; {len(runs)} runs requested, "
        f"{len(new.refused)} new folders refused"
    )
    if scan.ignored:
        context.log.warning(f"ignoring {len(scan.ignored)} folders whose names do not fit: {shown(scan.ignored)}")
    if scan.empty_named:
        context.log.warning(empty_named_warning(parent_uri))
    if scan.waiting:
        context.log.info(f"{len(scan.waiting)} not ready yet: {shown(scan.waiting)}")
    for name, why in not_ready.items():
        context.log.info(f"{kind.prefix}/{name} waits for its run: it is not ready: {why}")
    if scan.empty:
        context.log.warning(f"{len(scan.empty)} folders hold no data files: {shown(scan.empty)}")
    for name, error in scan.unreadable.items():
        context.log.warning(f"cannot read {name}, looked at again next tick: {error}")
    for reason in new.refused.values():
        context.log.info(f"no run: {reason}")
    return dg.SensorResult(
        run_requests=[dg.RunRequest(partition_key=s.name, run_key=s.run_key) for s in runs],
        dynamic_partitions_requests=(
            [dg.AddDynamicPartitionsRequest(kind.partitions_def, scan.ready)] if scan.ready else []
        ),
        cursor=FolderSensorCursor(scan.handled_through, cursor.ticks + 1).dump(),
    )


def folder_sensor(
    name: str, job: ExecutableDefinition, kind: ItemKind, folder: Callable[[Lake], str], description: str
) -> dg.SensorDefinition:
    """A sensor that registers the ready sub-folders of `folder` (of the lake) as `kind` items and requests a
    run of `job` per item the manifest lets start. Sensors run in the code server under a 60 s limit: they
    only list files, and never start Spark."""

    @dg.sensor(
        name=name,
        job=job,
        minimum_interval_seconds=30,
        default_status=dg.DefaultSensorStatus.RUNNING,
        description=description,
    )
    def _sensor(context: dg.SensorEvaluationContext, lake: LakeResource) -> dg.SensorResult:
        return evaluate_folder_sensor(context, name, kind, lake.filesystem(), folder(lake.lake), Settings())

    return _sensor
