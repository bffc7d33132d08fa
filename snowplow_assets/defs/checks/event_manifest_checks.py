"""The blocking check of the event manifest; its logic is in snowplow_assets/manifest/checks.py."""

import dagster as dg
from pyspark.sql import SparkSession

from snowplow_assets.defs.checks.check_results import check_result
from snowplow_assets.events.shred_batch import ShredReport
from snowplow_assets.lake import Lake
from snowplow_assets.manifest import EventManifest
from snowplow_assets.manifest.checks import CHECK_NAME, check_batch_against_manifest
from snowplow_assets.storage import LakeFileSystem

EVENT_MANIFEST = dg.AssetKey("event_manifest")

EVENT_MANIFEST_CHECK_SPECS = [
    dg.AssetCheckSpec(
        CHECK_NAME,
        asset=EVENT_MANIFEST,
        blocking=True,
        description="No event kept in this batch has its (event_id, fingerprint) pair held by another batch; every "
        "kept pair, and the id of every event that kept its id, is recorded for this batch.",
    )
]


def event_manifest_check_result(
    spark: SparkSession,
    fs: LakeFileSystem,
    lake: Lake,
    manifest: EventManifest | None,
    report: ShredReport,
    claim_ids: bool,
) -> dg.AssetCheckResult:
    if manifest is None:
        return dg.AssetCheckResult(
            asset_key=EVENT_MANIFEST,
            check_name=CHECK_NAME,
            passed=True,
            description="cross-batch deduplication is off (SNOWPLOW_EVENT_MANIFEST=none): nothing to check",
        )
    outcome = check_batch_against_manifest(spark, fs, lake, manifest, report, claim_ids)
    return check_result(EVENT_MANIFEST, outcome)
