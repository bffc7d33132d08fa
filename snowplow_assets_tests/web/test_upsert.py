"""Upserting a model's Parquet table: rows replaced by key, only the days from the lookback floor rewritten."""

import itertools
import json
import os
import re
import uuid
from datetime import date, datetime
from pathlib import Path

import boto3
import pytest

from snowplow_assets.lake import Lake
from snowplow_assets.storage import LocalFileSystem, S3FileSystem, data_files, path_below
from snowplow_assets.web.upsert import FILE_LIST, TableSpec, day_floor, publish, read_table, table_partitions, upsert
from snowplow_assets_tests.web.killed import Killed, KilledAfterMovingAside, KilledAtS3Request, KilledAtStep

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


# A swap cut short -------------------------------------------------------------------------------------------


def day_folder(lake, day):
    return f"{lake.web_model(SPEC.model)}/start_date={day}"


def held(fs, lake, day):
    """The data files of a day, and the file list beside them (None without one)."""
    folder = day_folder(lake, day)
    files = fs.list_files(folder)
    listed = json.loads(fs.read_text(f"{folder}/{FILE_LIST}")) if fs.exists(f"{folder}/{FILE_LIST}") else None
    return sorted(path_below(folder, f) for f in data_files(folder, files)), listed


def test_an_upsert_killed_between_the_renames_of_a_day_swap_loses_no_row(spark, tmp_path):
    lake, fs = Lake(str(tmp_path / "lake")), LocalFileSystem()
    staging = lake.web_staging("0123456789abcdef")
    table = lake.web_model(SPEC.model)
    first = rows(
        spark, ("a", 1, "2026-03-01 10:00:00"), ("b", 1, "2026-03-01 11:00:00"), ("c", 1, "2026-03-02 10:00:00")
    )
    upsert(spark, fs, lake, SPEC, first, staging, 0)

    # Only a is new; b shares its day. The run is killed once the old day is moved aside: the reviewer's state.
    again = rows(spark, ("a", 2, "2026-03-01 10:00:00"))
    with pytest.raises(Killed):
        upsert(spark, KilledAfterMovingAside(table), lake, SPEC, again, staging, 0)
    assert [re.sub("[0-9a-f]{12}$", "<hex>", e.name) for e in fs.list_dir(table)] == [
        ".start_date=2026-03-01.replaced-<hex>", "start_date=2026-03-02",
    ]  # fmt: skip

    # The first read puts the whole old day back; the next run's upsert of the same rows then rewrites it.
    assert contents(spark, lake) == [("a", 1, "2026-03-01"), ("b", 1, "2026-03-01"), ("c", 1, "2026-03-02")]
    report = upsert(spark, fs, lake, SPEC, again, staging, 0)
    assert report.partitions_written == ["2026-03-01", "2026-03-02"]  # every day from the floor on
    assert contents(spark, lake) == [("a", 2, "2026-03-01"), ("b", 1, "2026-03-01"), ("c", 1, "2026-03-02")]

    # A swap that completes leaves the day folders alone, each with the list of its data files.
    assert [e.name for e in fs.list_dir(table)] == ["start_date=2026-03-01", "start_date=2026-03-02"]
    for day in ("2026-03-01", "2026-03-02"):
        files, listed = held(fs, lake, day)
        assert files and listed == files
    assert [e.name for e in fs.list_dir(f"{staging}/{SPEC.model}/region") if e.is_dir] == []  # all moved in


OLD = ["part-00000-0ld.c000.snappy.parquet", "part-00001-0ld.c000.snappy.parquet", "part-00002-0ld.c000.snappy.parquet"]
NEW = ["part-00000-n3w.c000.snappy.parquet", "part-00001-n3w.c000.snappy.parquet", "part-00002-n3w.c000.snappy.parquet"]


def stage_day(fs, lake, token, names):
    region = f"{lake.web_staging(token)}/{SPEC.model}/region"
    for name in names:
        fs.write_text(f"{region}/start_date=2026-03-01/{name}", name)
    fs.write_text(f"{region}/_SUCCESS", "")
    return region


@pytest.fixture(params=["local", "s3"])
def killable_lakes(request, tmp_path):
    """A function of a number n: a new lake, its file system, and the same file system killed at its n-th
    step (local: a move or a delete; S3: a copy or delete request)."""
    if request.param == "local":
        return lambda n: (Lake(str(tmp_path / f"lake{n}")), LocalFileSystem(), KilledAtStep(n))
    moto_server = request.getfixturevalue("moto_server")
    client = boto3.client("s3", endpoint_url=moto_server, region_name="us-east-1")
    bucket = f"lake-{uuid.uuid4().hex[:12]}"
    client.create_bucket(Bucket=bucket)
    return lambda n: (Lake(f"s3://{bucket}/lake{n}"), S3FileSystem(client), S3FileSystem(KilledAtS3Request(client, n)))


@pytest.mark.parametrize("old_listed", [True, False], ids=["old-day-listed", "old-day-without-list"])
def test_a_day_swap_killed_at_any_step_leaves_the_whole_old_day_or_the_whole_new_one(killable_lakes, old_listed):
    """Killed at each step of publishing in turn, the next read finds the day whole: its old files until the
    new ones are all in place, then the new ones. A copy cut short is never taken for the day, whether it is
    the old one being moved aside or deleted (the day folder then holds the new files), or the new one being
    moved in. The old day may be one published before the file lists, without one."""
    floor = date(2026, 3, 1)
    outcomes = []
    for step in itertools.count(1):
        lake, fs, killed = killable_lakes(step)
        old = stage_day(fs, lake, "00000000", OLD)
        if old_listed:
            publish(fs, lake, SPEC, old, floor)
        else:
            fs.move(f"{old}/start_date=2026-03-01", day_folder(lake, "2026-03-01"))
        new = stage_day(fs, lake, "11111111", NEW)
        try:
            publish(killed, lake, SPEC, new, floor)
            done = True
        except Killed:
            done = False
        assert list(table_partitions(fs, lake, SPEC)) == ["2026-03-01"], step
        assert [e.name for e in fs.list_dir(lake.web_model(SPEC.model))] == ["start_date=2026-03-01"], step
        files, listed = held(fs, lake, "2026-03-01")
        assert files in (OLD, NEW), step
        assert listed == (None if files == OLD and not old_listed else files), step
        outcomes.append(files == NEW)
        if done:
            break
    # Old until some step, new from then on; and a kill can fall on either side.
    assert outcomes == sorted(outcomes) and not outcomes[0] and outcomes[-1], outcomes
    assert len(outcomes) > 3, outcomes


def test_day_floor_takes_in_every_day_before_the_year_1():
    """An event time in the year 0 makes a day partition no Python date holds, and a lookback from early in the
    year 1 falls before any: as a bound, date.min then stands for every day (pipeline test: test_edges.py)."""
    assert day_floor("2026-03-01", 1) == date(2026, 2, 28) and day_floor(date(2026, 3, 1)) == date(2026, 3, 1)
    assert day_floor("0000-06-15") == day_floor("0001-01-05", 30) == day_floor(date(1, 1, 5), 30) == date.min
    with pytest.raises(ValueError):
        day_floor("2026-02-30")
