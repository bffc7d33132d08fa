import gzip
import json
from pathlib import Path

import pytest

from snowplow_assets.cdc.batches import cut_batches
from snowplow_assets.cdc.history import (
    HISTORY_COLUMNS,
    HISTORY_SCHEMA,
    IngestedLanding,
    Window,
    ingest_landing,
    read_ingested,
    read_records,
    record_files,
)
from snowplow_assets.cdc.landing import NOT_UTF8, UNPAIRED_SURROGATE
from snowplow_assets.cdc.latest import latest_table
from snowplow_assets.lake import Lake
from snowplow_assets.storage import LocalFileSystem
from snowplow_assets_tests.cdc.builders import (
    ISSUE_MODELS_YAML,
    PARTIAL,
    debezium,
    event,
    models,
    partial,
    raw_record,
    record,
    write_landing,
)

MODELS = models(ISSUE_MODELS_YAML + "  orders:\n    topics: [{topic: shop.orders, contract: partial}]\n")
LANDING = "landing=2026-03-01-10-00-00"
H10, H11 = 1_772_359_200_000, 1_772_362_800_000  # 2026-03-01 10:00 and 11:00 UTC
LINES = [
    partial(1, H10 + 1, 0, {"email": "a@x", "state": "active"}),
    partial(1, H11 + 5, 1, None),
    debezium("c", 2, H10 + 2, 0, {"email": "b@x", "score": 1}),
    debezium("u", 2, H11 + 6, 1, {"email": "b@x", "score": 2.5}),
    debezium("d", 2, H11 + 7, 2),
    record("shop.customers", None, '{"id": 2}', H11 + 7, 3),  # the tombstone after the delete
    event("INSERT", 3, H10 + 3, 0, {"email": "c@x", "vip": True}),
    record("shop.orders", {"id": "o1", "total": 9.5}, "o1", H10 + 4, 0),
    record("shop.unknown", {"id": 1}, "1", H10, 0),
    "{broken",
    "",
]


@pytest.fixture(scope="module")
def ingested(spark, tmp_path_factory):
    lake, fs = Lake(str(tmp_path_factory.mktemp("history") / "lake")), LocalFileSystem()
    folder = write_landing(lake, LANDING, LINES[:6])
    (folder / "part-00001.json.gz").write_bytes(gzip.compress("".join(l + "\n" for l in LINES[6:]).encode()))
    (folder / ".part-00000.json.crc").write_text("not a record\n")
    (folder / "_temporary").mkdir()
    (folder / "_temporary" / "part-9.json").write_text("not a record either\n")
    first = ingest_landing(spark, fs, lake, LANDING, MODELS)
    rows = _rows(spark, lake)
    bad = _bad_rows(lake)
    files = sorted(str(p.relative_to(lake.root)) for p in Path(lake.root, "cdc").rglob("*.parquet"))
    second = ingest_landing(spark, fs, lake, LANDING, MODELS)
    return lake, first, rows, bad, files, second


def _rows(spark, lake):
    frames = [
        spark.read.schema(HISTORY_SCHEMA).parquet(LocalFileSystem().spark_read_path(p)).select(*HISTORY_COLUMNS)
        for p in (lake.cdc_history(LANDING), lake.cdc_deletes(LANDING))
    ]
    return sorted(tuple(r) for r in frames[0].unionByName(frames[1]).collect())


def _bad_rows(lake):
    return sorted(
        (json.loads(line) for p in Path(lake.cdc_bad(LANDING)).glob("part-*") for line in p.read_text().splitlines()),
        key=lambda r: r["reason"],
    )


def test_layout_by_model_and_hour(ingested):
    _, _, _, _, files, _ = ingested
    folders = {str(Path(f).parent) for f in files}
    assert folders == {
        f"cdc/history/{LANDING}/model=customers/hour=2026-03-01-10",
        f"cdc/history/{LANDING}/model=customers/hour=2026-03-01-11",
        f"cdc/history/{LANDING}/model=orders/hour=2026-03-01-10",
        f"cdc/deletes/{LANDING}/model=customers/hour=2026-03-01-11",
    }


def test_every_line_is_accounted_for(ingested):
    _, report, _, _, _, _ = ingested
    assert (report.files, report.lines, report.blank_lines) == (2, 11, 1)
    assert (report.changes, report.deletes, report.bad) == (5, 3, 2)
    assert report.lines == report.blank_lines + report.changes + report.deletes + report.bad
    assert report.bad_reasons == {"unknown_topic": 1, "invalid_json": 1}


def test_the_summary_records_how_each_topic_was_read(ingested):
    _, report, _, _, _, _ = ingested
    assert report.topics == {
        "customer_events": "customers/event/customerId",
        "customers_raw": "customers/partial/id",
        "shop.customers": "customers/debezium/id",
        "shop.orders": "orders/partial/id",
        "shop.unknown": None,
    }
    assert IngestedLanding.from_json(report.to_json()) == report


def test_names_no_model_could_declare_are_not_recorded(spark, lake):
    lines = [
        record("customers_raw", {"id": 1}, "1"),
        record("not a topic!", {"id": 2}, "2"),
        record("x" * 250, {}, "3"),
    ]
    write_landing(lake, "landing=names", lines)
    report = ingest_landing(spark, LocalFileSystem(), lake, "landing=names", MODELS)
    assert report.bad_reasons == {"unknown_topic": 2} and report.topics == {"customers_raw": "customers/partial/id"}


def test_a_record_outside_the_years_1_to_9999_is_a_bad_row_and_the_lake_goes_on(spark, lake):
    """It was a change in a `hour=+10000-01-01-00` folder, which every later cut and latest view failed to read
    back, for every model, until the landing was removed."""
    far = [
        partial(2, 253_402_300_800_000, 1, {"email": "y"}),
        record(PARTIAL, {"id": 3}, "3", "0000-06-01T00:00:00Z", 2),
    ]
    write_landing(
        lake, LANDING, [partial(1, H10, 0, {"email": "x"}), *far, record("shop.orders", {"id": "o"}, "o", H10, 0)]
    )
    fs = LocalFileSystem()
    report = ingest_landing(spark, fs, lake, LANDING, MODELS)
    assert (report.changes, report.bad, report.bad_reasons) == (2, 2, {"invalid_timestamp": 2})
    results = cut_batches(spark, fs, lake, MODELS, now_ms=H11)
    assert {r.model: (r.status, r.batch.rows if r.batch else None) for r in results} == {
        "customers": ("cut", 1),
        "orders": ("cut", 1),
    }
    table, _ = latest_table(spark, fs, lake, MODELS.model("customers"))
    assert [row["id"] for row in table.collect()] == ["1"]


def test_a_line_that_is_not_exactly_one_json_object_is_a_bad_row_and_every_line_is_accounted_for(spark, lake):
    """Spark's reader took the first object of a line and ignored the rest: two records landed without a newline
    between them were one good record, the second lost. It also wrote NaN as "NaN", and a number a double cannot
    hold as "Infinity" or 0.0."""
    two_records = partial(2, H10, 2, {"email": "b"}) + partial(3, H10, 3, {"email": "c"})
    lines = [
        partial(1, H10, 1, {"email": "a"}),
        two_records,
        partial(4, H10, 4, {"email": "d"}) + " trailing",
        partial(5, H10, 5, {"email": "e"}) + "]",
        raw_record(PARTIAL, '{"id": 6, "n": NaN}', "6", H10, 6),
        raw_record(PARTIAL, '{"id": 7, "n": 1e400}', "7", H10, 7),
        raw_record(PARTIAL, '{"id": 8, "n": 1.5e-400}', "8", H10, 8),
        raw_record(PARTIAL, '{"id": 9, "a": 1, "a": 2}', "9", H10, 9),
        record(PARTIAL, '{"id": 10} {"id": 11}', "10", H10, 10),
        "",
    ]
    write_landing(lake, "landing=malformed", lines)
    report = ingest_landing(spark, LocalFileSystem(), lake, "landing=malformed", MODELS)
    assert (report.lines, report.blank_lines, report.changes, report.deletes, report.bad) == (10, 1, 1, 0, 8)
    assert report.lines == report.blank_lines + report.changes + report.deletes + report.bad + report.ignored
    assert report.bad_reasons == {"invalid_json": 7, "invalid_value": 1}
    written = spark.read.parquet(LocalFileSystem().spark_read_path(lake.cdc_history("landing=malformed")))
    assert [(r["__key"], r["__offset"]) for r in written.collect()] == [("1", 1)]
    bad = {row["line"]: row for row in map(json.loads, _lines_of(Path(lake.cdc_bad("landing=malformed"))))}
    assert set(bad) == set(lines[1:-1])
    assert bad[two_records]["reason"] == "invalid_json"
    assert bad[two_records]["message"] == "the line has text after its JSON object (one record per line)"


def test_keys_that_spark_would_read_alike_are_bad_rows_and_a_cr_is_white_space(spark, lake):
    """Spark reads a byte that is not UTF-8 as U+FFFD and half a surrogate pair as `?`: until 2026-11-28
    `caf\xe9` and `caf\xe8` were one key, and so were `cut\\ud83d`, `cut\\ud83c` and `cut?`. A `\r`, JSON
    white space, ended the line there, and the record was two bad rows."""
    latin1 = [partial(1, H10, 1, {"email": "a"}).replace('"1"', '"caf\xe9"'),
              partial(2, H10, 2, {"email": "b"}).replace('"2"', '"caf\xe8"')]  # fmt: skip
    halves = [record(PARTIAL, {"email": "c"}, key, H10, offset) for offset, key in ((3, "cut\ud83d"), (4, "cut\ud83c"))]
    kept = [
        record(PARTIAL, {"email": "d"}, "cut?", H10, 5),
        record(PARTIAL, {"email": "e"}, "smile\U0001f600", H10, 6),  # a whole pair, escaped
        record(PARTIAL, {"email": "f"}, "cut\\ud83d", H10, 7),  # an escaped backslash, then text
        partial(8, H10, 8, {"email": "g"}).replace(", ", ",\r"),
    ]
    folder = write_landing(lake, "landing=bytes", [*halves, *kept])
    (folder / "part-00001.json").write_bytes(b"".join(line.encode("latin-1") + b"\r\n" for line in latin1))
    report = ingest_landing(spark, LocalFileSystem(), lake, "landing=bytes", MODELS)
    assert (report.lines, report.changes, report.bad, report.bad_reasons) == (8, 4, 4, {"invalid_json": 4})
    written = spark.read.parquet(LocalFileSystem().spark_read_path(lake.cdc_history("landing=bytes")))
    assert sorted(r["__key"] for r in written.collect()) == ["8", "cut?", "cut\\ud83d", "smile\U0001f600"]
    bad = {row["line"]: row["message"] for row in map(json.loads, _lines_of(Path(lake.cdc_bad("landing=bytes"))))}
    assert {bad[line] for line in halves} == {"the line " + UNPAIRED_SURROGATE}
    assert [message for line, message in bad.items() if line not in halves] == [NOT_UTF8, NOT_UTF8]


def _lines_of(folder: Path) -> list[str]:
    return [line for part in sorted(folder.glob("part-*")) for line in part.read_text().splitlines()]


def test_records_of_ignored_topics_are_counted_and_written_nowhere(spark, lake):
    ignoring = models(ISSUE_MODELS_YAML + "ignored_topics: ['shop.*']\n")
    lines = [
        record("customers_raw", {"id": 1}, "1", H10, 0),
        record("shop.orders", {"id": "o1"}, "o1", H10, 0),
        record("shop.payments", None, "p1", H10, 0),
        record("shop.payments", {"id": "p2"}, "p2", "yesterday", 1),
        "",
    ]
    write_landing(lake, "landing=ignoring", lines)
    report = ingest_landing(spark, LocalFileSystem(), lake, "landing=ignoring", ignoring)
    assert (report.lines, report.blank_lines, report.changes, report.deletes, report.bad, report.ignored) == (
        5, 1, 1, 0, 1, 2,
    )  # fmt: skip
    assert report.lines == report.blank_lines + report.changes + report.deletes + report.bad + report.ignored
    assert report.bad_reasons == {"invalid_timestamp": 1}
    assert report.topics == {
        "customers_raw": "customers/partial/id",
        "shop.orders": "ignored",
        "shop.payments": "ignored",
    }
    assert set(report.models) == {"customers"}
    written = spark.read.parquet(
        *map(
            LocalFileSystem().spark_read_path,
            [lake.cdc_history("landing=ignoring"), lake.cdc_deletes("landing=ignoring")],
        )
    )
    assert [(r["__topic"], r["__key"]) for r in written.collect()] == [("customers_raw", "1")]
    assert IngestedLanding.from_json(report.to_json()) == report


def test_summaries_per_model(ingested):
    _, report, _, _, _, _ = ingested
    customers, orders = report.models["customers"], report.models["orders"]
    assert (customers.changes, customers.deletes) == (4, 3)
    assert (customers.min_ms, customers.max_ms, customers.max_change_ms, customers.max_delete_ms) == (
        H10 + 1,
        H11 + 7,
        H11 + 6,
        H11 + 7,
    )
    assert customers.columns == {
        "id": "integer",
        "email": "string",
        "state": "string",
        "score": "number",
        "customerId": "integer",
        "vip": "boolean",
    }
    assert (orders.changes, orders.deletes, orders.max_delete_ms) == (1, 0, None)
    assert orders.columns == {"id": "string", "total": "number"}


def test_history_and_delete_rows(ingested):
    lake, _, rows, _, _, _ = ingested
    by_key = {}
    for row in rows:
        by_key.setdefault((row[0], row[1]), []).append(row)
    [insert, update] = [r for r in by_key[("customers", "2")] if r[3] != "delete"]
    assert insert[2:8] == (_ts(H10 + 2), "insert", "shop.customers", 0, 0, '{"email":"b@x","id":2,"score":1}')
    assert json.loads(insert[8])["payload"]["op"] == "c" and insert[9] == LANDING
    assert update[3] == "update" and json.loads(update[7]) == {"email": "b@x", "id": 2, "score": 2.5}
    deletes = [r for r in rows if r[3] == "delete"]
    assert sorted((r[1], r[5], r[6]) for r in deletes) == [("1", 0, 1), ("2", 0, 2), ("2", 0, 3)]
    assert all(r[7] is None for r in deletes)
    assert [r for r in rows if r[0] == "orders"][0][1] == "o1"


def test_bad_rows_keep_the_line_and_the_reason(ingested):
    _, _, _, bad, _, _ = ingested
    assert [(b["reason"], b["line"]) for b in bad] == [("invalid_json", "{broken"), ("unknown_topic", LINES[8])]
    assert bad[1]["topic"] == "shop.unknown" and bad[1]["landing"] == LANDING and bad[1]["file"] == "part-00001.json.gz"
    assert bad[1]["message"] == "no model declares topic shop.unknown"


def test_ingesting_again_changes_nothing_but_the_token(spark, ingested):
    lake, first, rows, bad, files, second = ingested
    assert _rows(spark, lake) == rows and _bad_rows(lake) == bad
    assert second.token != first.token
    assert {**second.__dict__, "token": "", "ingested_at": ""} == {**first.__dict__, "token": "", "ingested_at": ""}
    assert read_ingested(LocalFileSystem(), lake)[LANDING] == second
    assert IngestedLanding.from_json(second.to_json()) == second


def test_windows_read_only_overlapping_hours_and_exact_rows(spark, ingested):
    lake, _, rows, _, _, _ = ingested
    fs = LocalFileSystem()

    def folders(window):
        return sorted(
            {str(Path(f).parent.relative_to(lake.root)) for f in record_files(fs, lake, LANDING, "customers", window)}
        )

    history, deletes = f"cdc/history/{LANDING}/model=customers", f"cdc/deletes/{LANDING}/model=customers"
    assert folders(Window(None, H10 + 999)) == [f"{history}/hour=2026-03-01-10"]
    assert folders(Window(H10 + 999, None)) == [
        f"{deletes}/hour=2026-03-01-11",
        f"{history}/hour=2026-03-01-10",
        f"{history}/hour=2026-03-01-11",
    ]
    assert folders(Window(H11, None)) == [f"{deletes}/hour=2026-03-01-11", f"{history}/hour=2026-03-01-11"]
    window = Window(H10 + 2, H11 + 6)
    frame, files = read_records(
        spark, fs, lake, {("customers", LANDING): window, ("orders", LANDING): Window(None, H10)}
    )
    got = sorted(tuple(r) for r in frame.collect())
    expected = sorted(r[:8] for r in rows if r[0] == "customers" and _ts(H10 + 2) < r[2] <= _ts(H11 + 6))
    assert got == expected and [r[1] for r in got] == ["1", "2", "3"]
    assert files == {
        ("customers", LANDING): len(record_files(fs, lake, LANDING, "customers", window)),
        ("orders", LANDING): 1,
    }


def test_a_changed_landing_replaces_its_outputs(spark, tmp_path):
    lake, fs = Lake(str(tmp_path / "lake")), LocalFileSystem()
    write_landing(lake, LANDING, [partial(1, H10, 0, {"a": 1}), "oops"])
    ingest_landing(spark, fs, lake, LANDING, MODELS)
    write_landing(lake, LANDING, [partial(2, H11, 0, {"a": 2})])
    report = ingest_landing(spark, fs, lake, LANDING, MODELS)
    assert (report.changes, report.bad) == (1, 0)
    assert [r[1] for r in _rows(spark, lake)] == ["2"]
    assert _bad_rows(lake) == [] and not list(Path(lake.root, "cdc", ".staging").iterdir())


@pytest.mark.parametrize("name", ["../x", ".hidden", "a/b", "a..b", "", "x" * 200])
def test_landing_names_are_validated(spark, lake, name):
    with pytest.raises(ValueError, match="landing folder name"):
        ingest_landing(spark, LocalFileSystem(), lake, name, MODELS)


def test_missing_landing_folder(spark, lake):
    with pytest.raises(FileNotFoundError):
        ingest_landing(spark, LocalFileSystem(), lake, "landing=nope", MODELS)


def _ts(ms):
    from datetime import UTC, datetime

    return datetime.fromtimestamp(ms / 1000, UTC).replace(tzinfo=None)
