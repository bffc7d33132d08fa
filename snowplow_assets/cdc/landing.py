"""Reading a CDC landing folder: JSON lines of Kafka records (FORMATS.md §7).

`cdc/landing/<folder>/` holds plain or `.gz` JSON-lines files (hidden `.…` and marker `_…` files and folders
are skipped), one Kafka record per line:

    {"__topic": "shop.customers", "__partition": 0, "__offset": 17, "__timestamp": 1767261600000,
     "__key": "42", "__value": {...}}

Normalisation, decided here once:
- A line is exactly one JSON object, with white space around it at most, and JSON only. Spark's reader alone
  reads the first object of a line and ignores the rest, so two records landed without a newline between them
  were one, the second lost; it takes NaN, Infinity and single quotes, and writes a number beyond a double's
  range as "Infinity" or 0.0. Each is an `invalid_json` bad row that says so: text after the JSON object,
  NaN or Infinity, a number beyond a double's range in the envelope or an object `__value` (both written
  from what Spark read), a key that appears twice in `__value` (a VARIANT has no place for a second one), or
  not a JSON object at all. The line is read once, inside a wrapper; only a line with a `]`, the one
  character that can end that wrapper early, is also read through inside the other (strict_json.py). A bad
  line only is read again, to say what is wrong with it.
- A line ends at `\\n` (`read_lines`), is UTF-8 and escapes no half of a surrogate pair: Spark's strings hold
  U+FFFD for a byte that is not UTF-8 and `?` for half a pair, so keys that differ only there would be one.
  Each is an `invalid_json` bad row (a string `__value` escaping half a pair, `invalid_value`).
- `__timestamp`: a string of digits or an integer is epoch milliseconds; anything else must be an ISO-8601
  timestamp (`2026-03-01T10:00:00.123Z`, with an offset, or without one, meaning UTC), in the years 1 to 9999.
  Kafka timestamps are milliseconds, so ISO timestamps are truncated to the millisecond.
- `__value`: a JSON object, a string holding JSON, JSON `null`, or the string `"null"`; both nulls are a
  null value (a delete or tombstone, depending on the contract). A missing `__value` is an error, not a null.
  A string holds exactly one JSON value, by the rules of the line; else it is an `invalid_value` bad row. It
  is kept as its text, so only the row read from it can hold a number written wrongly (contracts.py).
- `__partition` and `__offset` are non-negative integers, given as numbers or digit strings.
- `__key` is kept as text: a JSON object key (as Kafka Connect and Debezium write them) stays JSON text.
- Blank lines are not records; they are counted, nothing else.
Lines that break these rules become bad rows (see contracts.py for the reasons).
"""

from __future__ import annotations

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from snowplow_assets.events.reader import run_folder_files
from snowplow_assets.events.sql import case, literal
from snowplow_assets.patterns import END
from snowplow_assets.storage import FileEntry, LakeFileSystem
from snowplow_assets.strict_json import (
    DOUBLE_RANGE,
    IN_ARRAY,
    IN_ARRAY_IN_OBJECT,
    IN_OBJECT,
    MAX_NESTING_DEPTH,
    beyond_double_in_json,
    options,
    wrapped,
)

_KAFKA_FIELDS = "__topic STRING, __partition STRING, __offset STRING, __timestamp STRING, __key STRING"
_ENVELOPE = f"{_KAFKA_FIELDS}, __value VARIANT"
# Read as text, a value keeps a repeated key: only a VARIANT refuses one.
_ENVELOPE_VALUE_AS_TEXT = f"{_KAFKA_FIELDS}, __value STRING"
_CORRUPT = "__corrupt"

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
    """`__file, __line` for every line of exactly these files (`spark_text_file_paths`), gzip decoded by the
    `.gz` suffix.

    Lines end at `\\n` alone, as JSON lines do: a `\\r` is JSON white space, which a line may hold between its
    tokens, and the `\\r` of a `\\r\\n` ending is white space after the object. Hadoop's own reading also ends a
    line at a lone `\\r`, which until 2026-11-28 cut such a record into two bad rows, neither of them the record.
    """
    if not files:
        return spark.createDataFrame([], "__file STRING, __line STRING")
    lines = spark.read.option("lineSep", "\n").text(fs.spark_text_file_paths([f.uri for f in files]))
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


def _read(text: str, schema: str, wrapper: tuple[str, str, int] | None, **more: str) -> str:
    """`text` read as JSON (strict_json.options; single quotes are no JSON either), inside `wrapper` or None."""
    read = wrapped(text, wrapper) if wrapper else text
    chosen = options(wrapper, columnNameOfCorruptRecord=_CORRUPT, allowSingleQuotes="false", **more)
    return f"from_json({read}, {literal(schema)}, {chosen})"


def _reads(text: str, fields: str = "", **more: str) -> str:
    """Whether the first JSON value of `text` is an object that reads with `fields` (text after it ignored, as
    Spark's reader does; without fields, it is only read through)."""
    schema = f"{fields}, {_CORRUPT} STRING" if fields else f"{_CORRUPT} STRING"
    return f"{_read(text, schema, None, **more)}.{_CORRUPT} IS NULL"


_NOT_AN_OBJECT = "'the line is not a JSON object'"
_STARTS_AN_OBJECT = r"^[ \t\r\n]*[{]"  # JSON's white space, then an object
_LINE_PROBLEM = case(
    (f"NOT __line RLIKE {literal(_STARTS_AN_OBJECT)}", _NOT_AN_OBJECT),
    (_reads("__line", _ENVELOPE), "'the line has text after its JSON object (one record per line)'"),
    (_reads("__line", _ENVELOPE_VALUE_AS_TEXT), "'a key appears twice in __value'"),
    (
        _reads("__line", allowNonNumericNumbers="true"),
        "'the line holds NaN or Infinity, which are not JSON numbers'",
    ),
    otherwise=_NOT_AN_OBJECT,
)
"""What is wrong with a line that is not exactly one JSON object: each reading relaxes one rule more."""


# A string value is checked with json_array_length, which takes no options: inside `[…]` at Spark's limit, it
# nests at most one level less, as an object value inside a line does. Its diagnosis reads it to the same depth.
_VALUE_DEPTH = MAX_NESTING_DEPTH - 1


def _first_value_as_text(**more: str) -> str:
    """The first JSON value of a string `__value` as text, which keeps a repeated key."""
    depth = str(_VALUE_DEPTH + 1)  # one level for the array
    return f"get({_read('__value_string', 'ARRAY<STRING>', IN_ARRAY, maxNestingDepth=depth, **more)}, 0)"


_VALUE_PROBLEM = case(
    (
        f"{_read('__value_string', 'VARIANT', None, maxNestingDepth=str(_VALUE_DEPTH))} IS NOT NULL",
        "'__value is a string with text after its JSON value'",
    ),
    (f"{_first_value_as_text()} IS NOT NULL", "'__value is a string whose JSON has a key twice'"),
    (
        f"{_first_value_as_text(allowNonNumericNumbers='true')} IS NOT NULL",
        "'__value is a string holding NaN or Infinity, which are not JSON numbers'",
    ),
    otherwise="'__value is a string that is not JSON'",
)
"""What is wrong with a string `__value` that is not exactly one JSON value."""

BEYOND_DOUBLE = f"a number beyond a double's range {DOUBLE_RANGE}"
# The line as Spark wrote what it read, where a number beyond a double's range would show ("Infinity", 0.0):
# the envelope's fields, in brackets, for a field that is a number alone, and an object value.
_ENVELOPE_AS_READ = (
    "concat('[', concat_ws(',', __topic, __partition_text, __offset_text, __timestamp_text, __kafka_key), ']')"
)


def _bad(reason: str, message: str) -> str:
    return f"named_struct('reason', '{reason}', 'message', {message})"


NOT_UTF8 = "the line is not UTF-8 (JSON text is), so its text cannot be known; its bad bytes read as U+FFFD here"
# Read left to right, as JSON's escapes are: an escaped backslash (`\\`, which may be followed by the text
# `ud83d`), or a whole surrogate pair. What is left of the text after both are removed holds a surrogate escape
# only if it is half a pair.
_ESCAPED_BACKSLASH_OR_PAIR = r"\\\\|\\u[dD][89abAB][0-9a-fA-F]{2}\\u[dD][c-fC-F][0-9a-fA-F]{2}"
_SURROGATE_ESCAPE = r"\\u[dD][89a-fA-F]"
UNPAIRED_SURROGATE = "holds a \\uD800-\\uDFFF escape without its pair, which is no character"


def holds_unpaired_surrogate(text: str) -> str:
    """Whether JSON `text` escapes half a surrogate pair: read, it is `?` in Spark's strings, so `"a\\ud83d"`,
    `"a\\ud83c"` and `"a?"` were one key until 2026-11-28 (a string cut inside an emoji writes one)."""
    rest = f"regexp_replace({text}, {literal(_ESCAPED_BACKSLASH_OR_PAIR)}, '')"
    guard = f"(contains({text}, '\\\\ud') OR contains({text}, '\\\\uD'))"
    return f"({guard} AND {rest} RLIKE {literal(_SURROGATE_ESCAPE)})"


def parse_envelopes(lines: DataFrame) -> DataFrame:
    """ENVELOPE_COLUMNS for every non-blank line; `__envelope_error` is a (reason, message) struct or NULL."""
    envelope = lines.where(f"NOT ({is_blank()})").selectExpr(
        "__file",
        "__line",
        # The line is read inside an array, to count its values, in an object: there Spark's corrupt record
        # column reports a failure anywhere in it, where at the root of an array a value with a key twice came
        # back null and nothing said so. A line can end the array early only with a `]`: only then is it also
        # read through in the other wrapper (strict_json.py), which costs a third of the reading.
        f"{_read('__line', f'v ARRAY<STRUCT<{_ENVELOPE}>>, {_CORRUPT} STRING', IN_ARRAY_IN_OBJECT)} AS __e",
        f"NOT contains(__line, ']') OR {_read('__line', f'{_CORRUPT} STRING', IN_OBJECT)}.{_CORRUPT} IS NULL "
        "AS __no_text_after",
    )
    fields = envelope.selectExpr(
        "__file",
        "__line",
        f"__e.{_CORRUPT} IS NULL AND size(__e.v) = 1 AND get(__e.v, 0) IS NOT NULL AND __no_text_after "
        "AS __one_json_object",
        "nullif(get(__e.v, 0).__topic, '') AS __topic",
        "get(__e.v, 0).__partition AS __partition_text",
        "try_cast(get(__e.v, 0).__partition AS INT) AS __partition",
        "get(__e.v, 0).__offset AS __offset_text",
        "try_cast(get(__e.v, 0).__offset AS BIGINT) AS __offset",
        "get(__e.v, 0).__timestamp AS __timestamp_text",
        "get(__e.v, 0).__key AS __kafka_key",
        "get(__e.v, 0).__value AS __raw_value",
        "to_json(get(__e.v, 0).__value) AS __value_json",
    )
    values = computed_once(fields).selectExpr(
        "*",
        f"{TIMESTAMP_SQL} AS __timestamp_read",
        # A string value holds the JSON text; an object value is the JSON itself.
        "CASE WHEN startswith(__value_json, '\"') THEN variant_get(__raw_value, '$', 'string') END AS __value_string",
    )
    # A string value, any JSON value, is parsed as it is, once checked in both wrappers (strict_json.py) by
    # functions that skip through it: `[…]` counts one value, and, if the text has a `]`, `{"v": …}` finds an
    # object. Unlike from_json, all three run in Spark's generated code: together a third cheaper.
    one_json_value = (
        f"coalesce(json_array_length({wrapped('__value_string', IN_ARRAY)}) = 1, false) AND "
        f"(NOT contains(__value_string, ']') OR json_object_keys({wrapped('__value_string', IN_OBJECT)}) IS NOT NULL)"
    )
    readings = computed_once(values).selectExpr(
        "*",
        "CASE WHEN __raw_value IS NULL OR is_variant_null(__raw_value) THEN NULL "
        "ELSE coalesce(__value_string, __value_json) END AS __value",
        "CASE WHEN __value_string IS NULL THEN __raw_value "
        f"WHEN {one_json_value} THEN try_parse_json(__value_string) END AS __parsed_value",
    )
    error = (
        "CASE "
        f"WHEN NOT is_valid_utf8(__line) THEN {_bad('invalid_json', literal(NOT_UTF8))} "
        f"WHEN {holds_unpaired_surrogate('__line')} THEN "
        f"{_bad('invalid_json', literal('the line ' + UNPAIRED_SURROGATE))} "
        f"WHEN NOT __one_json_object THEN {_bad('invalid_json', _LINE_PROBLEM)} "
        f"WHEN {beyond_double_in_json('__line', _ENVELOPE_AS_READ, '__value_json', integers=True)} THEN "
        f"{_bad('invalid_json', literal(f'the line holds {BEYOND_DOUBLE}'))} "
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
        f"WHEN {holds_unpaired_surrogate('__value_string')} THEN "
        f"{_bad('invalid_value', literal('__value is a string whose JSON ' + UNPAIRED_SURROGATE))} "
        f"WHEN __value_string IS NOT NULL AND __parsed_value IS NULL THEN {_bad('invalid_value', _VALUE_PROBLEM)} "
        "END AS __envelope_error"
    )
    # Out of range, the instant is no record's: a bad row's (which has the text) is null, like an unreadable one's.
    timestamp = f"CASE WHEN {_IN_RANGE} THEN __timestamp_read END AS __timestamp"
    columns = [timestamp if c == "__timestamp" else c for c in ENVELOPE_COLUMNS if c != "__envelope_error"]
    return computed_once(readings).selectExpr(*columns, error)
