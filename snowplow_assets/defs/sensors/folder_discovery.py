"""The folder sensors (enriched run folders, CDC landings): one definition, and what each does on a tick.

1. Scan the folder's prefix (local disk or S3, through the lake's file system) for sub-folders sorting
   after the cursor, with the readiness rule of run_folders.py, at most `SNOWPLOW_SENSOR_CHUNK_SIZE` new
   ready folders a tick. Every `SNOWPLOW_SENSOR_FULL_LIST_EVERY` ticks (and on the first) the whole prefix
   is listed instead, which finds folders that arrived late with names sorting before the cursor, and
   folders that were empty when the cursor passed them. Its cost is bounded: one listing page per 1,000
   folders, one listing per unregistered folder, one query for the registered partitions.
2. Ask the processing manifest which of the new ready folders, and of the items an operator resolved since
   the last tick, may start (`startable_runs`): New or Resolved, and valid. Anything Processing,
   Processed, Skipped, Failed without a later Resolved, or invalid gets no run.
3. Register the new folders as partitions and request one run per startable item; a resolved item's run
   key names its Resolved record, so Dagster's run-key deduplication lets the new run through.

The cursor is JSON: `after` (the last folder name that needs nothing more), `observed` (the last operator
observation looked at) and `ticks`.
"""

import json
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass

import dagster as dg
from dagster._core.definitions.target import ExecutableDefinition

from snowplow_assets.defs.manifests.manifest_locks import resolved_since, startable_runs
from snowplow_assets.defs.manifests.processing_manifest import ItemKind
from snowplow_assets.defs.resources import LakeResource
from snowplow_assets.lake import Lake
from snowplow_assets.run_folders import scan_folders
from snowplow_assets.settings import Settings
from snowplow_assets.shown import shown
from snowplow_assets.storage import LakeFileSystem


@dataclass(frozen=True)
class FolderSensorCursor:
    after: str | None = None
    observed: int | None = None
    ticks: int = 0

    @classmethod
    def parse(cls, text: str | None) -> "FolderSensorCursor":
        if not text:
            return cls()
        data = json.loads(text)
        return cls(data.get("after"), data.get("observed"), int(data.get("ticks", 0)))

    def dump(self) -> str:
        return json.dumps(asdict(self), sort_keys=True)


def evaluate_folder_sensor(
    context: dg.SensorEvaluationContext,
    sensor_name: str,
    kind: ItemKind,
    fs: LakeFileSystem,
    parent_uri: str,
    settings: Settings,
) -> dg.SensorResult:
    cursor = FolderSensorCursor.parse(context.cursor)
    instance = context.instance
    full = cursor.ticks % settings.sensor_full_list_every == 0
    registered = set(instance.get_dynamic_partitions(kind.partitions_def))
    scan = scan_folders(
        fs,
        parent_uri,
        registered,
        now=time.time(),
        ready_after_seconds=settings.ready_after_seconds,
        limit=settings.sensor_chunk_size,
        pattern=kind.pattern,
        start_after=None if full else cursor.after,
    )
    resolved, observed = resolved_since(instance, kind, cursor.observed, limit=settings.sensor_chunk_size)
    candidates = list(dict.fromkeys([*scan.ready, *resolved]))
    check = startable_runs(instance, kind, candidates, discovered=dict.fromkeys(scan.ready, sensor_name))

    context.log.info(
        f"{'listed all' if full else 'listed after ' + repr(cursor.after)}: {scan.listed} folders, "
        f"{len(scan.ready)} new and ready, {len(resolved)} resolved, {len(check.startable)} runs requested"
    )
    if scan.ignored:
        context.log.warning(f"ignoring {len(scan.ignored)} folders whose names do not fit: {shown(scan.ignored)}")
    if scan.waiting:
        context.log.info(f"{len(scan.waiting)} not ready yet: {shown(scan.waiting)}")
    if scan.empty:
        context.log.warning(f"{len(scan.empty)} folders hold no data files: {shown(scan.empty)}")
    for reason in check.refused.values():
        context.log.info(f"no run: {reason}")
    return dg.SensorResult(
        run_requests=[dg.RunRequest(partition_key=s.name, run_key=s.run_key) for s in check.startable],
        dynamic_partitions_requests=(
            [dg.AddDynamicPartitionsRequest(kind.partitions_def, scan.ready)] if scan.ready else []
        ),
        cursor=FolderSensorCursor(scan.handled_through, observed, cursor.ticks + 1).dump(),
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
