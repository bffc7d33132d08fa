import dataclasses
from collections.abc import Iterator
from datetime import datetime, timezone

import dagster as dg
from dagster_pyspark import LazyPySparkResource

from snowplow_assets.defs.assets.folder_readiness import fail_unless_run_folder_ready
from snowplow_assets.defs.checks.event_manifest_checks import (
    EVENT_MANIFEST,
    EVENT_MANIFEST_CHECK_SPECS,
    event_manifest_check_results,
)
from snowplow_assets.defs.checks.partition_range import combine_partition_results
from snowplow_assets.defs.checks.shred_checks import (
    ATOMIC_EVENTS,
    SHRED_CHECK_SPECS,
    SHREDDED_TYPES,
    shred_check_results,
)
from snowplow_assets.defs.checks.web_reach_checks import WEB_REACH_CHECK_SPEC, web_reach_check_result
from snowplow_assets.defs.manifests.web_manifest import read_web_manifest
from snowplow_assets.defs.partitions import enriched_runs
from snowplow_assets.defs.pools import SHRED_POOL
from snowplow_assets.defs.resources import EventManifestResource, LakeResource, ShredResource, WebModelsResource
from snowplow_assets.error_reason import reason_of
from snowplow_assets.events import dedup
from snowplow_assets.events.completion import withdraw_completion
from snowplow_assets.events.shred_batch import ShredReport, shred_run_folder
from snowplow_assets.manifest.base import EventManifestUnavailable

BLOCKING = {spec.name for spec in (*SHRED_CHECK_SPECS, *EVENT_MANIFEST_CHECK_SPECS) if spec.blocking}


def _common_metadata(report: ShredReport) -> dict[str, object]:
    return {
        "lines_read": report.lines_read,
        "good": report.good,
        "bad": report.bad,
        "natural_duplicates_removed": report.duplicates.get(dedup.NATURAL_DUPLICATE, 0),
        "synthetic_duplicates_renamed": report.duplicates.get(dedup.SYNTHETIC_RENAME, 0),
        "cross_batch_duplicates_removed": report.duplicates.get(dedup.CROSS_BATCH_DUPLICATE, 0),
        "cross_batch_synthetic_duplicates_renamed": report.duplicates.get(dedup.CROSS_BATCH_RENAME, 0),
        "event_manifest_runtime_errors": report.runtime_errors,
        "iglu_errors": report.iglu_errors,
        "iglu_unresolved_schemas": dg.MetadataValue.json(report.unresolved_schemas),
        "input_files": report.input_files,
        "duration_seconds": round((report.completed - report.started).total_seconds(), 2),
        "phase_seconds": dg.MetadataValue.json({name: round(s, 2) for name, s in report.phase_seconds.items()}),
    }


def _utc(epoch_seconds: int) -> str:
    return datetime.fromtimestamp(epoch_seconds, timezone.utc).isoformat()


def _event_manifest_metadata(report: ShredReport) -> dict[str, object]:
    manifest = report.event_manifest
    assert manifest is not None
    counts = manifest.counts
    location = dg.MetadataValue.path(manifest.location) if manifest.backend == "lake" else manifest.location
    return {
        "backend": manifest.backend,
        "location": location,
        "batch_etl_time": manifest.batch.etl_time,
        "batch_etl_time_utc": _utc(manifest.batch.etl_time),
        "entries_expire_utc": _utc(manifest.ttl),
        "cross_batch_duplicates_removed": report.duplicates.get(dedup.CROSS_BATCH_DUPLICATE, 0),
        "cross_batch_synthetic_duplicates_renamed": report.duplicates.get(dedup.CROSS_BATCH_RENAME, 0),
        "runtime_errors": report.runtime_errors,
        "entries_written": counts.get("pairs_recorded", 0) + counts.get("ids_claimed", 0),
        **counts,
    }


def _entity_types_table(report: ShredReport) -> dg.TableMetadataValue:
    return dg.MetadataValue.table(
        records=[dg.TableRecord({"schema": t.schema, "kind": t.kind, "count": t.count}) for t in report.entity_types],
        schema=dg.TableSchema(
            columns=[
                dg.TableColumn("schema", "string"),
                dg.TableColumn("kind", "string"),
                dg.TableColumn("count", "int"),
            ]
        ),
    )


@dg.multi_asset(
    specs=[
        dg.AssetSpec(
            ATOMIC_EVENTS,
            deps=["enriched_batch"],
            kinds={"spark", "tsv"},
            description="128-column atomic-events TSV of a run folder, deduplicated (shredded/good/run=…/atomic-events).",
        ),
        dg.AssetSpec(
            SHREDDED_TYPES,
            deps=["enriched_batch"],
            kinds={"spark", "json"},
            description="One self-describing JSON file set per entity type (shredded/good/run=…/shredded-types).",
        ),
        dg.AssetSpec(
            EVENT_MANIFEST,
            deps=["enriched_batch"],
            kinds={"spark"},
            skippable=True,
            description="The event manifest entries of a run folder: the (event_id, fingerprint) pairs and ids this "
            "batch holds for cross-batch deduplication (lake Parquet or DynamoDB). Not materialised when "
            "SNOWPLOW_EVENT_MANIFEST=none.",
        ),
    ],
    check_specs=[*SHRED_CHECK_SPECS, *EVENT_MANIFEST_CHECK_SPECS, WEB_REACH_CHECK_SPEC],
    partitions_def=enriched_runs,
    backfill_policy=dg.BackfillPolicy.single_run(),
    pool=SHRED_POOL,
    group_name="events",
    description="Parse, deduplicate and shred run folders (one, or a backfilled range, in one Spark session), "
    "verifying each folder's output.",
)
def shred(
    context: dg.AssetExecutionContext,
    lake: LakeResource,
    spark: LazyPySparkResource,
    shredder: ShredResource,
    event_manifest_backend: EventManifestResource,
    web: WebModelsResource,
) -> Iterator[dg.MaterializeResult | dg.AssetCheckResult]:
    """Shred every run folder of the run, in name (time) order, each exactly as a run of that folder alone would.

    A backfill of many folders is one run (`BackfillPolicy.single_run`), so Spark starts once for all of them.
    Each folder's metadata is recorded on its own partition of each asset (`add_asset_metadata`), and its
    checks are evaluated on its own output; `combine_partition_results` reports them once for the run. A
    folder that cannot be shredded fails the run at once, naming the folder: Dagster records a range's
    materialisations together, at the end of the step, so the run succeeds or fails as a whole.
    """
    fs = lake.filesystem()
    manifest = event_manifest_backend.manifest(lake)
    claim_ids = event_manifest_backend.cross_batch_synthetic
    options = dataclasses.replace(shredder.options(), event_manifest=manifest, cross_batch_synthetic=claim_ids)
    if manifest is not None:
        try:
            manifest.verify()  # before Spark starts: a missing DynamoDB table fails the run at once
        except EventManifestUnavailable as error:
            raise dg.Failure(str(error), metadata={"event_manifest": manifest.describe()}) from error
    for run_folder in context.partition_keys:
        fail_unless_run_folder_ready(fs, lake.lake, run_folder)  # before Spark starts
    # The web models do not run between the folders of one run, so their reach is the same for every folder.
    web_models = web.enabled_models()
    web_manifest = read_web_manifest(context.instance, web_models)
    session = spark.spark_session
    checks: dict[str, list[dg.AssetCheckResult]] = {}
    # Time order: the first batch processed owns an event's key in the event manifest (cross-batch dedup).
    for run_folder in sorted(context.partition_keys):
        try:
            report = shred_run_folder(session, fs, lake.lake, run_folder, options)
            checks[run_folder] = [
                *shred_check_results(session, fs, report),
                *event_manifest_check_results(session, fs, lake.lake, manifest, report, claim_ids),
                web_reach_check_result(web_models, web_manifest, web.variables(), report),
            ]
            blocked = sorted(r.check_name for r in checks[run_folder] if not r.passed and r.check_name in BLOCKING)
            if blocked and withdraw_completion(fs, lake.lake, run_folder):
                context.log.error(
                    f"{run_folder}: blocking check(s) {', '.join(blocked)} failed: its shredding_complete.json was "
                    "removed, so that no loader takes the folder in before a rerun passes them"
                )
        except EventManifestUnavailable as error:
            # Not the folder's fault, and the operator's to mend: said in the failure itself.
            metadata = {"run_folder": run_folder, "event_manifest": manifest.describe() if manifest else None}
            raise dg.Failure(f"shredding {run_folder} failed: {error}", metadata=metadata) from error
        except Exception as error:
            # The folder is what the operator needs to know in a range, and the reason in a line (Spark's
            # errors end in a JVM stack trace, the reason often in its last cause); the error is the cause.
            raise dg.Failure(
                f"shredding {run_folder} failed: {reason_of(error)}", metadata={"run_folder": run_folder}
            ) from error
        context.log.info(
            f"{run_folder}: {report.lines_read} lines: {report.good} good, {report.bad} bad, "
            f"{report.removed} duplicates removed, {report.renamed} renamed"
            + (f", {report.runtime_errors} not checked by the event manifest" if report.runtime_errors else "")
            + (f", {report.iglu_errors} of schemas no Iglu registry holds" if report.iglu_errors else "")
        )
        for asset_key, metadata in _metadata_by_asset(report).items():
            withdrawn = {"completion_marker_withdrawn_by": blocked} if blocked else {}
            context.add_asset_metadata({**metadata, **withdrawn}, asset_key=asset_key, partition_key=run_folder)
    yield dg.MaterializeResult(asset_key=ATOMIC_EVENTS)
    yield dg.MaterializeResult(asset_key=SHREDDED_TYPES)
    if manifest is not None:
        yield dg.MaterializeResult(asset_key=EVENT_MANIFEST)
    yield from combine_partition_results(checks)


def _metadata_by_asset(report: ShredReport) -> dict[dg.AssetKey, dict[str, object]]:
    common = _common_metadata(report)
    metadata: dict[dg.AssetKey, dict[str, object]] = {
        ATOMIC_EVENTS: {**common, "path": dg.MetadataValue.path(f"{report.good_output}/atomic-events")},
        SHREDDED_TYPES: {
            **common,
            "path": dg.MetadataValue.path(f"{report.good_output}/shredded-types"),
            "entity_types": _entity_types_table(report),
            "entities": sum(t.count for t in report.entity_types),
            "bad_rows_path": dg.MetadataValue.path(report.bad_output),
        },
    }
    if report.event_manifest is not None:
        metadata[EVENT_MANIFEST] = _event_manifest_metadata(report)
    return metadata
