import json
from contextlib import nullcontext

from pyspark.sql import DataFrame

from snowplow_assets.events import reader
from snowplow_assets.events.dedup import NATURAL_DUPLICATE, SYNTHETIC_RENAME
from snowplow_assets.events.output_pass import write_outputs
from snowplow_assets.events.parse_pass import parse_pass
from snowplow_assets.events.sql import literal
from snowplow_assets_tests.conftest import read_lines, write_run_folder
from snowplow_assets_tests.events.test_shred_batch import A_LATER_COPY, C1, ID_A, ID_C, NOT_TSV, RUN, A

NEW_ID = "eeeeeeee-5555-4555-8555-555555555555"
DUPLICATE_FOLDER = "folder=shredded-types~com.snowplowanalytics.snowplow~duplicate~jsonschema~1-0-0"


def _staged(spark, fs, lake, tmp_path, lines: list[str]) -> DataFrame:
    folder = write_run_folder(lake, RUN, lines)
    read = reader.read_lines(spark, fs, reader.run_folder_files(fs, str(folder)))
    parsed, _, _ = parse_pass(spark, fs, read, str(tmp_path / "staging"), nullcontext)
    return parsed


def _decision(parsed: DataFrame, where: str, action: str, event_id: str, new_event_id: str | None = None) -> DataFrame:
    """A decision as dedup.py takes them (DECISION_COLUMNS) on the staged line `where` picks."""
    new = literal(new_event_id) if new_event_id else "CAST(NULL AS STRING)"
    return parsed.where(where).selectExpr(
        "row_id", f"{literal(action)} AS action", f"{literal(event_id)} AS event_id",
        f"{new} AS new_event_id", "CAST(NULL AS STRING) AS failure",
    )  # fmt: skip


def test_the_decisions_drop_rename_and_leave_every_other_line_as_staged(spark, fs, lake, tmp_path):
    parsed = _staged(spark, fs, lake, tmp_path, [A, A_LATER_COPY, C1, NOT_TSV])
    later_copy = f"event_id = {literal(ID_A)} AND etl_tstamp > TIMESTAMP '2026-03-01 10:05:00'"
    decisions = _decision(parsed, later_copy, NATURAL_DUPLICATE, ID_A).unionByName(
        _decision(parsed, f"event_id = {literal(ID_C)}", SYNTHETIC_RENAME, ID_C, NEW_ID)
    )
    written = tmp_path / "write"

    counts = write_outputs(fs, parsed, decisions, 2, "NONE", str(written))

    assert counts == {
        "lines": 4,
        "bad": 1,
        "dropped": 1,
        "renamed": 1,
        "event_errors": 0,
        "decided": 2,
        "misaligned": 0,
    }
    atomic = [line.split("\t") for line in read_lines(written / "folder=atomic-events")]
    assert sorted(fields[6] for fields in atomic) == sorted([ID_A, NEW_ID]), "A once, C under its new id"
    assert not any(ID_C in line for fields in atomic for line in fields)
    [duplicate] = [json.loads(line) for line in read_lines(written / DUPLICATE_FOLDER)]
    assert duplicate["data"] == {"originalEventId": ID_C}
    assert duplicate["hierarchy"]["rootId"] == NEW_ID
    entity_folders = [p for p in written.iterdir() if p.name.startswith("folder=shredded-types")]
    roots = [json.loads(line)["hierarchy"]["rootId"] for folder in entity_folders for line in read_lines(folder)]
    assert set(roots) == {ID_A, NEW_ID}
    # A and C carry the same entities: A's once (not its dropped copy's too), C's and its duplicate context.
    assert roots.count(NEW_ID) == roots.count(ID_A) + 1 > 1
    [bad_row] = read_lines(written / "folder=bad")
    assert json.loads(bad_row)["data"]["payload"] == NOT_TSV


def test_a_decision_found_on_another_event_is_counted_not_applied_silently(spark, fs, lake, tmp_path):
    """Two reads that numbered lines differently put a decision on the wrong line: the counts say so, and
    the job refuses to publish (shred_batch._check_conservation)."""
    parsed = _staged(spark, fs, lake, tmp_path, [A, C1])
    wrong_line = _decision(parsed, f"event_id = {literal(ID_A)}", SYNTHETIC_RENAME, ID_C, NEW_ID)

    counts = write_outputs(fs, parsed, wrong_line, 1, "NONE", str(tmp_path / "write"))

    assert (counts["decided"], counts["misaligned"]) == (1, 1)
