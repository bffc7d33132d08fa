import json
from contextlib import nullcontext
from pathlib import Path

import pyarrow.parquet as pq

from snowplow_assets.events import parse_pass, reader
from snowplow_assets.events.parse_pass import STAGING_DICTIONARY_COLUMNS
from snowplow_assets.events.shred_batch import FULL_PARSE, shred_run_folder
from snowplow_assets_tests.conftest import read_lines, write_run_folder
from snowplow_assets_tests.events.test_shred_batch import BAD_TIMESTAMP, C1, GOLDEN_INPUT, NOT_TSV, RUN, A


def test_the_staging_writes_dictionaries_only_for_the_columns_whose_values_repeat(spark, lake, fs, tmp_path):
    """Each record's folder and each entity's type repeat from line to line and are staged as dictionaries;
    every other column, the rendered lines above all, is staged plain, and all of it as zstd."""
    folder = write_run_folder(lake, RUN, GOLDEN_INPUT)
    lines = reader.read_lines(spark, fs, reader.run_folder_files(fs, str(folder)))
    staging = tmp_path / "staging"
    parse_pass.parse_pass(spark, fs, lines, str(staging), nullcontext)

    encodings: dict[str, set[str]] = {}
    for part in staging.glob("canonical/part-*.parquet"):
        metadata = pq.ParquetFile(part).metadata
        for group in range(metadata.num_row_groups):
            for index in range(metadata.num_columns):
                column = metadata.row_group(group).column(index)
                assert column.compression == "ZSTD"
                encodings.setdefault(column.path_in_schema, set()).update(column.encodings)
    assert set(STAGING_DICTIONARY_COLUMNS) < encodings.keys(), "the option names columns the staging has"
    dictionary = {"PLAIN_DICTIONARY", "RLE_DICTIONARY"}
    assert {column for column, found in encodings.items() if found & dictionary} == set(STAGING_DICTIONARY_COLUMNS)


def test_without_the_fast_path_every_line_takes_the_full_parser_with_the_same_output(
    spark, lake, fs, monkeypatch, caplog
):
    """A session without the project's jar (no JDK to build it) shreds correctly, only slower."""
    write_run_folder(lake, RUN, GOLDEN_INPUT)
    with_fast_path = shred_run_folder(spark, fs, lake, RUN)
    good, bad = Path(lake.shredded_good(RUN)), Path(lake.shredded_bad(RUN))

    def contents():
        return {
            folder.relative_to(Path(lake.root)): sorted(read_lines(folder))
            for folder in {p.parent for p in [*good.rglob("part-*"), *bad.rglob("part-*")]}
        }

    expected = contents()
    monkeypatch.setattr(parse_pass, "fast_path_available", lambda spark: False)
    monkeypatch.setattr(parse_pass, "parse_canonical", None)  # never called
    without = shred_run_folder(spark, fs, lake, RUN)
    assert "every line takes the full parser" in caplog.text
    assert contents() == expected
    assert (without.lines_read, without.good, without.bad, without.duplicates) == (
        with_fast_path.lines_read,
        with_fast_path.good,
        with_fast_path.bad,
        with_fast_path.duplicates,
    )


def test_bad_lines_the_fast_path_leaves_become_bad_rows_without_the_full_parser(spark, lake, fs, monkeypatch):
    """Judged by the full parser's checks of their pending fields alone; the whole full parser is for good
    lines in other forms only (the golden input's B), and here there is none."""
    write_run_folder(lake, RUN, [A, C1, NOT_TSV, BAD_TIMESTAMP])

    def full_parser(*args):
        raise AssertionError("the full parser ran")

    monkeypatch.setattr(parse_pass, "_parse_in_full", full_parser)
    report = shred_run_folder(spark, fs, lake, RUN)
    assert (report.lines_read, report.good, report.bad) == (4, 2, 2)
    assert FULL_PARSE in report.phase_seconds
    rows = [json.loads(line) for line in read_lines(Path(lake.shredded_bad(RUN)))]
    failures = sorted(((row["data"]["failure"], row["data"]["payload"]) for row in rows), key=str)
    assert failures == sorted([
        ({"type": "NotTSV"}, NOT_TSV),
        ({"type": "RowDecodingError", "errors": [{
            "type": "InvalidValue", "key": "collector_tstamp", "value": "yesterday",
            "message": "Value is not a timestamp (yyyy-MM-dd HH:mm:ss[.SSS])",
        }]}, BAD_TIMESTAMP),
    ], key=str)  # fmt: skip
