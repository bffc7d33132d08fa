import json
import time
import uuid
from pathlib import Path

import pytest
from pyspark.sql import functions as F

from snowplow_assets.events import shred_batch
from snowplow_assets.events.dedup import SYNTHETIC_ID_NAMESPACE, InBatchDedup
from snowplow_assets.events.enriched_schema import FIELD_NAMES
from snowplow_assets.events.shred_batch import (
    DECISIONS,
    FULL_PARSE,
    OUTPUT,
    PARSE,
    PUBLISH,
    SUMMARY,
    ShredOptions,
    shred_run_folder,
)
from snowplow_assets_tests.conftest import read_lines, write_run_folder
from snowplow_assets_tests.events.builders import UA_PARSER, WEB_PAGE, event_line, link_click

RUN = "run=2026-03-01-10-00-00"
ID_A = "aaaaaaaa-1111-4111-8111-111111111111"
ID_B = "bbbbbbbb-2222-4222-8222-222222222222"
ID_C = "cccccccc-3333-4333-8333-333333333333"
ID_DOTTED = "ffffffff-6666-4666-8666-666666666666"
PAGE = "a0e3f1b2-0000-4000-8000-00000000cafe"

A = event_line(event_id=ID_A, event_fingerprint="fpA")
A_LATER_COPY = event_line(event_id=ID_A, event_fingerprint="fpA", etl_tstamp="2026-03-01 10:06:00.000")
B = event_line(
    event_id=ID_B,
    event="unstruct",
    event_fingerprint="fpB",
    collector_tstamp="2026-03-01 10:01:00.5",
    unstruct_event=link_click("https://shop.example.com/sale"),
    dvce_ismobile="1",
    geo_latitude="1e7",
)
C1 = event_line(event_id=ID_C, event_fingerprint="fpC1", page_url="https://shop.example.com/one")
C2 = event_line(event_id=ID_C, event_fingerprint="fpC2", page_url="https://shop.example.com/two")
NOT_TSV = "this line has no tab"
BAD_TIMESTAMP = event_line(event_id="dddddddd-4444-4444-8444-444444444444", collector_tstamp="yesterday")
GOLDEN_INPUT = [A, A_LATER_COPY, B, C1, C2, NOT_TSV, BAD_TIMESTAMP]


def renamed_id(spark, line: str, fingerprint: str) -> str:
    """The new id the README promises: uuid5 of run folder|id|fingerprint|etl_tstamp|xxhash64(line)|ordinal."""
    [row] = spark.range(1).select(F.xxhash64(F.lit(line)).alias("h")).collect()
    return str(uuid.uuid5(SYNTHETIC_ID_NAMESPACE, f"{RUN}|{ID_C}|{fingerprint}|2026-03-01 10:05:00.000000|{row.h}|0"))


def atomic(line: str, **changes: str) -> list[str]:
    """The 128 atomic fields expected for an input line: its fields without the three JSON ones."""
    values = dict(zip(FIELD_NAMES, line.split("\t")))
    values.update(changes)
    return [values[n] for n in FIELD_NAMES if n not in ("contexts", "unstruct_event", "derived_contexts")]


def entity(vendor, name, version, data, root_id, root_tstamp="2026-03-01 10:00:00.123"):
    return {
        "schema": {"vendor": vendor, "name": name, "format": "jsonschema", "version": version},
        "data": data,
        "hierarchy": {
            "rootId": root_id,
            "rootTstamp": root_tstamp,
            "refRoot": "events",
            "refTree": ["events", name],
            "refParent": "events",
        },
    }


# `golden`, GOLDEN_INPUT shredded once for the session with the default options, is in ../conftest.py.


def test_golden_report_times_each_phase_without_overlap(golden):
    _, report = golden
    phases = report.phase_seconds
    # No event manifest here; B (a timestamp and a double in other forms) and the two bad lines are left to
    # the checks of their pending fields, and B, found good, then to the full parser.
    assert list(phases) == [PARSE, FULL_PARSE, DECISIONS, SUMMARY, OUTPUT, PUBLISH]
    assert all(seconds > 0 for seconds in phases.values())
    # Every phase but the marker's publishing lies between the start and the completion the report names.
    elapsed = (report.completed - report.started).total_seconds()
    assert sum(phases.values()) - phases[PUBLISH] <= elapsed


def test_golden_atomic_events(spark, golden):
    lake, _ = golden
    c1, c2 = renamed_id(spark, C1, "fpC1"), renamed_id(spark, C2, "fpC2")
    expected = [
        atomic(A),
        # collector_tstamp re-rendered with milliseconds, the double in plain notation
        atomic(B, collector_tstamp="2026-03-01 10:01:00.500", geo_latitude="10000000"),
        atomic(C1, event_id=c1),
        atomic(C2, event_id=c2),
    ]
    written = [line.split("\t") for line in read_lines(Path(lake.shredded_good(RUN)) / "atomic-events")]
    assert all(len(fields) == 128 for fields in written)
    assert sorted(written) == sorted(expected)


def test_golden_shredded_types(spark, golden):
    lake, _ = golden
    c1, c2 = renamed_id(spark, C1, "fpC1"), renamed_id(spark, C2, "fpC2")
    types = Path(lake.shredded_good(RUN)) / "shredded-types"
    snowplow = "com.snowplowanalytics.snowplow"

    def lines(name, version):
        folder = types / f"vendor={snowplow}" / f"name={name}" / "format=jsonschema" / f"version={version}"
        return sorted((json.loads(line) for line in read_lines(folder)), key=lambda e: e["hierarchy"]["rootId"])

    def by_root(entities):
        return sorted(entities, key=lambda e: e["hierarchy"]["rootId"])

    page, ua = {"id": PAGE}, {"useragentFamily": "Firefox"}
    assert lines("web_page", "1-0-0") == by_root(
        [
            entity(snowplow, "web_page", "1-0-0", page, ID_A),
            entity(snowplow, "web_page", "1-0-0", page, ID_B, "2026-03-01 10:01:00.500"),
            entity(snowplow, "web_page", "1-0-0", page, c1),
            entity(snowplow, "web_page", "1-0-0", page, c2),
        ]
    )
    assert lines("ua_parser_context", "1-0-0") == by_root(
        [
            entity(snowplow, "ua_parser_context", "1-0-0", ua, ID_A),
            entity(snowplow, "ua_parser_context", "1-0-0", ua, ID_B, "2026-03-01 10:01:00.500"),
            entity(snowplow, "ua_parser_context", "1-0-0", ua, c1),
            entity(snowplow, "ua_parser_context", "1-0-0", ua, c2),
        ]
    )
    assert lines("link_click", "1-0-1") == [
        entity(
            snowplow,
            "link_click",
            "1-0-1",
            {"targetUrl": "https://shop.example.com/sale"},
            ID_B,
            "2026-03-01 10:01:00.500",
        )
    ]
    assert lines("duplicate", "1-0-0") == by_root(
        [
            entity(snowplow, "duplicate", "1-0-0", {"originalEventId": ID_C}, c1),
            entity(snowplow, "duplicate", "1-0-0", {"originalEventId": ID_C}, c2),
        ]
    )
    # Exactly these four type folders, nothing else under shredded-types.
    assert sorted(p.relative_to(types).as_posix() for p in types.glob("*/*/*/*")) == sorted(
        f"vendor={snowplow}/name={n}/format=jsonschema/version={v}"
        for n, v in [
            ("web_page", "1-0-0"),
            ("ua_parser_context", "1-0-0"),
            ("link_click", "1-0-1"),
            ("duplicate", "1-0-0"),
        ]
    )


def test_entity_json_has_exactly_schema_data_hierarchy_in_that_order(golden):
    lake, _ = golden
    for line in read_lines(Path(lake.shredded_good(RUN)) / "shredded-types"):
        assert list(json.loads(line)) == ["schema", "data", "hierarchy"]


def test_golden_bad_rows(golden):
    lake, _ = golden
    rows = [json.loads(line) for line in read_lines(lake.shredded_bad(RUN))]
    processor = rows[0]["data"]["processor"]
    assert processor["artifact"] == "snowplow-assets"
    assert sorted(rows, key=lambda r: r["data"]["payload"]) == sorted(
        [
            {
                "schema": "iglu:com.snowplowanalytics.snowplow.badrows/loader_parsing_error/jsonschema/2-0-0",
                "data": {"processor": processor, "failure": {"type": "NotTSV"}, "payload": NOT_TSV},
            },
            {
                "schema": "iglu:com.snowplowanalytics.snowplow.badrows/loader_parsing_error/jsonschema/2-0-0",
                "data": {
                    "processor": processor,
                    "failure": {
                        "type": "RowDecodingError",
                        "errors": [
                            {
                                "type": "InvalidValue",
                                "key": "collector_tstamp",
                                "value": "yesterday",
                                "message": "Value is not a timestamp (yyyy-MM-dd HH:mm:ss[.SSS])",
                            }
                        ],
                    },
                    "payload": BAD_TIMESTAMP,
                },
            },
        ],
        key=lambda r: r["data"]["payload"],
    )


def test_golden_report_and_completion_marker(golden):
    lake, report = golden
    assert (report.lines_read, report.good, report.bad, report.removed, report.renamed) == (7, 4, 2, 1, 2)
    assert report.lines_read == report.good + report.bad + report.removed
    marker = json.loads(Path(lake.shredding_complete(RUN)).read_text())
    data = marker["data"]
    assert (
        marker["schema"] == "iglu:com.snowplowanalytics.snowplow.storage.rdbloader/shredding_complete/jsonschema/2-0-1"
    )
    assert data["base"] == lake.shredded_good(RUN) + "/"
    assert data["typesInfo"]["transformation"] == "SHREDDED"
    assert sorted((t["schemaKey"], t["snowplowEntity"]) for t in data["typesInfo"]["types"]) == [
        ("iglu:com.snowplowanalytics.snowplow/duplicate/jsonschema/1-0-0", "CONTEXT"),
        ("iglu:com.snowplowanalytics.snowplow/link_click/jsonschema/1-0-1", "SELF_DESCRIBING_EVENT"),
        (UA_PARSER, "CONTEXT"),
        (WEB_PAGE, "CONTEXT"),
    ]
    assert all(t["format"] == "JSON" for t in data["typesInfo"]["types"])
    assert data["timestamps"]["min"] == "2026-03-01T10:00:00.123Z"
    assert data["timestamps"]["max"] == "2026-03-01T10:01:00.500Z"
    assert data["count"] == {"good": 4, "bad": 2} and data["compression"] == "NONE"
    counts = {(t.schema, t.kind): t.count for t in report.entity_types}
    assert counts[(WEB_PAGE, "CONTEXT")] == 4 and counts[(UA_PARSER, "CONTEXT")] == 4


def test_the_collector_tstamp_range_holds_any_valid_year_and_ignores_the_local_time_zone(spark, lake, fs, monkeypatch):
    """Year 0 is a valid four-digit year that Python's datetime cannot hold: one such line failed every run
    of its folder. And the range was read in the Python process's local time zone, then labelled UTC."""
    earliest = event_line(event_id=ID_A, collector_tstamp="0000-06-15 00:00:00.000")
    latest = event_line(event_id=ID_B, collector_tstamp="9999-12-31 23:59:59.999")
    write_run_folder(lake, RUN, [earliest, A, latest])
    monkeypatch.setenv("TZ", "Asia/Tokyo")
    time.tzset()
    try:
        report = shred_run_folder(spark, fs, lake, RUN)
    finally:
        monkeypatch.undo()
        time.tzset()
    assert (report.good, report.bad) == (3, 0)
    timestamps = json.loads(Path(lake.shredding_complete(RUN)).read_text())["data"]["timestamps"]
    assert (timestamps["min"], timestamps["max"]) == ("0000-06-15T00:00:00.000Z", "9999-12-31T23:59:59.999Z")


def test_the_output_pass_leaves_the_session_settings_as_it_found_them(spark, golden):
    # It writes without sorting by partition through session settings, for its own write only.
    assert spark.conf.get("spark.sql.optimizer.plannedWrite.enabled") == "true"
    assert spark.conf.get("spark.sql.maxConcurrentOutputFileWriters") == "0"


def test_no_staging_left_behind(golden):
    lake, _ = golden
    assert list(Path(lake.uri("shredded", ".staging")).iterdir()) == []


def test_gzip_input_parts_hidden_and_marker_files_and_gzip_output(spark, lake, fs):
    """One shred proves both sides of gzip:
    - input: gzip and plain part files are read alike; hidden files (.crc), marker files (_committed_*) and
      _temporary folders are not read;
    - output: with compression GZIP every part file written is gzip, holds every event, and the marker says so."""
    folder = write_run_folder(lake, RUN, [A, B], compress=True)
    write_run_folder(lake, RUN, [C1], name="part-00001", success_marker=False)
    (folder / ".part-00000.gz.crc").write_text("garbage\n")
    (folder / "_committed_123").write_text("garbage\n")
    (folder / "_temporary").mkdir()
    (folder / "_temporary" / "part-9").write_text("garbage\n")
    report = shred_run_folder(spark, fs, lake, RUN, ShredOptions(compression="GZIP"))
    assert (report.input_files, report.lines_read, report.good, report.bad) == (2, 3, 3, 0)
    parts = list((Path(lake.shredded_good(RUN)) / "atomic-events").glob("part-*"))
    assert parts and all(p.name.endswith(".gz") for p in parts)
    assert len(read_lines(Path(lake.shredded_good(RUN)) / "atomic-events")) == 3
    assert json.loads(Path(lake.shredding_complete(RUN)).read_text())["data"]["compression"] == "GZIP"


def test_an_event_id_in_upper_case_is_the_same_event_written_in_lower_case(spark, lake, fs):
    """Snowplow's shredder reads event_id as a UUID: in either case one event, written in lower case. Until
    2026-11-28 the two copies were two events (and two keys of the event manifest)."""
    upper = event_line(event_id=ID_A.upper(), event_fingerprint="fpA", etl_tstamp="2026-03-01 10:06:00.000")
    renamed = event_line(event_id=ID_C.upper(), event_fingerprint="fpC2")
    write_run_folder(lake, RUN, [A, upper, C1, renamed])
    report = shred_run_folder(spark, fs, lake, RUN)
    assert (report.good, report.removed, report.renamed) == (3, 1, 2)  # both events of ID_C are renamed
    ids = [line.split("\t")[6] for line in read_lines(Path(lake.shredded_good(RUN)) / "atomic-events")]
    assert ID_A in ids and all(i == i.lower() for i in ids)
    entity_roots = [
        json.loads(line)["hierarchy"]["rootId"] for line in read_lines(Path(lake.shredded_good(RUN)) / "shredded-types")
    ]
    assert entity_roots and all(root == root.lower() for root in entity_roots)


def test_rerun_replaces_output_and_is_deterministic_and_dedup_switched_off_keeps_duplicates(spark, lake, fs):
    """One series of shreds of the same run folder proves:
    - a rerun writes the same output, renamed ids included;
    - a shred of the folder once its lines changed replaces the previous output: none of its files survive,
      nor the type folder of its duplicate contexts, and the marker is written again;
    - with deduplication switched off, natural and synthetic duplicates are all kept, with their ids;
    - with natural deduplication alone, natural duplicates are removed and synthetic ones kept, not renamed."""
    write_run_folder(lake, RUN, [C1, C2, B])
    shred_run_folder(spark, fs, lake, RUN)
    good = Path(lake.shredded_good(RUN))
    first = {p.relative_to(good): p.read_text() for p in good.rglob("part-*")}
    atomic_first = read_lines(good / "atomic-events")
    assert any("duplicate" in str(p) for p in first)  # C1 and C2 were renamed
    shred_run_folder(spark, fs, lake, RUN)
    assert read_lines(good / "atomic-events") == atomic_first  # same ids on a rerun

    write_run_folder(lake, RUN, [A, A_LATER_COPY, C1, C2])  # the folder now holds other lines
    report = shred_run_folder(spark, fs, lake, RUN, ShredOptions(dedup=InBatchDedup(natural=False, synthetic=False)))
    assert (report.good, report.removed, report.renamed) == (4, 0, 0)
    after = {p.relative_to(good) for p in good.rglob("part-*")}
    assert not (after & set(first)), "files of the previous output survived the replacement"
    # Only the new lines, C's no longer renamed as they were in the previous output.
    assert sorted(line.split("\t")[6] for line in read_lines(good / "atomic-events")) == [ID_A, ID_A, ID_C, ID_C]
    assert not any("duplicate" in str(p) for p in after)
    assert Path(lake.shredding_complete(RUN)).exists()

    report = shred_run_folder(spark, fs, lake, RUN, ShredOptions(dedup=InBatchDedup(natural=True, synthetic=False)))
    assert (report.good, report.removed, report.renamed) == (3, 1, 0)


def _snapshot(lake):
    good = Path(lake.shredded_good(RUN))
    return {p.relative_to(good): p.read_bytes() for p in good.rglob("*") if p.is_file()}


def test_completion_marker_is_written_last_and_a_crash_before_or_while_publishing_never_leaves_a_marked_output(
    spark, lake, fs, monkeypatch
):
    """One series of shreds of the same run folder proves:
    - the completion marker is written last, after the data;
    - a failure before publishing keeps the previous complete output, byte for byte, and leaves no staging;
    - a crash while publishing (the good output being replaced) leaves the output unmarked, so no reader can
      mistake it for complete."""
    write_run_folder(lake, RUN, [A, B])
    writes = []
    original = type(fs).write_text

    def record(self, uri, text):
        writes.append((uri, sorted(p.name for p in Path(lake.shredded_good(RUN)).rglob("part-*"))))
        return original(self, uri, text)

    with monkeypatch.context() as recording:
        recording.setattr(type(fs), "write_text", record)
        shred_run_folder(spark, fs, lake, RUN)
    assert writes[-1][0] == lake.shredding_complete(RUN) and writes[-1][1], "marker written before the data"
    before = _snapshot(lake)
    write_run_folder(lake, RUN, [C1])

    def crash(*args, **kwargs):
        raise OSError("disk full")

    with monkeypatch.context() as crashing:
        crashing.setattr(shred_batch, "_arrange_layout", crash)
        with pytest.raises(OSError, match="disk full"):
            shred_run_folder(spark, fs, lake, RUN)
    assert _snapshot(lake) == before
    assert list(Path(lake.uri("shredded", ".staging")).iterdir()) == []

    assert Path(lake.shredding_complete(RUN)).exists()  # the previous output is still complete and marked
    replace = type(fs).replace_tree

    def crash_on_good(self, source, target):
        if target == lake.shredded_good(RUN):
            raise OSError("killed")
        return replace(self, source, target)

    monkeypatch.setattr(type(fs), "replace_tree", crash_on_good)
    with pytest.raises(OSError, match="killed"):
        shred_run_folder(spark, fs, lake, RUN)
    assert not Path(lake.shredding_complete(RUN)).exists(), "output a reader could mistake for complete"


@pytest.mark.parametrize(
    "lose, problem",
    [
        ("line", r"lines: parse pass 5, output pass 4"),
        ("decision", r"decisions matched 3 of 3 lines, 1 on a different event"),
    ],
)
def test_output_that_does_not_account_for_every_line_is_not_published(spark, lake, fs, monkeypatch, lose, problem):
    """The output pass reads the staging and the decisions again; if a line went missing, or a decision
    reached a line other than its own, the counts no longer add up and nothing is published."""
    write_run_folder(lake, RUN, [A, A_LATER_COPY, C1, C2, NOT_TSV])
    real_write_outputs = shred_batch.write_outputs

    def losing(fs, parsed, decisions, *rest):
        first = parsed.agg(F.min("row_id")).first()[0]
        if lose == "line":
            parsed = parsed.where(F.col("row_id") != first)
        else:  # a rename of C's moved onto the batch's first line, A's
            one = decisions.where(F.col("event_id") == ID_C).orderBy("row_id").limit(1)
            decisions = one.withColumn("row_id", F.lit(first)).unionByName(decisions.subtract(one))
        return real_write_outputs(fs, parsed, decisions, *rest)

    monkeypatch.setattr(shred_batch, "write_outputs", losing)
    with pytest.raises(RuntimeError, match=rf"not published, lines are not accounted for: .*{problem}"):
        shred_run_folder(spark, fs, lake, RUN)
    assert not Path(lake.shredding_complete(RUN)).exists()
    assert not Path(lake.shredded_good(RUN)).exists()


@pytest.mark.parametrize("name", ["../x", "run=../../etc", "run=2026-03-01", "x/run=2026-03-01-10-00-00", ""])
def test_run_folder_names_are_validated(lake, name):
    with pytest.raises(ValueError):
        lake.shredded_good(name)


def test_lines_no_loader_can_take_as_written_become_bad_rows_the_rest_is_published_and_stays_in_the_run_folder(
    spark, lake, fs
):
    """One shred proves:
    - lines that once failed the whole batch (a double past 1E20, a folder name past 255 bytes), lost a value
      (1.5E-30 written as 0) or wrote an entity line that is no JSON (entity data that is a JSON string) are
      written exactly, or become bad rows naming why, and the rest is published;
    - schema URIs cannot escape the run folder: ".." is a legal Iglu vendor, and stays a folder name *inside*
      shredded-types; nothing is written outside the run folder's good and bad outputs."""
    contexts = '{"schema":"iglu:com.snowplowanalytics.snowplow/contexts/jsonschema/1-0-1","data":[%s]}'
    long_vendor = "iglu:" + "a" * 240 + "/x/jsonschema/1-0-0"
    big_and_small = event_line(event_id=ID_B, geo_latitude="1e30", geo_longitude="-1.5e-30", se_value="-1e21")
    infinite = event_line(event_id=ID_C, tr_total="1e400")
    string_data = event_line(contexts=contexts % f'{{"schema":"{WEB_PAGE}","data":"{{oops"}}')
    too_long = event_line(contexts=contexts % f'{{"schema":"{long_vendor}","data":{{}}}}')
    dotted = event_line(
        event_id=ID_DOTTED, contexts=contexts % '{"schema":"iglu:../evil/jsonschema/1-0-0","data":{"x":1}}'
    )
    write_run_folder(lake, RUN, [A, big_and_small, infinite, string_data, too_long, dotted])

    report = shred_run_folder(spark, fs, lake, RUN)

    assert (report.lines_read, report.good, report.bad, sum(report.duplicates.values())) == (6, 3, 3, 0)
    assert json.loads(Path(lake.shredding_complete(RUN)).read_text())["data"]["count"] == {"good": 3, "bad": 3}
    written = [line.split("\t") for line in read_lines(Path(lake.shredded_good(RUN)) / "atomic-events")]
    plain = {"geo_latitude": "1" + "0" * 30, "geo_longitude": "-0." + "0" * 29 + "15", "se_value": "-1" + "0" * 21}
    assert sorted(written) == sorted([atomic(A), atomic(big_and_small, **plain), atomic(dotted)])
    good = Path(lake.shredded_good(RUN)).resolve()
    files = [p.resolve() for p in Path(lake.root).rglob("*") if p.is_file() and "shredded" in p.parts]
    assert files and all(good in p.parents or Path(lake.shredded_bad(RUN)).resolve() in p.parents for p in files)
    assert (good / "shredded-types" / "vendor=.." / "name=evil").is_dir()
    rows = [json.loads(line)["data"] for line in read_lines(lake.shredded_bad(RUN))]
    messages = {row["payload"]: [error["message"] for error in row["failure"]["errors"]] for row in rows}
    assert messages == {
        infinite: ["Value is out of the range of a double (0, or 4.9E-324 to 1.7976931348623157E308 in magnitude)"],
        string_data: [f"data of entity {WEB_PAGE} is not a JSON object"],
        too_long: [f"entity schema '{long_vendor}' is longer than 200 characters, too long to name its type's folders"],
    }
