"""The output pass of a shred: the decisions applied to the staged records, every output written at once.

It reads the parse pass's staged records (parse_pass.py), joins the (small, broadcast) decisions by
row_id, leaves out the lines of dropped duplicates, puts each event's final id between the two parts of
its lines, and adds the `duplicate` context of a renamed event. No line is parsed again, so this pass
costs about what copying the output costs. All outputs leave in one write partitioned by their folder
(output_folders.py). Only the events decided into errors, those the event manifest could not check (none
with the lake manifest; DynamoDB failures) and those whose schemas no Iglu registry holds, are read and
parsed once more, those lines alone, to become loader_runtime_error and loader_iglu_error bad rows with the
event as JSON.

Both writes count what they saw, so that the job can check that every staged line was found and every
decision applied to the line it was taken for (shred_batch.py).
"""

from __future__ import annotations

from pyspark.sql import DataFrame, Observation
from pyspark.sql import functions as F

from snowplow_assets.events import bad_rows, shred
from snowplow_assets.events.dedup import DROP_ACTIONS, ERROR_ACTIONS, IGLU_ERROR, RENAME_ACTIONS
from snowplow_assets.events.output_folders import BAD, FOLDER, RECORD_TYPE
from snowplow_assets.events.output_records import ROOT_TSTAMP, entity_record, record, record_line
from snowplow_assets.events.parse import parse_enriched
from snowplow_assets.events.sql import case, literal
from snowplow_assets.spark import observed_counts, session_conf, unsorted_partitioned_write
from snowplow_assets.storage import LakeFileSystem

# Above this many decisions the join falls back from a broadcast to a shuffle join.
BROADCAST_DECISIONS_LIMIT = 2_000_000

# The output pass writes a batch's few outputs (atomic events, bad rows, an entity type each) as text, with
# a file open per output in each task rather than sorting every line by its folder (measured: 11.8 against
# 17.0 seconds at 1,000,000 events); past this many outputs, Spark sorts the rest.
_OPEN_TEXT_FILES = 64


def write_outputs(
    fs: LakeFileSystem,
    parsed: DataFrame,
    decisions: DataFrame,
    decision_count: int,
    compression: str,
    path: str,
) -> dict[str, int]:
    """Apply the decisions to the staged records and write every output of the batch in one pass; return
    the lines it read, and of them the bad ones, the dropped, renamed and errored ones, those a decision
    was found for, and those whose decision was taken for another event (`misaligned`: always 0 unless
    two reads numbered lines differently)."""
    decided = decisions.select("row_id", "action", "new_event_id", F.col("event_id").alias("_decided_event_id"))
    if decision_count <= BROADCAST_DECISIONS_LIMIT:
        decided = F.broadcast(decided)
    dropped, renamed, errored = _action_in(DROP_ACTIONS), _action_in(RENAME_ACTIONS), _action_in(ERROR_ACTIONS)

    observation = Observation("output_pass")
    lines = (
        parsed.select("row_id", "good", "event_id", "collector_tstamp", "records")
        .join(decided, "row_id", "left")
        .observe(
            observation,
            F.count(F.lit(1)).alias("lines"),
            F.count_if(~F.col("good")).alias("bad"),
            F.count_if(F.expr(dropped)).alias("dropped"),
            F.count_if(F.expr(renamed)).alias("renamed"),
            F.count_if(F.expr(errored)).alias("event_errors"),
            F.count_if(F.col("action").isNotNull()).alias("decided"),
            F.count_if(F.expr("action IS NOT NULL AND (NOT good OR _decided_event_id != event_id)")).alias(
                "misaligned"
            ),
        )
    )
    # A renamed event's duplicate context names its original id and goes first among its derived contexts;
    # the order of entity lines within a type's files carries no meaning, so it is simply one more record.
    duplicate = f"({shred.duplicate_context('event_id')})"
    duplicate_record = entity_record(duplicate, ROOT_TSTAMP)
    records = case(
        (f"{dropped} OR {errored}", f"CAST(array() AS ARRAY<{RECORD_TYPE}>)"),
        (renamed, f"concat(array({duplicate_record}), records)"),
        otherwise="records",
    )
    output = lines.selectExpr(
        f"CASE WHEN {renamed} THEN new_event_id ELSE event_id END AS _id", f"explode({records}) AS r"
    ).selectExpr(f"r.folder AS {FOLDER}", f"{record_line('r', '_id')} AS value")
    write_by_folder(output, compression, fs.spark_path(path))
    return observed_counts(observation)


def write_by_folder(lines: DataFrame, compression: str, spark_path: str) -> None:
    """Write `lines` (a folder and a `value`, its text) as the text files of each folder under `spark_path`,
    replacing what was there, with a file open per folder in each task instead of a sort."""
    with session_conf(lines.sparkSession, unsorted_partitioned_write(_OPEN_TEXT_FILES)):
        lines.write.mode("overwrite").partitionBy(FOLDER).option("compression", _text_compression(compression)).text(
            spark_path
        )


def write_event_errors(
    fs: LakeFileSystem, lines: DataFrame, decisions: DataFrame, compression: str, path: str
) -> dict[str, int]:
    """Add the bad rows of the events decided into errors (ERROR_ACTIONS) to the output at `path`: those the
    manifest could not check are loader_runtime_error rows, their failure its message; those whose schemas no
    registry holds are loader_iglu_error rows, their failure the JSON array of each such schema's. Return the
    lines found for them, and how many of those were another event (`misaligned`).

    Their payload is the event as JSON, typed, so these lines (few) are read and parsed once more.
    """
    errored = decisions.where(F.col("action").isin(*ERROR_ACTIONS)).select(
        "row_id",
        F.col("event_id").alias("_decided_event_id"),
        F.col("action").alias("_action"),
        F.col("failure").alias("_failure"),
    )
    observation = Observation("event_errors")
    events = parse_enriched(lines.join(F.broadcast(errored), "row_id")).observe(
        observation,
        F.count(F.lit(1)).alias("lines"),
        F.count_if(F.expr("failure IS NOT NULL OR event_id != _decided_event_id")).alias("misaligned"),
    )
    payload = bad_rows.event_json("line")
    bad_row = case(
        (f"_action = {literal(IGLU_ERROR)}", bad_rows.loader_iglu_error("parse_json(_failure)", payload)),
        otherwise=bad_rows.loader_runtime_error("_failure", payload),
    )
    (
        events.selectExpr(f"{record(BAD, bad_row)} AS r")
        .selectExpr(f"r.folder AS {FOLDER}", "r.head AS value")
        .write.mode("append")
        .partitionBy(FOLDER)
        .option("compression", _text_compression(compression))
        .text(fs.spark_path(path))
    )
    return observed_counts(observation)


def _action_in(actions: tuple[str, ...]) -> str:
    return "action IN (" + ", ".join(literal(a) for a in actions) + ")"


def _text_compression(compression: str) -> str:
    """Spark's text codec for a ShredOptions compression (NONE or GZIP, as shredding_complete.json names it)."""
    return "gzip" if compression == "GZIP" else "none"
