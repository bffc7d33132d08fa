"""The checks of the event manifest, one blocking and one that warns; their logic is in
snowplow_assets/manifest/checks.py."""

import dagster as dg
from pyspark.sql import SparkSession

from snowplow_assets.defs.checks.check_results import check_result
from snowplow_assets.events.shred_batch import ShredReport
from snowplow_assets.lake import Lake
from snowplow_assets.manifest import EventManifest
from snowplow_assets.manifest.checks import (
    CHECK_NAME,
    CHECKED_NAME,
    check_batch_against_manifest,
    every_kept_event_checked,
)
from snowplow_assets.storage import LakeFileSystem

EVENT_MANIFEST = dg.AssetKey("event_manifest")

# The blocking check fails as an error; the other warns (README, "Cross-batch deduplication").
SEVERITIES = {CHECK_NAME: dg.AssetCheckSeverity.ERROR, CHECKED_NAME: dg.AssetCheckSeverity.WARN}

EVENT_MANIFEST_CHECK_SPECS = [
    dg.AssetCheckSpec(
        CHECK_NAME,
        asset=EVENT_MANIFEST,
        blocking=True,
        description="No event kept in this batch has its (event_id, fingerprint) pair held by another batch; every "
        "kept pair, and the id of every event that kept its id, is recorded for this batch.",
    ),
    dg.AssetCheckSpec(
        CHECKED_NAME,
        asset=EVENT_MANIFEST,
        description="The event manifest checked every event kept by in-batch deduplication; one it could not "
        "check is a loader_runtime_error bad row until the folder is rerun (warns).",
    ),
]


def event_manifest_check_results(
    spark: SparkSession,
    fs: LakeFileSystem,
    lake: Lake,
    manifest: EventManifest | None,
    report: ShredReport,
    claim_ids: bool,
) -> list[dg.AssetCheckResult]:
    if manifest is None:
        # Each with its own severity, as when the manifest is on: a range's combined result takes the highest.
        off = "cross-batch deduplication is off (SNOWPLOW_EVENT_MANIFEST=none): nothing to check"
        return [
            dg.AssetCheckResult(
                asset_key=EVENT_MANIFEST, check_name=name, passed=True, severity=SEVERITIES[name], description=off
            )
            for name in (CHECK_NAME, CHECKED_NAME)
        ]
    return [
        check_result(EVENT_MANIFEST, outcome, SEVERITIES[outcome.name])
        for outcome in (
            check_batch_against_manifest(spark, fs, lake, manifest, report, claim_ids),
            every_kept_event_checked(report),
        )
    ]
