"""Reading a CDC landing folder: JSON lines of Kafka records (FORMATS.md §7).

`cdc/landing/<folder>/` holds plain or `.gz` JSON-lines files (hidden `.…` and marker `_…` files and folders
are skipped), one Kafka record per line:

    {"__topic": "shop.customers", "__partition": 0, "__offset": 17, "__timestamp": 1767261600000,
     "__key": "42", "__value": {...}}

Normalisation, decided here once:
- `__timestamp`: a string of digits or an integer is epoch milliseconds; anything else must be an ISO-8601
  timestamp (`2026-03-01T10:00:00.123Z`, with an offset, or without one, meaning UTC), in the years 1 to 9999.
  Kafka timestamps are milliseconds, so ISO timestamps are truncated to the millisecond.
- `__value`: a JSON object, a string holding JSON, JSON `null`, or the string `"null"`; both nulls are a
  null value (a delete or tombstone, depending on the contract). A missing `__value` is an error, not a null.
- `__partition` and `__offset` are non-negative integers, given as numbers or digit strings.
- `__key` is kept as text: a JSON object key (as Kafka Connect and Debezium write them) stays JSON text.
- Blank lines are not records; they are counted, nothing else.
Lines that break these rules become bad rows (see contracts.py for the reasons).
"""

from __future__ import annotations

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from snowplow_assets.events.reader import run_folder_files
from snowplow_assets.events.sql import literal
from snowplow_assets.patterns import END
from snowplow_assets.storage import FileEntry, LakeFileSystem

_ENVELOPE = (
    "struct<__topic: STRING, __partition: STRING, __offset: STRING, __timestamp: STRING, __key: STRING, "
    "__value: VARIANT, __corrupt: STRING>"
)

# Columns of a parsed line, before the contract of its topic is applied.
ENVELOPE_COLUMNS = (
    "__file", "__line", "__topic", "__partition", "__offset", "__timestamp", "__kafka_key", "__value",
    "__parsed_value", "__envelope_error",
)  # fmt: skip

# An ISO-8601 timestamp, as it must be written before Spark's cast reads it: Spark's cast alone also takes
# `" 2026"`, `"+2026"` or `"3000\n"` for a year.
_ISO_TIMESTAMP = (
    r"^[0-9]{4}-[0-9]{2}-[0-9]{2}([T ][0-9]{2}:[0-9]{2}(:[0-9]{2}([.][0-9]{1,9})?)?)?(Z|[+-][0-9]{2}(:?[0-9]{2})?)?"
)
TIMESTAMP_SQL = (
    f"timestamp_millis(CASE WHEN __timestamp_text RLIKE {literal('^-?[0-9]{1,15}' + END)} "
    "THEN CAST(__timestamp_text AS BIGINT) "
    f"WHEN __timestamp_text RLIKE {literal(_ISO_TIMESTAMP + END)} "
    "THEN unix_millis(try_cast(__timestamp_text AS TIMESTAMP)) END)"
)
# The instants a record may have: the years 1 to 9999. History folders are named by the hour (`hour=…`), which
# readers parse back; a year outside them (`+10000`, `0000`) failed every later cut and latest view.
TIMESTAMP_RANGE_MS = (-62_135_596_800_000, 253_402_300_799_999)
_IN_RANGE = f"unix_millis(__timestamp_read) BETWEEN {TIMESTAMP_RANGE_MS[0]} AND {TIMESTAMP_RANGE_MS[1]}"


def landing_files(fs: LakeFileSystem, folder: str) -> list[FileEntry]:
    """The data files of a landing folder (the rule of run folders, `data_files`, also for its readiness)."""
    return run_folder_files(fs, folder)


def read_lines(spark: SparkSession, fs: LakeFileSystem, files: list[FileEntry]) -> DataFrame:
    """`__file, __line` for every line of exactly these files (`spark_text_file_path`), gzip decoded by the
    `.gz` suffix."""
    if not files:
        return spark.createDataFrame([], "__file STRING, __line STRING")
    lines = spark.read.text([fs.spark_text_file_path(f.uri) for f in files])
    return lines.select(F.col("_metadata.file_name").alias("__file"), F.col("value").alias("__line"))


def computed_once(frame: DataFrame) -> DataFrame:
    """`frame` unchanged, behind a barrier the optimizer does not inline expressions through.

    Spark substitutes a computed column's expression for every reference to it when it collapses
    projections or pushes a filter down. The contracts refer to their CASE expressions (kind, payload,
    row image) many times over, and inlined they grow past what code generation compiles (it then falls
    back to interpreting, a hundred times slower). A one-element `inline` is a generator, which the
    optimizer keeps, so everything above it reads the columns instead of recomputing them.
    """
    return frame.selectExpr("inline(array(struct(*)))")


_BLANK = r"^\s*" + END


def is_blank(line: str = "__line") -> str:
    """White space only (Spark's `trim` takes spaces alone, so a line of tabs was a bad row)."""
    return f"{line} RLIKE {literal(_BLANK)}"


def parse_envelopes(lines: DataFrame) -> DataFrame:
    """ENVELOPE_COLUMNS for every non-blank line; `__envelope_error` is a (reason, message) struct or NULL."""
    envelope = lines.where(f"NOT ({is_blank()})").selectExpr(
        "__file",
        "__line",
        f"from_json(__line, '{_ENVELOPE}', map('columnNameOfCorruptRecord', '__corrupt')) AS __e",
    )
    fields = envelope.selectExpr(
        "__file",
        "__line",
        "__e.__corrupt IS NOT NULL AS __corrupt",
        "nullif(__e.__topic, '') AS __topic",
        "__e.__partition AS __partition_text",
        "try_cast(__e.__partition AS INT) AS __partition",
        "try_cast(__e.__offset AS BIGINT) AS __offset",
        "__e.__timestamp AS __timestamp_text",
        "__e.__key AS __kafka_key",
        "__e.__value AS __raw_value",
        "to_json(__e.__value) AS __value_json",
    )
    values = computed_once(fields).selectExpr(
        "*",
        f"{TIMESTAMP_SQL} AS __timestamp_read",
        # A string value holds the JSON text; an object value is the JSON itself.
        "CASE WHEN __raw_value IS NULL OR is_variant_null(__raw_value) THEN NULL "
        "WHEN startswith(__value_json, '\"') THEN variant_get(__raw_value, '$', 'string') "
        "ELSE __value_json END AS __value",
        "CASE WHEN startswith(__value_json, '\"') THEN try_parse_json(variant_get(__raw_value, '$', 'string')) "
        "ELSE __raw_value END AS __parsed_value",
    )
    error = (
        "CASE "
        "WHEN __corrupt THEN named_struct('reason', 'invalid_json', 'message', 'the line is not a JSON object') "
        "WHEN __topic IS NULL THEN named_struct('reason', 'invalid_envelope', 'message', '__topic is missing or empty') "
        "WHEN __partition IS NULL OR __partition < 0 THEN named_struct('reason', 'invalid_envelope', "
        "'message', '__partition is missing or not a non-negative integer') "
        "WHEN __offset IS NULL OR __offset < 0 THEN named_struct('reason', 'invalid_envelope', "
        "'message', '__offset is missing or not a non-negative integer') "
        "WHEN __raw_value IS NULL THEN named_struct('reason', 'invalid_envelope', "
        "'message', '__value is missing (a delete has \"__value\": null)') "
        "WHEN __timestamp_read IS NULL THEN named_struct('reason', 'invalid_timestamp', 'message', "
        "concat('__timestamp is neither epoch milliseconds nor an ISO-8601 timestamp: ', "
        "coalesce(__timestamp_text, 'missing'))) "
        f"WHEN NOT {_IN_RANGE} THEN "
        "named_struct('reason', 'invalid_timestamp', 'message', "
        "concat('__timestamp is outside the years 1 to 9999: ', __timestamp_text)) "
        "WHEN __value IS NOT NULL AND __parsed_value IS NULL THEN named_struct('reason', 'invalid_value', "
        "'message', '__value is a string that is not JSON') "
        "END AS __envelope_error"
    )
    # Out of range, the instant is no record's: a bad row's (which has the text) is null, like an unreadable one's.
    timestamp = f"CASE WHEN {_IN_RANGE} THEN __timestamp_read END AS __timestamp"
    columns = [timestamp if c == "__timestamp" else c for c in ENVELOPE_COLUMNS if c != "__envelope_error"]
    return computed_once(values).selectExpr(*columns, error)
