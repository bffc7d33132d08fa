"""Reading the lines of one enriched run folder."""

from __future__ import annotations

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from snowplow_assets.storage import FileEntry, LakeFileSystem, data_files


def run_folder_files(fs: LakeFileSystem, folder: str) -> list[FileEntry]:
    """The data files of a run folder: plain or `.gz` TSV parts (`data_files`: no hidden or marker file or
    folder in their path, as for its readiness)."""
    return data_files(folder, fs.list_files(folder))


def read_lines(spark: SparkSession, fs: LakeFileSystem, files: list[FileEntry]) -> DataFrame:
    """`row_id, line` for every line of exactly these files (`spark_text_file_paths`: a name is not a glob, and
    a `:` or another codec's suffix in one, or gzip data under a name without `.gz`, is an error), gzip decoded
    by the `.gz` suffix.

    `row_id` is Spark's monotonically increasing id: a function of the scan's split of these exact files,
    so two reads of the same file list in one session number the lines identically. Callers that join two
    reads on it must check that they did (see shred_batch.py).
    """
    if not files:
        return spark.createDataFrame([], "row_id BIGINT, line STRING")
    lines = spark.read.text(fs.spark_text_file_paths([f.uri for f in files]))
    return lines.select(F.monotonically_increasing_id().alias("row_id"), F.col("value").alias("line"))
