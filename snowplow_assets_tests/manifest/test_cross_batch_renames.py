"""Renamed event ids are unique across batches (events/dedup.py): an in-batch rename and a later cross-batch
rename of the same line differ.

At-least-once delivery with the fingerprint enrichment off lands the very same line in several run
folders. Such events are never natural duplicates, so every batch after the first renames its copy; a new
id made from the event alone would then be the same in each of them, and one event_id would be loaded twice.
One line redelivered to three batches, and the rerun of one of them, is part of the scenario both backends
run (conftest.py; test_base.py proves its new ids), rather than three more shreds per backend here.
"""

import json
import uuid

import pytest
from pyspark.sql import functions as F

from snowplow_assets.events.dedup import CROSS_BATCH_RENAME, SYNTHETIC_ID_NAMESPACE, SYNTHETIC_RENAME
from snowplow_assets.events.shred_batch import ShredOptions, shred_run_folder
from snowplow_assets.manifest.checks import check_batch_against_manifest
from snowplow_assets.manifest.dynamodb_event_manifest import DynamoDbEventManifest
from snowplow_assets.manifest.lake_event_manifest import LakeEventManifest
from snowplow_assets_tests.conftest import write_run_folder
from snowplow_assets_tests.manifest.conftest import NOW, MovableClock, line, new_table, output_of

E = "e0e0e0e0-0000-4000-8000-0000000000e0"
ETL = "2026-03-01 10:05:00.000"
REDELIVERED = line(E, None, ETL)  # no fingerprint: never a natural duplicate, in-batch or across batches
RUN_1, RUN_2, RUN_3 = "run=2026-03-01-10-00-00", "run=2026-03-02-10-00-00", "run=2026-03-03-10-00-00"
DUPLICATE_FOLDER = "shredded-types/vendor=com.snowplowanalytics.snowplow/name=duplicate/format=jsonschema/version=1-0-0"


def event_ids(output: dict[str, list[str]]) -> list[str]:
    return [atomic.split("\t")[6] for atomic in output["atomic-events"]]


def originals(output: dict[str, list[str]]) -> dict[str, str]:
    """rootId -> originalEventId of every duplicate context."""
    return {
        json.loads(x)["hierarchy"]["rootId"]: json.loads(x)["data"]["originalEventId"]
        for x in output.get(DUPLICATE_FOLDER, [])
    }


def documented_id(spark, run: str, enriched: str, ordinal: int) -> str:
    """The README's new id: uuid5 of run folder|id|fingerprint|etl_tstamp|xxhash64(line)|ordinal."""
    [row] = spark.range(1).select(F.xxhash64(F.lit(enriched)).alias("h")).collect()
    return str(uuid.uuid5(SYNTHETIC_ID_NAMESPACE, f"{run}|{E}||{ETL}000|{row.h}|{ordinal}"))


@pytest.fixture(params=["lake", "dynamodb"])
def shred(request, spark, lake, fs, moto_server):
    """Shreds a run folder of `lines` with cross-batch dedup, both kinds of rename on, against one manifest."""
    clock = MovableClock(NOW)  # every entry of these March batches is live
    if request.param == "lake":
        manifest = LakeEventManifest(fs, lake, clock=clock)
    else:
        manifest = DynamoDbEventManifest(new_table(moto_server, "renames"), fs, clock=clock)
    options = ShredOptions(event_manifest=manifest)

    def run_batch(run: str, lines: list[str] | None = None):
        if lines is not None:
            write_run_folder(lake, run, lines)
        report = shred_run_folder(spark, fs, lake, run, options)
        check = check_batch_against_manifest(spark, fs, lake, manifest, report, claim_ids=True)
        assert check.passed, check.description
        return report, output_of(lake, run)

    return run_batch


def test_an_in_batch_rename_and_a_later_cross_batch_rename_of_the_same_line_differ(spark, shred):
    # Delivered twice to the first batch (an in-batch rename each, ordinals 0 and 1), once more to the next
    # (a cross-batch rename, ordinal 0): the same line and ordinal in two batches.
    report_1, first = shred(RUN_1, [REDELIVERED, REDELIVERED])
    report_2, second = shred(RUN_2, [REDELIVERED])
    assert report_1.duplicates[SYNTHETIC_RENAME] == 2 and report_2.duplicates[CROSS_BATCH_RENAME] == 1
    assert sorted(event_ids(first)) == sorted(documented_id(spark, RUN_1, REDELIVERED, n) for n in (0, 1))
    assert event_ids(second) == [documented_id(spark, RUN_2, REDELIVERED, 0)]
    combined = event_ids(first) + event_ids(second)
    assert len(set(combined)) == 3 and E not in combined, f"an event_id loaded twice: {combined}"
