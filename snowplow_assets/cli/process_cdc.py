"""The CDC step of `snowplow-assets process` (and `demo`): once, what the landing sensor and the schedule do.

Register new ready landing folders as `cdc_landings` partitions, ingest every landing the processing
manifest lets start (New, or Resolved after a failure; the same locks as run folders), or those asked for
with `--ingest`, which may also be Processed. Name the landings read under other models than the models file
declares now (cdc/stale_landings.py). Then cut a batch of every model (in full on `--full-refresh`) and
refresh the latest view (the `cdc_batch` job), unless a batch run is already queued or running.
"""

from __future__ import annotations

from collections.abc import Callable

import dagster as dg

from snowplow_assets.cdc.history import read_ingested
from snowplow_assets.cdc.models import load_models
from snowplow_assets.cdc.stale_landings import stale_landings
from snowplow_assets.cli.item_runs import ItemProcessing, process_items
from snowplow_assets.cli.process_request import ProcessRequest
from snowplow_assets.cli.runs import IN_FLIGHT, RunOutcome, echo_outcome, execute_run
from snowplow_assets.defs.checks.cdc_checks import CDC_BATCHES, STALE_LANDINGS_CHECK
from snowplow_assets.defs.jobs.cdc import CDC_BATCH_JOB, CDC_INGEST_JOB
from snowplow_assets.defs.manifests.processing_manifest import CDC_LANDINGS
from snowplow_assets.lake import Lake, validate_cdc_landing_folder
from snowplow_assets.settings import Settings
from snowplow_assets.storage import filesystem_for

STALE_SHOWN = 10

INGESTION = ItemProcessing(
    CDC_LANDINGS,
    CDC_INGEST_JOB,
    noun="CDC landing",
    verb="ingesting",
    option="--ingest",
    validate=validate_cdc_landing_folder,
    parent=lambda lake: lake.cdc_landings,
    folder=Lake.cdc_landing,
)


def process_cdc(
    instance: dg.DagsterInstance,
    settings: Settings,
    echo: Callable[[str], None],
    request: ProcessRequest = ProcessRequest(),
) -> list[RunOutcome]:
    runs = process_items(instance, settings, INGESTION, echo, list(request.landings))
    if not runs.registered:
        echo("no CDC landings")
        return []
    outcomes = list(runs.outcomes)
    lake, fs = Lake(settings.lake), filesystem_for(settings.lake)
    stale = stale_landings(read_ingested(fs, lake), load_models(settings.cdc_models))
    for landing, changes in list(stale.items())[:STALE_SHOWN]:
        echo(
            f"stale: CDC landing {landing} was read under other models ({'; '.join(changes)}); "
            f"ingest it again: snowplow-assets process --ingest {landing}"
        )
    if len(stale) > STALE_SHOWN:
        echo(f"stale: {len(stale) - STALE_SHOWN} more CDC landings (the cdc_batches check {STALE_LANDINGS_CHECK})")
    if instance.get_run_records(dg.RunsFilter(job_name=CDC_BATCH_JOB, statuses=IN_FLIGHT), limit=1):
        echo("skipped: a CDC batch run is queued or in progress")
        return outcomes
    echo("cutting CDC batches" + (" in full" if request.full_refresh else "") + " ...")
    ops = {CDC_BATCHES.to_python_identifier(): {"config": {"full": True}}} if request.full_refresh else None
    outcomes.append(echo_outcome(execute_run(instance, CDC_BATCH_JOB, ops=ops), echo))
    return outcomes
