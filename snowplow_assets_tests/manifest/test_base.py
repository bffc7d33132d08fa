"""The contract of the event manifest (manifest/base.py), held by both backends over several batches.

Most tests read the scenario of conftest.py, run once per backend.
"""

import json
import uuid
from datetime import date, datetime, timezone
from pathlib import Path

import pytest
from pyspark.sql import functions as F

from snowplow_assets.events.dedup import (
    CROSS_BATCH_DUPLICATE,
    CROSS_BATCH_RENAME,
    MANIFEST_ERROR,
    NATURAL_DUPLICATE,
    SYNTHETIC_ID_NAMESPACE,
    SYNTHETIC_RENAME,
)
from snowplow_assets.events.enriched_schema import FIELD_NAMES
from snowplow_assets.events.shred_batch import EVENT_MANIFEST, ShredOptions, shred_run_folder
from snowplow_assets.manifest.base import (
    DEFAULT_TTL_DAYS,
    SECONDS_PER_DAY,
    Batch,
    EventManifestUnavailable,
    batch_etl_time,
)
from snowplow_assets.manifest.dynamodb_event_manifest import (
    FORGET_COUNTS,
    DynamoDbConfig,
    DynamoDbEventManifest,
    create_table,
)
from snowplow_assets.manifest.lake_event_manifest import LakeEventManifest
from snowplow_assets.manifest.populate import populate_event_manifest
from snowplow_assets_tests.conftest import write_run_folder
from snowplow_assets_tests.manifest.conftest import (
    B1,
    B2,
    B3,
    B5,
    BATCHES,
    ETL,
    NOW,
    REDELIVERED,
    REGION,
    A,
    C,
    D,
    E,
    MovableClock,
    N,
    S,
    U,
    X,
    Y,
    Z,
    entries,
    line,
    new_table,
    write_shredded_output,
)

DUPLICATE_FOLDER = "shredded-types/vendor=com.snowplowanalytics.snowplow/name=duplicate/format=jsonschema/version=1-0-0"


def event_ids(output):
    return [line.split("\t")[6] for line in output["atomic-events"]]


def renamed_id(spark, run: str, line: str, event_id: str, fingerprint: str | None) -> str:
    """The documented new id: uuid5 of run folder|id|fingerprint|etl_tstamp|xxhash64(line)|ordinal (events/dedup.py)."""
    [row] = spark.range(1).select(F.xxhash64(F.lit(line)).alias("h")).collect()
    etl = dict(zip(FIELD_NAMES, line.split("\t"), strict=True))["etl_tstamp"]
    return str(uuid.uuid5(SYNTHETIC_ID_NAMESPACE, f"{run}|{event_id}|{fingerprint or ''}|{etl}000|{row.h}|0"))


def originals(output) -> dict[str, str]:
    """rootId -> originalEventId of every duplicate context."""
    return {
        json.loads(x)["hierarchy"]["rootId"]: json.loads(x)["data"]["originalEventId"]
        for x in output.get(DUPLICATE_FOLDER, [])
    }


def roots(output) -> set[str]:
    """The rootId of every entity."""
    return {
        json.loads(x)["hierarchy"]["rootId"]
        for folder, lines in output.items()
        if folder.startswith("shredded-types")
        for x in lines
    }


def decided(step):
    return {action: n for action, n in step.report.duplicates.items() if n}


def manifest_counts(step):
    counts = step.report.event_manifest.counts
    return counts["pairs_recorded"], counts["ids_claimed"], counts["pairs_held"], counts["ids_held"]


def test_batch_etl_time_is_the_earliest_etl_tstamp_and_the_same_on_a_rerun(scenario):
    first, rerun = scenario.steps["B1"].report.event_manifest, scenario.steps["B1 rerun"].report.event_manifest
    expected = int(datetime(2026, 3, 1, 10, 5, tzinfo=timezone.utc).timestamp())
    assert first.batch == rerun.batch == Batch(B1, expected)
    assert first.ttl == rerun.ttl == expected + DEFAULT_TTL_DAYS * SECONDS_PER_DAY
    # A batch whose events carry no etl_tstamp falls back to its run folder's time, as stably.
    assert batch_etl_time(None, B1) == int(datetime(2026, 3, 1, 10, 0, tzinfo=timezone.utc).timestamp())


def test_the_first_batch_processed_records_every_pair_and_id(scenario):
    step = scenario.steps["B3"]
    assert decided(step) == {}
    assert sorted(event_ids(step.output)) == sorted([X, Y, E])
    assert manifest_counts(step) == (2, 3, 0, 0)  # E has no fingerprint: its id alone


def test_cross_batch_natural_duplicates_are_dropped_and_counted(scenario):
    step = scenario.steps["B2"]
    report = step.report
    assert decided(step) == {CROSS_BATCH_DUPLICATE: 2, CROSS_BATCH_RENAME: 3, SYNTHETIC_RENAME: 1}
    assert A not in event_ids(step.output)
    assert (report.lines_read, report.good, report.bad, report.removed) == (7, 5, 0, 2)
    assert report.lines_read == report.good + report.bad + report.removed
    assert report.event_manifest.counts["pairs_held"] == 2  # (A, fpA) and (S, fpS1), both held by B1
    assert report.phase_seconds[EVENT_MANIFEST] > 0
    assert scenario.entries_before_expiry[(A, "fpA")] == scenario.entries_before_expiry[(S, "fpS1")] == B1


def test_cross_batch_synthetic_duplicates_are_renamed_like_in_batch_ones(spark, scenario):
    output = scenario.steps["B2"].output
    c2, n2, s2, _ = (line for line in BATCHES[B2] if line.split("\t")[6] in (C, N, S, D) and "fpS1" not in line)
    new_c = renamed_id(spark, B2, c2, C, "fpC2")
    new_n = renamed_id(spark, B2, n2, N, None)
    new_s = renamed_id(spark, B2, s2, S, "fpS2")  # an in-batch synthetic duplicate whose twin was dropped
    new_e = renamed_id(spark, B2, REDELIVERED, E, None)
    assert sorted(event_ids(output)) == sorted([new_c, new_n, new_s, new_e, D])
    assert originals(output) == {new_c: C, new_n: N, new_s: S, new_e: E}
    assert roots(output) == {new_c, new_n, new_s, new_e, D}, "an entity kept an id its event no longer has"


def test_one_line_redelivered_in_three_batches_gets_a_new_id_per_batch_and_the_same_on_a_rerun(spark, scenario):
    """The very same line, E's, without a fingerprint, in B3, B1 and B2 (events/dedup.py): never a natural
    duplicate, so every batch after the first renames its copy; a new id made from the event alone would be
    the same in each of them, and one event_id would be loaded twice."""
    outputs = {label: scenario.steps[label].output for label in ("B3", "B1", "B2")}
    new_ids = {label: renamed_id(spark, scenario.steps[label].run, REDELIVERED, E, None) for label in ("B1", "B2")}
    assert E in event_ids(outputs["B3"])  # the first batch processed claimed the id and keeps it
    assert scenario.entries_before_expiry[(E, None)] == B3
    for label, new_id in new_ids.items():
        assert new_id in event_ids(outputs[label]) and E not in event_ids(outputs[label])
        assert originals(outputs[label])[new_id] == E
        assert roots(outputs[label]) == set(event_ids(outputs[label])), "an entity kept an id its event no longer has"
    combined = [i for output in outputs.values() for i in event_ids(output) if i in (E, *new_ids.values())]
    assert len(combined) == 3 and len(set(combined)) == 3, f"an event_id loaded twice: {combined}"
    # The rerun of B1, after B2 ran, names its copy exactly as its first run did.
    assert new_ids["B1"] in event_ids(scenario.steps["B1 rerun"].output)
    assert scenario.steps["B1 rerun"].output == outputs["B1"]


def test_null_fingerprints_are_never_natural_duplicates_across_batches(scenario):
    # N has no fingerprint in B1 and B2: never dropped, only renamed in B2 because B1 recorded its id.
    b2_renamed = [json.loads(x)["data"]["originalEventId"] for x in scenario.steps["B2"].output[DUPLICATE_FOLDER]]
    assert N in event_ids(scenario.steps["B1"].output) and N in b2_renamed
    recorded = scenario.entries_before_expiry
    assert recorded[(N, None)] == B1
    assert not [key for key in recorded if key[0] == N and key[1] is not None], (
        "a pair was recorded without a fingerprint"
    )


def test_out_of_order_processing_the_first_batch_processed_owns(spark, scenario):
    # B3's run folder is a day newer than B1's, but B3 was processed first: B1 drops its copy of X and
    # renames its Y and E, whose ids B3 recorded.
    step = scenario.steps["B1"]
    assert decided(step) == {CROSS_BATCH_DUPLICATE: 1, CROSS_BATCH_RENAME: 2}
    new_y = renamed_id(spark, B1, BATCHES[B1][-2], Y, "fpY1")
    new_e = renamed_id(spark, B1, REDELIVERED, E, None)
    assert sorted(event_ids(step.output)) == sorted([A, C, N, S, U, new_y, new_e])
    assert manifest_counts(step) == (5, 5, 1, 3)  # X's pair and the ids of X, Y and E are held by B3
    owners = scenario.entries_before_expiry
    assert (
        owners[(X, "fpX")] == owners[(Y, "fpY2")] == owners[(Y, None)] == owners[(X, None)] == owners[(E, None)] == B3
    )
    assert owners[(Y, "fpY1")] == owners[(A, "fpA")] == B1


def test_rerunning_an_old_batch_after_newer_ones_gives_the_same_output(scenario):
    first, rerun = scenario.steps["B1"], scenario.steps["B1 rerun"]
    assert rerun.output == first.output
    assert rerun.report.duplicates == first.report.duplicates
    # Its own keys, which B2 tried to take, are its own again; what B3 holds is still held.
    assert manifest_counts(rerun) == manifest_counts(first)
    owned = {key for key, run in scenario.entries_before_expiry.items() if run == B1}
    assert owned == {(A, "fpA"), (C, "fpC1"), (S, "fpS1"), (U, "fpU"), (Y, "fpY1"), (A, None), (C, None), (N, None),
                     (S, None), (U, None)}  # fmt: skip


def test_every_event_id_is_unique_across_batches(scenario):
    ids = [i for label in ("B1", "B2", "B3") for i in event_ids(scenario.steps[label].output)]
    assert len(ids) == 15 and len(set(ids)) == len(ids)


def test_no_event_is_a_runtime_error_when_the_manifest_answers(scenario):
    for step in scenario.steps.values():
        assert step.report.runtime_errors == 0 and MANIFEST_ERROR not in decided(step)
        assert step.output["bad"] == []
        assert NATURAL_DUPLICATE not in decided(step)


def test_expired_entries_no_longer_cause_drops_or_renames(scenario):
    step = scenario.steps["B5"]
    assert decided(step) == {}
    assert sorted(event_ids(step.output)) == sorted([A, C])
    entries = scenario.after_expiry["entries"]
    assert entries[(A, "fpA")] == entries[(A, None)] == entries[(C, "fpC3")] == entries[(C, None)] == B5
    if scenario.backend == "lake":
        # Compaction removed the three expired batches: index and folders hold B5 alone.
        assert step.report.event_manifest.counts["expired_batches_removed"] == 3
        assert scenario.after_expiry["indexed_batches"] == [B5]
        assert [f.split(".")[0] for f in scenario.after_expiry["entry_folders"]] == [B5]
        assert (C, "fpC1") not in entries
    else:
        # DynamoDB deletes expired items in its own time; until then the condition ignores them.
        assert entries[(C, "fpC1")] == B1 and entries[(U, "fpU")] == B1


@pytest.mark.parametrize("backend", ["lake", "dynamodb"])
def test_one_event_enriched_long_ago_does_not_make_its_batchs_entries_expire_as_written(
    spark, lake, fs, moto_server, backend
):
    """The batch's etlTime is its earliest etl_tstamp (FORMATS.md §5); counted from it alone, a replayed event of
    the previous summer made B2's entries expire as written, and the next batch loaded B2's event X again."""
    clock = MovableClock(NOW)
    if backend == "lake":
        manifest = LakeEventManifest(fs, lake, clock=clock)
    else:
        manifest = DynamoDbEventManifest(new_table(moto_server, "replayed"), fs, clock=clock)
    replayed = "2025-07-01 00:00:00.000"  # more than 180 days before NOW
    write_run_folder(lake, B2, [line(X, "fpX", ETL[B2]), line(D, "fpD", replayed)])
    first = shred_run_folder(spark, fs, lake, B2, ShredOptions(event_manifest=manifest)).event_manifest
    assert first.batch.etl_time == int(datetime(2025, 7, 1, tzinfo=timezone.utc).timestamp())
    assert first.ttl == int(datetime(2026, 3, 1, 11, tzinfo=timezone.utc).timestamp()) + 180 * SECONDS_PER_DAY

    write_run_folder(lake, B3, [line(X, "fpX", ETL[B3])])
    later = shred_run_folder(spark, fs, lake, B3, ShredOptions(event_manifest=manifest))
    assert {a: n for a, n in later.duplicates.items() if n} == {CROSS_BATCH_DUPLICATE: 1} and later.good == 0

    # A back-fill from the output (`event-manifest populate`) dates the entries the same way.
    populate_event_manifest(lambda: spark, fs, lake, manifest, date(2026, 3, 1), claim_ids=True)
    found = manifest.lookup(spark.createDataFrame([(X, "fpX")], "event_id string, fingerprint string")).collect()
    assert [(row.run, row.ttl) for row in found] == [(B2, first.ttl)]


@pytest.mark.parametrize("backend", ["lake", "dynamodb"])
def test_a_batch_run_again_without_some_events_no_longer_holds_them(spark, lake, fs, moto_server, backend):
    """A file of B2 landed in B1 by mistake, and B1 was shredded; the file was moved and B1 run again. DynamoDB
    kept B1's items of the moved events, written one by one, and B2 then dropped Y as a copy of an event B1 no
    longer loaded: Y was loaded nowhere. The lake rewrites a batch's entries whole, and always got it right."""
    clock = MovableClock(NOW)
    if backend == "lake":
        manifest = LakeEventManifest(fs, lake, clock=clock)
    else:
        manifest = DynamoDbEventManifest(new_table(moto_server, "moved"), fs, clock=clock)
    options = ShredOptions(event_manifest=manifest)
    write_run_folder(lake, B1, [line(Z, "fpZ1", ETL[B1])])
    shred_run_folder(spark, fs, lake, B1, options)
    write_run_folder(lake, B2, [line(X, "fpX", ETL[B2]), line(Y, "fpY", ETL[B2]), line(Z, "fpZ2", ETL[B2])])
    first = shred_run_folder(spark, fs, lake, B2, options)
    assert {a: n for a, n in first.duplicates.items() if n} == {CROSS_BATCH_RENAME: 1}, "Z's id is B1's"

    fs.delete(lake.enriched_run(B2))
    write_run_folder(lake, B2, [line(X, "fpX", ETL[B2])])
    rerun = shred_run_folder(spark, fs, lake, B2, options)
    if backend == "dynamodb":  # Y's pair and id, Z's second pair; Z's id is B1's and stays
        assert {k: rerun.event_manifest.counts[k] for k in FORGET_COUNTS.values()} == {
            "stale_entries_removed": 3, "stale_entries_not_owned": 1, "stale_entries_not_removed": 0,
        }  # fmt: skip
    keys = [(Z, "fpZ1"), (Z, "fpZ2"), (Z, None), (X, "fpX"), (X, None), (Y, "fpY"), (Y, None)]
    held = manifest.lookup(spark.createDataFrame(keys, "event_id STRING, fingerprint STRING")).collect()
    assert {(r.event_id, r.fingerprint): r.run for r in held} == {
        (Z, "fpZ1"): B1, (Z, None): B1, (X, "fpX"): B2, (X, None): B2,
    }  # fmt: skip

    write_run_folder(lake, B3, [line(Y, "fpY", ETL[B3]), line(Z, "fpZ2", ETL[B3])])
    later = shred_run_folder(spark, fs, lake, B3, options)
    assert {a: n for a, n in later.duplicates.items() if n} == {CROSS_BATCH_RENAME: 1} and later.good == 2


@pytest.mark.parametrize("backend", ["lake", "dynamodb"])
def test_a_missing_manifest_stops_the_batch_before_any_work_and_the_named_remedy_repairs_it(
    spark, lake, fs, moto_server, backend
):
    write_run_folder(lake, B2, [line(D, "fpD", ETL[B2])])
    if backend == "lake":
        # The lake's missing table: the index names entry folders that are gone (deleted by hand, a bucket
        # lifecycle rule, a partial copy). Checked without them, copies of their events would load again.
        manifest = LakeEventManifest(fs, lake, clock=MovableClock(NOW))
        etl_time = int(datetime(2026, 3, 1, 10, 5, tzinfo=timezone.utc).timestamp())
        lost = {run: {"folder": f"{run}.{'0' * 16}", "etl_time": etl_time, "ttl": etl_time + 180 * SECONDS_PER_DAY,
                      "recorded_at": "2026-03-02T10:06:00+00:00"} for run in (B1, B3)}  # fmt: skip
        Path(lake.event_manifest).mkdir(parents=True)
        Path(lake.event_manifest_index).write_text(json.dumps({"format": 1, "version": 1, "batches": lost}))
        expected = rf"lost the entries of 2 batch\(es\), {B1}, {B3}: .* `snowplow-assets event-manifest populate --since 2026-03-01`"
    else:
        manifest = DynamoDbEventManifest(DynamoDbConfig(f"missing-{uuid.uuid4().hex[:8]}", REGION, moto_server), fs)
        expected = r"'missing-\w+' .* does not exist; create it with `snowplow-assets event-manifest create-table`"

    with pytest.raises(EventManifestUnavailable, match=expected):
        shred_run_folder(spark, fs, lake, B2, ShredOptions(event_manifest=manifest))
    assert not Path(lake.uri("shredded")).exists()

    if backend == "lake":
        # B3 loaded a copy of B1's event before the manifest existed: it owns nothing, and is rewritten so.
        write_shredded_output(lake, B1, [line(A, "fpA", ETL[B1])])
        write_shredded_output(lake, B3, [line(A, "fpA", ETL[B3])])
        populate_event_manifest(lambda: spark, fs, lake, manifest, date(2026, 3, 1), claim_ids=True)
        assert entries(spark, manifest) == {(A, "fpA"): B1, (A, None): B1}
        assert manifest.read_index().batches[B3].folder is None
    else:
        create_table(manifest.config)
    manifest.verify()


def test_a_run_folder_named_with_no_instant_counts_its_ttl_from_its_etl_time(spark, lake, fs):
    """RUN_FOLDER takes `run=2026-02-30-…`, and such a folder is registered and shredded. Once the ttl also counted
    from the folder's time (2026-11-28), its shred failed, and its index entry, recorded before, made the whole
    lake event manifest unreadable."""
    manifest = LakeEventManifest(fs, lake, clock=MovableClock(NOW))
    odd = "run=2026-02-30-10-00-00"
    write_run_folder(lake, odd, [line(X, "fpX", ETL[B2])])
    first = shred_run_folder(spark, fs, lake, odd, ShredOptions(event_manifest=manifest)).event_manifest
    assert first.ttl == first.batch.etl_time + DEFAULT_TTL_DAYS * SECONDS_PER_DAY
    assert manifest.read_index().batches[odd].ttl == first.ttl

    write_run_folder(lake, B3, [line(X, "fpX", ETL[B3])])
    later = shred_run_folder(spark, fs, lake, B3, ShredOptions(event_manifest=manifest))
    assert {a: n for a, n in later.duplicates.items() if n} == {CROSS_BATCH_DUPLICATE: 1}
    # A populate from any day takes the folder: it has no date to compare.
    populate_event_manifest(lambda: spark, fs, lake, manifest, date(2026, 3, 5), claim_ids=True)
    found = manifest.lookup(spark.createDataFrame([(X, "fpX")], "event_id string, fingerprint string")).collect()
    assert [(row.run, row.ttl) for row in found] == [(odd, first.ttl)]
