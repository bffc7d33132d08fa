"""The CDC step of `snowplow-assets process` (and `demo`): once, what the landing sensor and the schedule do.

Register new ready landing folders as `cdc_landings` partitions, ingest every landing the processing
manifest lets start (New, or Resolved after a failure; the same locks as run folders), then cut a batch of
every model and refresh the latest view (the `cdc_batch` job), unless a batch run is already queued or
running.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import dagster as dg

from snowplow_assets.cli.runs import IN_FLIGHT, RunOutcome, execute_run
from snowplow_assets.defs.jobs.cdc import CDC_BATCH_JOB, CDC_INGEST_JOB
from snowplow_assets.defs.manifests.processing_manifest import CDC_LANDINGS, ProcessingManifest
from snowplow_assets.lake import CDC_LANDING_FOLDER, Lake
from snowplow_assets.processing import State
from snowplow_assets.run_folders import find_new_folders
from snowplow_assets.settings import Settings
from snowplow_assets.storage import filesystem_for


def process_cdc(instance: dg.DagsterInstance, settings: Settings, echo: Callable[[str], None]) -> list[RunOutcome]:
    lake, fs = Lake(settings.lake), filesystem_for(settings.lake)
    known = set(instance.get_dynamic_partitions(CDC_LANDINGS.partitions_def))
    found = find_new_folders(
        fs, lake.cdc_landings, known, time.time(), settings.ready_after_seconds, limit=10**9, pattern=CDC_LANDING_FOLDER
    )
    for name in found.waiting:
        echo(f"waiting: CDC landing {name} is not ready yet")
    for name in found.ignored:
        echo(f"ignored: {name} cannot be a CDC landing folder name")
    if found.ready:
        instance.add_dynamic_partitions(CDC_LANDINGS.partitions_def, found.ready)
        echo(f"registered {len(found.ready)} CDC landing(s): {', '.join(found.ready)}")
    registered = known | set(found.ready)
    if not registered:
        echo("no CDC landings")
        return []

    manifest = ProcessingManifest(instance)
    items = manifest.items(CDC_LANDINGS)
    targets = sorted(name for name, item in items.items() if name in registered and item.may_start)
    for name, item in sorted(items.items()):
        if item.state in (State.PROCESSING, State.FAILED) or not item.valid:
            echo(f"not started: {item.why_not_startable()}")
    outcomes = []
    for landing in targets:
        # The lock is checked again right before each run: the sensor may have taken it meanwhile.
        why = manifest.item(CDC_LANDINGS, landing).why_not_startable()
        if why:
            echo(f"not started: {why}")
            continue
        echo(f"ingesting {landing} ...")
        outcomes.append(_report(execute_run(instance, CDC_INGEST_JOB, landing), echo))
    if instance.get_run_records(dg.RunsFilter(job_name=CDC_BATCH_JOB, statuses=IN_FLIGHT), limit=1):
        echo("skipped: a CDC batch run is queued or in progress")
        return outcomes
    echo("cutting CDC batches ...")
    outcomes.append(_report(execute_run(instance, CDC_BATCH_JOB), echo))
    return outcomes


def _report(outcome: RunOutcome, echo: Callable[[str], None]) -> RunOutcome:
    failure = f": {outcome.failure}" if outcome.failure else ""
    echo(f"  {'ok' if outcome.success else 'FAILED'} (run {outcome.run_id}){failure}")
    return outcome
