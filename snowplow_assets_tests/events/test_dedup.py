import uuid
from datetime import datetime

import pytest

from snowplow_assets.events.dedup import (
    NATURAL_DUPLICATE,
    SYNTHETIC_ID_NAMESPACE,
    SYNTHETIC_RENAME,
    InBatchDedup,
    in_batch_decisions,
    uuid5,
)

KEYS = "row_id BIGINT, event_id STRING, fingerprint STRING, etl_tstamp TIMESTAMP, line_hash BIGINT"
T1, T2 = datetime(2026, 3, 1, 10, 0), datetime(2026, 3, 1, 11, 0)
A, B, C = "aaaaaaaa-0000-4000-8000-000000000000", "bbbbbbbb-0000-4000-8000-000000000000", "cccccccc-0000-4000-8000-000000000000"

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


def decide(spark, rows, dedup=InBatchDedup()):
    decisions = in_batch_decisions(spark.createDataFrame(rows, KEYS), dedup).collect()
    return {r.row_id: (r.action, r.new_event_id) for r in decisions}


def test_natural_duplicates_keep_the_earliest_etl_tstamp(spark):
    decisions = decide(spark, BATCH)
    assert decisions[0] == (NATURAL_DUPLICATE, None)
    assert 1 not in decisions
    assert 6 not in decisions


def test_identical_copies_keep_exactly_one(spark):
    decisions = decide(spark, BATCH)
    assert sorted(decisions.get(r, ("kept",))[0] for r in (2, 3)) == ["kept", NATURAL_DUPLICATE]


def test_tie_break_does_not_depend_on_input_order(spark):
    tie = [(0, A, "fp1", T1, 99), (1, A, "fp1", T1, 11)]
    assert decide(spark, tie) == {0: (NATURAL_DUPLICATE, None)}
    assert decide(spark, [(7, A, "fp1", T1, 11), (3, A, "fp1", T1, 99)]) == {3: (NATURAL_DUPLICATE, None)}


def test_empty_fingerprints_never_merge_and_are_renamed(spark):
    decisions = decide(spark, BATCH)
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
    # The documented name: original id | fingerprint | etl_tstamp | line hash | ordinal among identical keys.
    assert first[1][1] == str(uuid.uuid5(SYNTHETIC_ID_NAMESPACE, f"{A}|fp2|2026-03-01 10:00:00.000000|2|0"))


def test_natural_then_synthetic(spark):
    # Two copies of one payload and one different payload under the same id: one copy dropped,
    # the two remaining events renamed.
    rows = [(0, A, "fp1", T1, 1), (1, A, "fp1", T2, 1), (2, A, "fp9", T1, 5)]
    decisions = decide(spark, rows)
    assert decisions[1] == (NATURAL_DUPLICATE, None)
    assert decisions[0][0] == decisions[2][0] == SYNTHETIC_RENAME


def test_switches(spark):
    rows = [(0, A, "fp1", T1, 1), (1, A, "fp1", T2, 1), (2, A, "fp9", T1, 5)]
    assert {a for a, _ in decide(spark, rows, InBatchDedup(natural=True, synthetic=False)).values()} == {NATURAL_DUPLICATE}
    assert decide(spark, rows, InBatchDedup(natural=False, synthetic=False)) == {}


def test_synthetic_without_natural_is_rejected():
    with pytest.raises(ValueError, match="synthetic deduplication needs natural deduplication"):
        InBatchDedup(natural=False, synthetic=True)


@pytest.mark.parametrize("name", ["", "x", "événement|fp|2026", "a" * 300])
def test_uuid5_matches_python(spark, name):
    from pyspark.sql import functions as F

    [row] = spark.range(1).select(uuid5(F.lit(name)).alias("id")).collect()
    assert row.id == str(uuid.uuid5(SYNTHETIC_ID_NAMESPACE, name))
