import uuid
from datetime import datetime

import pytest
from pyspark.sql import functions as F

from snowplow_assets.events import dedup
from snowplow_assets.events.dedup import (
    CROSS_BATCH_DUPLICATE,
    CROSS_BATCH_RENAME,
    MANIFEST_ERROR,
    NATURAL_DUPLICATE,
    SYNTHETIC_ID_NAMESPACE,
    SYNTHETIC_RENAME,
    InBatchDedup,
    cross_batch_decisions,
    in_batch_decisions,
    uuid5,
)

KEYS = "row_id BIGINT, event_id STRING, fingerprint STRING, etl_tstamp TIMESTAMP, line_hash BIGINT"
RUN, LATER_RUN = "run=2026-03-01-10-00-00", "run=2026-03-02-10-00-00"
T1, T2 = datetime(2026, 3, 1, 10, 0), datetime(2026, 3, 1, 11, 0)
A, B, C = (
    "aaaaaaaa-0000-4000-8000-000000000000",
    "bbbbbbbb-0000-4000-8000-000000000000",
    "cccccccc-0000-4000-8000-000000000000",
)

# row_id, event_id, fingerprint, etl_tstamp, line_hash
BATCH = [
    (0, A, "fp1", T2, 10),  # natural duplicate of row 1, later etl_tstamp: dropped
    (1, A, "fp1", T1, 20),  # earliest copy: kept
    (2, B, "fp2", T1, 30),  # identical copies: exactly one kept
    (3, B, "fp2", T1, 30),
    (4, C, None, T1, 40),  # empty fingerprints never merge: both kept, and they share an id, so renamed
    (5, C, None, T1, 40),
    (6, "dddddddd-0000-4000-8000-000000000000", "fp3", T1, 50),  # unique: untouched
]


def decide(spark, rows, dedup=InBatchDedup(), run=RUN):
    decisions = in_batch_decisions(spark.createDataFrame(rows, KEYS), dedup, run).collect()
    return {r.row_id: (r.action, r.new_event_id) for r in decisions}


@pytest.fixture(scope="module")
def batch_decisions(spark):
    """BATCH's decisions with the default switches, decided once: the tests that read them share them (a test
    of determinism decides again itself)."""
    return decide(spark, BATCH)


def test_natural_duplicates_keep_the_earliest_etl_tstamp(batch_decisions):
    decisions = batch_decisions
    assert decisions[0] == (NATURAL_DUPLICATE, None)
    assert 1 not in decisions
    assert 6 not in decisions


def test_identical_copies_keep_exactly_one(batch_decisions):
    decisions = batch_decisions
    assert sorted(decisions.get(r, ("kept",))[0] for r in (2, 3)) == ["kept", NATURAL_DUPLICATE]


def test_tie_break_does_not_depend_on_input_order(spark):
    tie = [(0, A, "fp1", T1, 99), (1, A, "fp1", T1, 11)]
    assert decide(spark, tie) == {0: (NATURAL_DUPLICATE, None)}
    assert decide(spark, [(7, A, "fp1", T1, 11), (3, A, "fp1", T1, 99)]) == {3: (NATURAL_DUPLICATE, None)}


def test_empty_fingerprints_never_merge_and_are_renamed(batch_decisions):
    decisions = batch_decisions
    assert decisions[4][0] == decisions[5][0] == SYNTHETIC_RENAME
    assert decisions[4][1] != decisions[5][1]


def test_synthetic_duplicates_all_get_new_deterministic_ids(spark):
    rows = [(0, A, "fp1", T1, 1), (1, A, "fp2", T1, 2), (2, A, "fp3", T2, 3)]
    first, again = decide(spark, rows), decide(spark, list(reversed(rows)))
    assert {r: a for r, (a, _) in first.items()} == {0: SYNTHETIC_RENAME, 1: SYNTHETIC_RENAME, 2: SYNTHETIC_RENAME}
    assert first == again
    new_ids = [new for _, new in first.values()]
    assert len(set(new_ids)) == 3 and A not in new_ids
    assert all(uuid.UUID(i).version == 5 for i in new_ids)
    # The documented name: run folder | original id | fingerprint | etl_tstamp | line hash | ordinal among
    # identical keys.
    assert first[1][1] == str(uuid.uuid5(SYNTHETIC_ID_NAMESPACE, f"{RUN}|{A}|fp2|2026-03-01 10:00:00.000000|2|0"))


def test_the_same_duplicates_in_another_batch_get_other_ids_and_a_rerun_the_same(spark, batch_decisions):
    # At-least-once delivery puts the same lines in two run folders: each batch names its renames itself.
    first, rerun, later = batch_decisions, decide(spark, BATCH), decide(spark, BATCH, run=LATER_RUN)
    assert rerun == first
    assert {r: a for r, (a, _) in later.items()} == {r: a for r, (a, _) in first.items()}
    renamed_first = {new for a, new in first.values() if a == SYNTHETIC_RENAME}
    renamed_later = {new for a, new in later.values() if a == SYNTHETIC_RENAME}
    assert len(renamed_first) == len(renamed_later) == 2 and not renamed_first & renamed_later


def test_a_new_id_needs_a_run_folder_name(spark):
    with pytest.raises(ValueError, match="not a run folder name"):
        decide(spark, BATCH, run="run=2026-03-01|x")


def test_natural_then_synthetic(spark):
    # Two copies of one payload and one different payload under the same id: one copy dropped,
    # the two remaining events renamed.
    rows = [(0, A, "fp1", T1, 1), (1, A, "fp1", T2, 1), (2, A, "fp9", T1, 5)]
    decisions = decide(spark, rows)
    assert decisions[1] == (NATURAL_DUPLICATE, None)
    assert decisions[0][0] == decisions[2][0] == SYNTHETIC_RENAME


def test_switches(spark):
    rows = [(0, A, "fp1", T1, 1), (1, A, "fp1", T2, 1), (2, A, "fp9", T1, 5)]
    assert {a for a, _ in decide(spark, rows, InBatchDedup(natural=True, synthetic=False)).values()} == {
        NATURAL_DUPLICATE
    }
    assert decide(spark, rows, InBatchDedup(natural=False, synthetic=False)) == {}


def test_synthetic_without_natural_is_rejected():
    with pytest.raises(ValueError, match="synthetic deduplication needs natural deduplication"):
        InBatchDedup(natural=False, synthetic=True)


@pytest.mark.parametrize("name", ["", "x", "événement|fp|2026", "a" * 300])
def test_uuid5_matches_python(spark, name):
    from pyspark.sql import functions as F

    [row] = spark.range(1).select(uuid5(F.lit(name)).alias("id")).collect()
    assert row.id == str(uuid.uuid5(SYNTHETIC_ID_NAMESPACE, name))


# Cross-batch: the manifest's findings folded into the in-batch decisions (events/dedup.py, rules 1-4).

FINDINGS = "event_id STRING, fingerprint STRING, kind STRING, status STRING, error STRING, retries INT"
E, F_, G, H = (f"{c * 8}-0000-4000-8000-000000000000" for c in "ef98")


def cross_decide(spark, rows, findings, synthetic=True, run=RUN):
    keys = spark.createDataFrame(rows, KEYS)
    in_batch = in_batch_decisions(keys, InBatchDedup(), run)
    decisions = cross_batch_decisions(keys, in_batch, spark.createDataFrame(findings, FINDINGS), synthetic, run)
    return {r.row_id: (r.action, r.new_event_id, r.failure) for r in decisions.collect()}


CROSS_ROWS = [
    (0, A, "fp1", T1, 1),  # pair held by an earlier batch: dropped
    (1, B, "fp2", T1, 2),  # id held (another fingerprint): renamed
    (2, C, None, T1, 3),  # no fingerprint, id held: renamed, never dropped
    (3, E, "fp4", T1, 4),  # the manifest failed on its pair: a runtime error
    (4, F_, "fp5", T1, 5),  # in-batch synthetic twin of row 5, and its pair is held: dropped
    (5, F_, "fp6", T1, 6),  # stays an in-batch rename, with the in-batch id
    (6, F_, "fp6", T2, 6),  # in-batch natural duplicate of row 5: stays dropped in-batch
    (7, G, "fp7", T1, 7),  # untouched
    (8, H, "fp8", T1, 8),  # both its pair held and its id claim failed: the error wins
]
CROSS_FINDINGS = [
    (A, "fp1", "pair", "held", None, 0),
    (A, None, "id", "held", None, 0),
    (B, None, "id", "held", None, 0),
    (C, None, "id", "held", None, 0),
    (E, "fp4", "pair", "error", "event manifest write failed: ThrottlingException", 9),
    (F_, "fp5", "pair", "held", None, 0),
    (H, "fp8", "pair", "held", None, 0),
    (H, None, "id", "error", "event manifest write failed: AccessDeniedException", 0),
]


def test_cross_batch_findings_become_drops_renames_and_errors_in_order(spark):
    decisions = cross_decide(spark, CROSS_ROWS, CROSS_FINDINGS)
    in_batch = decide(spark, CROSS_ROWS)
    assert {r: a for r, (a, _, _) in decisions.items()} == {
        0: CROSS_BATCH_DUPLICATE,
        1: CROSS_BATCH_RENAME,
        2: CROSS_BATCH_RENAME,
        3: MANIFEST_ERROR,
        4: CROSS_BATCH_DUPLICATE,
        5: SYNTHETIC_RENAME,
        6: NATURAL_DUPLICATE,
        8: MANIFEST_ERROR,
    }
    assert decisions[5][1] == in_batch[5][1]
    # A cross-batch rename is named like an in-batch one: its id is unique in the batch, so ordinal 0.
    assert decisions[1][1] == str(uuid.uuid5(SYNTHETIC_ID_NAMESPACE, f"{RUN}|{B}|fp2|2026-03-01 10:00:00.000000|2|0"))
    assert decisions[2][1] == str(uuid.uuid5(SYNTHETIC_ID_NAMESPACE, f"{RUN}|{C}||2026-03-01 10:00:00.000000|3|0"))
    assert decisions[3][2] == "event manifest write failed: ThrottlingException"
    assert decisions[8][2] == "event manifest write failed: AccessDeniedException"
    assert all(failure is None for action, _, failure in decisions.values() if action != MANIFEST_ERROR)


def test_a_cross_batch_rename_never_takes_the_id_an_in_batch_rename_of_the_same_line_got_in_another_batch(spark):
    # The same line twice in one batch (in-batch renames, ordinals 0 and 1) and once in a later batch, where
    # the id is held by the first: a cross-batch rename, ordinal 0.
    twice = [(0, C, None, T1, 3), (1, C, None, T1, 3)]
    in_batch = {new for _, new in decide(spark, twice).values()}
    claimed = [(C, None, "id", "held", None, 0)]
    [(action, cross_batch, _)] = cross_decide(spark, [(0, C, None, T1, 3)], claimed, run=LATER_RUN).values()
    assert action == CROSS_BATCH_RENAME and len(in_batch) == 2 and cross_batch not in in_batch
    # Renamed again by a rerun of the later batch, it gets the same id.
    assert cross_decide(spark, [(0, C, None, T1, 3)], claimed, run=LATER_RUN)[0][1] == cross_batch


def test_cross_batch_synthetic_switched_off_keeps_ids_but_still_drops(spark):
    decisions = cross_decide(spark, CROSS_ROWS, CROSS_FINDINGS, synthetic=False)
    assert CROSS_BATCH_RENAME not in {a for a, _, _ in decisions.values()}
    assert 1 not in decisions and 2 not in decisions
    assert decisions[0][0] == CROSS_BATCH_DUPLICATE


def test_ids_whose_hashes_collide_are_only_candidates(spark, monkeypatch, batch_decisions):
    # Every id hashing alike makes every line a candidate: the decisions are the same, because the windows
    # group by the ids themselves.
    expected = batch_decisions  # decided with the real hash
    monkeypatch.setattr(dedup, "event_id_hash", lambda: F.lit(0).cast("bigint"))
    assert decide(spark, BATCH) == expected
    assert len(dedup.shared_id_candidates(spark.createDataFrame(BATCH, KEYS)).collect()) == len(BATCH)


def test_candidates_are_picked_without_shuffling_the_keys(spark):
    keys = spark.createDataFrame(BATCH, KEYS)
    candidates = dedup.shared_id_candidates(keys)
    plan = candidates._jdf.queryExecution().executedPlan().toString()
    assert "BroadcastHashJoin" in plan and "LeftSemi" in plan
    assert sorted(r.row_id for r in candidates.collect()) == [0, 1, 2, 3, 4, 5]
