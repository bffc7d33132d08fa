"""The one-pass bound: the least the shred job's per-line work costs, however its passes are arranged.

Any shred must read every line, parse it (131 fields, three JSON documents) and write the event's
atomic-events line and entity lines. This job does exactly that and nothing else, on the same Spark master and
settings as the job it bounds (the benchmark runs it on the same server): the lines read as text, the fast
path's Java function over each (canonical.parse_canonical), and every output record written at once by its
folder, as the output pass writes them (output_pass.py). It leaves out all the rest: staging, deduplication,
the event manifest, bad rows (the lines the fast path leaves, 1% of the benchmark's, are not written) and the
summary.

So its time, against the floor's, says how much of the floor target the job's own work uses, measured rather
than summed from parts (benchmarks/README.md); and the shred job's time against it, what deduplication,
staging and the rest add. Its output is not loader output (no dedup, and ids never renamed): it is timed,
counted and removed.
"""

from __future__ import annotations

from typing import Any


def write_one_pass(spark: Any, files: list[str], path: str) -> dict[str, int]:
    """Read `files`, parse every line on the fast path and write each canonical line's output records under
    `path`, partitioned by folder; return the lines read, the canonical ones and the records written."""
    from pyspark.sql import Observation
    from pyspark.sql import functions as F

    from snowplow_assets.events.canonical import parse_canonical
    from snowplow_assets.events.output_folders import FOLDER
    from snowplow_assets.events.output_pass import write_by_folder
    from snowplow_assets.events.output_records import event_records, record_line
    from snowplow_assets.spark import observed_counts

    lines_seen, records_written = Observation("one_pass_lines"), Observation("one_pass_records")
    parsed = parse_canonical(spark.read.text(files).withColumnRenamed("value", "line")).observe(
        lines_seen, F.count(F.lit(1)).alias("lines"), F.count_if("canonical").alias("canonical")
    )
    records = (
        parsed.where("canonical")
        .selectExpr("event_id", f"explode({event_records('atomic_head', 'atomic_tail')}) AS r")
        .selectExpr(f"r.folder AS {FOLDER}", f"{record_line('r', 'event_id')} AS value")
        .observe(records_written, F.count(F.lit(1)).alias("records"))
    )
    write_by_folder(records, "NONE", path)
    return {**observed_counts(lines_seen), **observed_counts(records_written)}
