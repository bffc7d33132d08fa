"""Upserting a model's Parquet table: rows replaced by key, only the days from the lookback floor rewritten."""

import os
from datetime import date, datetime
from pathlib import Path

import pytest

from snowplow_assets.lake import Lake
from snowplow_assets.storage import LocalFileSystem
from snowplow_assets.web.upsert import TableSpec, read_table, table_partitions, upsert

SPEC = TableSpec("things", key="id", schema="id STRING, value BIGINT, start_tstamp TIMESTAMP")


def rows(spark, *values):
    return spark.createDataFrame(
        [(key, value, datetime.fromisoformat(start)) for key, value, start in values], SPEC.schema
    )


def contents(spark, lake):
    return sorted((r.id, r.value, r.start_date) for r in read_table(spark, LocalFileSystem(), lake, SPEC).collect())


def test_upsert_replaces_by_key_and_rewrites_only_days_from_the_floor(spark, tmp_path):
    lake, fs = Lake(str(tmp_path / "lake")), LocalFileSystem()
    staging = lake.web_staging("0123456789abcdef")
    first = upsert(
        spark, fs, lake, SPEC,
        rows(spark, ("old", 1, "2026-01-01 10:00:00"), ("a", 1, "2026-03-01 10:00:00"), ("b", 1, "2026-03-02 23:59:59")),
        staging, lookback_days=1,
    )  # fmt: skip
    assert (first.rows, first.partitions_written) == (3, ["2026-01-01", "2026-03-01", "2026-03-02"])
    assert contents(spark, lake) == [("a", 1, "2026-03-01"), ("b", 1, "2026-03-02"), ("old", 1, "2026-01-01")]
    old_day = Path(table_partitions(fs, lake, SPEC)["2026-01-01"])
    old_files = {p.name: os.stat(p).st_ino for p in old_day.iterdir()}

    # b's start moved a day earlier: its old row (and so its old day) goes, a is untouched, c is new.
    second = upsert(
        spark, fs, lake, SPEC,
        rows(spark, ("b", 2, "2026-03-01 12:00:00"), ("c", 2, "2026-03-03 00:00:00")),
        staging, lookback_days=1,
    )  # fmt: skip
    assert second.floor == date(2026, 2, 28)
    assert (second.rows, second.partitions_written, second.partitions_removed) == (
        2, ["2026-03-01", "2026-03-03"], ["2026-03-02"],
    )  # fmt: skip
    assert contents(spark, lake) == [("a", 1, "2026-03-01"), ("b", 2, "2026-03-01"), ("c", 2, "2026-03-03"),
                                     ("old", 1, "2026-01-01")]  # fmt: skip
    assert {p.name: os.stat(p).st_ino for p in old_day.iterdir()} == old_files  # before the floor: not rewritten
    assert sorted(r.id for r in second.updated.collect()) == ["b", "c"]
    assert not any(Path(staging).parent.glob("*/things/region/start_date=*"))  # staged days were moved in


def test_a_promised_earliest_day_saves_staging_and_is_enforced(spark, tmp_path):
    lake, fs = Lake(str(tmp_path / "lake")), LocalFileSystem()
    staging = lake.web_staging("0123456789abcdef")
    report = upsert(spark, fs, lake, SPEC, rows(spark, ("a", 1, "2026-03-05 10:00:00")), staging, 0,
                    earliest=date(2026, 3, 5))  # fmt: skip
    assert (report.rows, report.floor) == (1, date(2026, 3, 5))
    assert not Path(staging, "things", "new").exists()
    with pytest.raises(ValueError, match="start on 2026-03-04, before the promised 2026-03-05; nothing was published"):
        upsert(
            spark, fs, lake, SPEC, rows(spark, ("a", 2, "2026-03-04 10:00:00")), staging, 0, earliest=date(2026, 3, 5)
        )
    assert contents(spark, lake) == [("a", 1, "2026-03-05")]


def test_replaced_keys_without_a_new_row_lose_theirs(spark, tmp_path):
    lake, fs = Lake(str(tmp_path / "lake")), LocalFileSystem()
    staging = lake.web_staging("0123456789abcdef")
    upsert(spark, fs, lake, SPEC, rows(spark, ("a", 1, "2026-03-01 10:00:00"), ("b", 1, "2026-03-02 10:00:00"),
                                       ("c", 1, "2026-03-02 11:00:00")), staging, 0)  # fmt: skip
    keys = spark.createDataFrame([("a",), ("b",)], "id STRING")
    report = upsert(spark, fs, lake, SPEC, rows(spark, ("b", 2, "2026-03-02 09:00:00")), staging, 0,
                    earliest=date(2026, 3, 1), replaced_keys=keys)  # fmt: skip
    assert (report.rows, report.partitions_removed) == (1, ["2026-03-01"])
    assert contents(spark, lake) == [("b", 2, "2026-03-02"), ("c", 1, "2026-03-02")]
    with pytest.raises(ValueError, match="replaced_keys needs earliest"):
        upsert(spark, fs, lake, SPEC, rows(spark), staging, 0, replaced_keys=keys)


def test_rows_without_a_start_are_an_error_and_nothing_is_written(spark, tmp_path):
    lake, fs = Lake(str(tmp_path / "lake")), LocalFileSystem()
    no_start = spark.createDataFrame([("a", 1, None)], SPEC.schema)
    with pytest.raises(ValueError, match="1 new things rows have no start_tstamp"):
        upsert(spark, fs, lake, SPEC, no_start, lake.web_staging("0123456789abcdef"), 0)
    assert table_partitions(fs, lake, SPEC) == {}


def test_table_paths_stay_inside_the_lake(tmp_path):
    lake = Lake(str(tmp_path / "lake"))
    for bad in ("../etc", "web/x", "Users", ""):
        with pytest.raises(ValueError):
            lake.web_model(bad)
    with pytest.raises(ValueError):
        lake.web_staging("../x")
    assert lake.web_model("page_views") == f"{lake.root}/web/page_views"
