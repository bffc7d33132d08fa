"""The blocking checks of every shred output; their logic is in snowplow_assets/events/output_checks.py."""

from collections.abc import Iterator

import dagster as dg
from pyspark.sql import SparkSession

from snowplow_assets.defs.checks.check_results import check_result
from snowplow_assets.events.output_checks import check_shredded_output
from snowplow_assets.events.shred_batch import ShredReport
from snowplow_assets.storage import LakeFileSystem

ATOMIC_EVENTS = dg.AssetKey("atomic_events")
SHREDDED_TYPES = dg.AssetKey("shredded_types")

_CHECKS = {
    "unique_event_ids": (ATOMIC_EVENTS, "event_id is unique in atomic-events."),
    "lines_accounted_for": (ATOMIC_EVENTS, "Lines read = good + bad + duplicates removed, counted on disk."),
    "entities_have_events": (SHREDDED_TYPES, "Every entity's hierarchy.rootId is an event in atomic-events."),
    "renamed_events_have_duplicate_context": (
        SHREDDED_TYPES,
        "Every renamed synthetic duplicate carries exactly one duplicate context naming its original id.",
    ),
}

SHRED_CHECK_SPECS = [
    dg.AssetCheckSpec(name, asset=asset, description=description, blocking=True)
    for name, (asset, description) in _CHECKS.items()
]


def shred_check_results(spark: SparkSession, fs: LakeFileSystem, report: ShredReport) -> Iterator[dg.AssetCheckResult]:
    for outcome in check_shredded_output(spark, fs, report):
        yield check_result(_CHECKS[outcome.name][0], outcome)
