"""The fast path of parsing: lines already written the way the shredder would write them (FORMATS.md §1, §3).

Enrich writes every typed field in one form: timestamps as `yyyy-MM-dd HH:mm:ss.SSS`, integers without a
plus sign or leading zeros, booleans as 1 or 0. For a field in that *canonical* form, converting it to its type
and rendering it back (shred.py) gives the same text, so the atomic-events line of such an event is its
input fields as they are, without the three JSON fields. Checking each typed field against the pattern of
its canonical form replaces converting and rendering it.

A line is canonical when it has 131 fields, every typed field is empty or canonical, every required field is
present, and its JSON fields are valid self-describing JSON with valid entities. Such a line is good, and
this module gives its values and output parts exactly as the full parser and shred.py would. Every other
line, bad or good but written in another accepted form (`2026-03-01T10:00:00Z`, `+5`, a 10-digit integer),
goes to the full parser, which remains the one definition of what is valid: the fast path only ever
accepts a subset of what it accepts, and leaves it anything unusual. For such a line the function names the
fields it could not vouch for, its pending fields; every other field is one the full parser accepts. So the
full parser's checks of those fields alone (parse.parse_failures) give the line's failure, and only a line
they find none in, good but in another form, needs the whole full parser: in Enrich's output, nearly every
line the fast path leaves is a bad one.

Decimal numbers are the exception to passing text through: "52.5200", "52.52" and "5.252E1" are all the same
valid double, and shred.py writes each the one way Spark prints it. So double fields are converted and
printed on this path too, and a number that Spark prints in exponent form (which shred.py then rewrites)
is left to the full parser, as is one that may be beyond a double's range (parse.py makes its line bad).

The work per line runs in one JVM function, `CanonicalLine` (snowplow_assets/jvm/): the same checks as
Spark SQL expressions cost ten times as much, mostly in code that Spark generates and every new JVM compiles
again (benchmarks/README.md). The function holds no definitions: the spec below hands it this module's
patterns, parse.py's wrapper schemas and the Iglu URI pattern, by field, from enriched_schema.py, and the
templates of an entity's line and folder (shred.py, output_folders.py), which it renders itself: that
took about a tenth less of the parse pass than building the lines in Spark SQL from the entities the
function returned (benchmarks/README.md). JSON is read and re-serialised by the same Jackson, with the same limits, as Spark's
`from_json` in parse.py; a JSON field with a number in it that a double cannot hold is left to the full
parser, which makes the line bad when the number is in an entity's data (the README's Parsing).
Matching the typed fields against their patterns took nearly half of the function's time, so it first tries a
hand-written check of each form (CanonicalForms.java) and runs the pattern only when that check says no: the
patterns below still decide, and a test holds each check to its pattern.
"""

from __future__ import annotations

import json

from pyspark.errors import AnalysisException
from pyspark.sql import DataFrame, SparkSession

from snowplow_assets.events import parse, shred, templates
from snowplow_assets.events.enriched_schema import ENRICHED_FIELDS, FIELD_INDEX, EnrichedField, FieldType
from snowplow_assets.events.iglu import ENTITY_SCHEMA_PATTERN, MAX_SCHEMA_URI_LENGTH
from snowplow_assets.events.output_folders import ENTITY_FOLDER, RECORD_TYPE
from snowplow_assets.events.sql import identifier
from snowplow_assets.jvm import CANONICAL_LINE_CLASS, CANONICAL_LINE_SPEC_CLASS
from snowplow_assets.patterns import END

# Month and day pairs that exist in every year. 29 February is canonical only in leap years, which a pattern
# cannot tell, so it takes the full parser's path.
_MONTH_DAY = r"(0[1-9]|1[0-2])-(0[1-9]|1[0-9]|2[0-8])|(0[13-9]|1[0-2])-(29|30)|(0[13578]|1[02])-31"

CANONICAL_PATTERNS: dict[FieldType, str] = {
    # In lower case, as the full parser writes a UUID (parse.py): an id in upper case is rewritten, and so the
    # same event as its lower-case copy to deduplication and the event manifest (until 2026-11-28 two events).
    FieldType.UUID: r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}" + END,
    # Nine digits at most: every such number fits in 32 bits.
    FieldType.INT: r"^(0|-?[1-9][0-9]{0,8})" + END,
    FieldType.TIMESTAMP: rf"^[1-9][0-9]{{3}}-({_MONTH_DAY}) ([01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9]\.[0-9]{{3}}{END}",
    FieldType.BOOLEAN: r"^[01]" + END,
}

FUNCTION_NAME = "snowplow_canonical_line"
SPEC_FUNCTION_NAME = "snowplow_canonical_line_spec"
# Spark's condition for "Can not load class ..., please make sure it is on the classpath".
_CLASS_NOT_LOADED = "_LEGACY_ERROR_TEMP_1329"

# The fields the function returns the text of, in this order.
_PICKED = ("event_id", "event_fingerprint", "etl_tstamp", "collector_tstamp")

_ENTITY_TYPES_TYPE = "ARRAY<STRUCT<schema: STRING, kind: STRING>>"
_RESULT_TYPE = (
    f"STRUCT<picked: ARRAY<STRING>, atomic_head: STRING, atomic_tail: STRING, "
    f"entity_lines: ARRAY<{RECORD_TYPE}>, entity_types: {_ENTITY_TYPES_TYPE}, pending: ARRAY<INT>>"
)


def _field_spec(field: EnrichedField) -> dict[str, object]:
    """How the function checks one field: `string` (present if required), `pattern` (copied when it
    matches), `double` (matches, then printed as Spark prints a double) or `json` (entities of a wrapper).
    A `form` names the function's faster check of the same pattern (CanonicalForms.java); the pattern decides
    whenever that check says no."""
    spec: dict[str, object] = {"required": field.required}
    match field.type:
        case FieldType.STRING:
            return {**spec, "kind": "string"}
        case FieldType.DOUBLE:
            return {**spec, "kind": "double", "pattern": parse.DOUBLE_PATTERN, "form": field.type.value}
        case FieldType.JSON:
            wrapper, is_array = parse.JSON_WRAPPERS[field.name]
            return {**spec, "kind": "json", "pattern": wrapper, "array": is_array}
        case _:
            return {**spec, "kind": "pattern", "pattern": CANONICAL_PATTERNS[field.type], "form": field.type.value}


def function_spec() -> str:
    """The spec the project's jar carries for `CanonicalLine`: the line's layout and the rules of canonical form.

    The atomic-events line is returned in two parts around the event id (shred.py's atomic_events_parts):
    `split_at` is its field.
    """
    event_id = FIELD_INDEX["event_id"]
    assert all(f.type is not FieldType.JSON for f in ENRICHED_FIELDS[:event_id]), "a JSON field before event_id"
    spec = {
        "fields": [_field_spec(f) for f in ENRICHED_FIELDS],
        "split_at": event_id,
        "pick": [FIELD_INDEX[name] for name in _PICKED],
        "entity_schema": ENTITY_SCHEMA_PATTERN,
        "entity_schema_max_length": MAX_SCHEMA_URI_LENGTH,
        # Each entity's line and folder, in shredding order, from the templates SQL renders them from too
        # (shred.py, output_folders.py); the function knows an entity's values (shred.ENTITY_VALUES) by name,
        # root_tstamp being the text of collector_tstamp, which canonical form makes its rendering.
        "entity_fields": [{"field": FIELD_INDEX[name], "kind": kind} for name, kind in shred.ENTITY_FIELDS],
        "root_tstamp": FIELD_INDEX["collector_tstamp"],
        "entity_line": {"head": templates.spec(shred.ENTITY_LINE_HEAD), "tail": templates.spec(shred.ENTITY_LINE_TAIL)},
        "entity_folder": templates.spec(ENTITY_FOLDER),
        # What the function returns: a server whose jar returns anything else is refused (fast_path_available).
        "result": _RESULT_TYPE,
    }
    return json.dumps(spec, separators=(",", ":"))


def fast_path_available(spark: SparkSession) -> bool:
    """Whether the session has `snowplow_canonical_line(line)`, registering it once if it can.

    The function's class is in the project's jar (snowplow_assets/jvm/), which a classic session's JVM has
    through `spark.jars` (snowplow_assets/spark.py), as does a Spark Connect server that
    `snowplow-assets spark-server` started. Without it (no JDK could build the jar, or another Connect
    server) there is no fast path. A server whose jar was built from other definitions than this client's
    (one started before an upgrade) is refused with an error, never used.
    """
    return spark.catalog.functionExists(FUNCTION_NAME) or _register(spark)


def _register(spark: SparkSession) -> bool:
    """Register the function unless its class cannot be loaded; the spec's function first, to check it."""
    try:
        spark.udf.registerJavaFunction(SPEC_FUNCTION_NAME, CANONICAL_LINE_SPEC_CLASS, "STRING")
    except AnalysisException as error:
        if error.getCondition() != _CLASS_NOT_LOADED:
            raise
        return False
    if spark.sql(f"SELECT {SPEC_FUNCTION_NAME}()").first()[0] != function_spec():
        raise RuntimeError(
            f"the Spark session's {CANONICAL_LINE_CLASS} was built from other definitions than this "
            "snowplow-assets (a Spark Connect server started before an upgrade?): restart the server "
            "(`snowplow-assets spark-server`) so that it loads the jar of this version"
        )
    spark.udf.registerJavaFunction(FUNCTION_NAME, CANONICAL_LINE_CLASS, _RESULT_TYPE)
    return True


def parse_canonical(lines: DataFrame, line_column: str = "line") -> DataFrame:
    """The input columns plus `canonical`, and for canonical lines the values shredding needs, named as
    parse_enriched names them, and the event's output parts: `atomic_head` and `atomic_tail` (shred.py's
    atomic_events_parts), `entity_lines` and `entity_types` (output_records.render_entities). Every other
    column is null on a line that is not canonical.

    A line that is not canonical has `pending_fields` instead: the indexes of the fields the function could
    not vouch for. Every other field of it is valid, so the full parser's failure for the line is the one
    parse.parse_failures finds among those fields alone (none when the line's shape alone makes it bad)."""
    if not fast_path_available(lines.sparkSession):
        raise RuntimeError(f"the shredder's fast path needs {CANONICAL_LINE_CLASS} (snowplow_assets/jvm/)")
    inputs = [identifier(c) for c in lines.columns]
    checked = lines.selectExpr(*inputs, f"{FUNCTION_NAME}({identifier(line_column)}) AS _canonical")

    def picked(name: str) -> str:
        return f"_canonical.picked[{_PICKED.index(name)}]"

    def timestamp(name: str) -> str:
        return f"CAST(nullif({picked(name)}, '') AS TIMESTAMP)"

    return checked.selectExpr(
        *inputs,
        "_canonical.pending IS NULL AS canonical",
        "_canonical.pending AS pending_fields",
        f"{picked('event_id')} AS event_id",
        f"nullif({picked('event_fingerprint')}, '') AS event_fingerprint",
        f"{timestamp('etl_tstamp')} AS etl_tstamp",
        f"{timestamp('collector_tstamp')} AS collector_tstamp",
        "_canonical.atomic_head AS atomic_head",
        "_canonical.atomic_tail AS atomic_tail",
        "_canonical.entity_lines AS entity_lines",
        "_canonical.entity_types AS entity_types",
    )
