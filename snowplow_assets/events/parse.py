"""Enriched TSV lines to typed event columns, or to a precise parse failure (FORMATS.md §1).

Everything here is a Spark SQL expression: one `split` per line, one `try_element_at` per field and
`from_json` for the three self-describing JSON fields. No Python UDF runs, so a line never leaves the JVM.

A parsed row has the input columns, a `failure` struct (null for a good line) and one column per enriched
field. The JSON fields become entities: `unstruct_event` a struct, `contexts` and `derived_contexts`
arrays of structs, each entity carrying its Iglu URI, the URI's parts and its `data` as compact JSON.

The work is staged in projections (split, raw values, typed values, failure), each reading the columns of
the one before. Catalyst does not merge a projection into one that would evaluate a costly column many
times, so every split, field extraction, cast and JSON parse happens once per line.

Known leniency, inherited from Spark's JSON reader: text after the first complete JSON value in a field is
ignored, and numbers with a fraction or an exponent come back as doubles in `data` (so with at most 17
significant digits). Spark's reader would also take NaN and Infinity for numbers, and read a number beyond a
double's range as "Infinity" or 0.0: the first is turned off (`allowNonNumericNumbers`), and the second makes
the line bad (_beyond_double_in_data).

Each JSON field is read twice. Read into a STRING, an entity's `data` is its compact JSON when it is an object
or an array, but the unescaped text when it is a JSON string, so `"{oops"` and `"{\"a\":1}"` would pass for
objects. A second reading with `data` as an empty struct tells which entities' data really is an object.
"""

from __future__ import annotations

from collections.abc import Iterable

from pyspark.sql import DataFrame

from snowplow_assets.events.enriched_schema import ENRICHED_FIELDS, FIELD_COUNT, EnrichedField, FieldType
from snowplow_assets.events.iglu import IGLU_URI_PATTERN, MAX_SCHEMA_URI_LENGTH
from snowplow_assets.events.sql import case, identifier, literal, named_struct
from snowplow_assets.patterns import END

INT_PATTERN = r"^[+-]?[0-9]{1,10}" + END
DOUBLE_PATTERN = r"^[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]{1,3})?" + END
TIMESTAMP_PATTERN = r"^[0-9]{4}-[0-9]{2}-[0-9]{2}[ T][0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]+)?Z?" + END
UUID_PATTERN = r"^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}" + END

CONTEXTS_WRAPPER = r"^iglu:com\.snowplowanalytics\.snowplow/contexts/jsonschema/1-0-[0-9]+" + END
UNSTRUCT_WRAPPER = r"^iglu:com\.snowplowanalytics\.snowplow/unstruct_event/jsonschema/1-0-[0-9]+" + END

ENTITY_TYPE = "STRUCT<schema: STRING, vendor: STRING, name: STRING, format: STRING, version: STRING, data: STRING>"
_ERRORS_TYPE = "ARRAY<STRUCT<type: STRING, key: STRING, value: STRING, message: STRING>>"
_SDJ = "STRUCT<schema: STRING, data: STRING>"
# An entity as the second reading of a JSON field sees it: its data null unless it is a JSON object.
_OBJECT_SDJ = "STRUCT<data: STRUCT<>>"
_CORRUPT = "_corrupt_record"
# NaN, Infinity and the like are no JSON: Spark's reader takes them for numbers unless told not to.
_JSON_OPTIONS = (
    f"map('mode', 'PERMISSIVE', 'columnNameOfCorruptRecord', {literal(_CORRUPT)}, 'allowNonNumericNumbers', 'false')"
)

# JSON field -> (pattern its wrapper schema must match, whether the wrapper holds an array of entities)
JSON_WRAPPERS = {
    "contexts": (CONTEXTS_WRAPPER, True),
    "unstruct_event": (UNSTRUCT_WRAPPER, False),
    "derived_contexts": (CONTEXTS_WRAPPER, True),
}

_TYPE_MESSAGES = {
    FieldType.UUID: "Value is not a UUID",
    FieldType.INT: "Value is not a 32-bit integer",
    FieldType.DOUBLE: "Value is not a decimal number",
    FieldType.BOOLEAN: "Value is not a boolean (1 or 0)",
    FieldType.TIMESTAMP: "Value is not a timestamp (yyyy-MM-dd HH:mm:ss[.SSS])",
}


def parse_enriched(lines: DataFrame, line_column: str = "line") -> DataFrame:
    """Add `failure` and the 131 typed field columns to a DataFrame of raw enriched lines."""
    inputs = [identifier(c) for c in lines.columns]
    typed = _typed_fields(lines, line_column, ENRICHED_FIELDS)
    well_formed = f"_field_count = {FIELD_COUNT}"
    values = (f"CASE WHEN {well_formed} THEN {_value(f)} END AS {identifier(f.name)}" for f in ENRICHED_FIELDS)
    return typed.selectExpr(*inputs, f"{_failure_of(line_column, ENRICHED_FIELDS)} AS failure", *values)


def parse_failures(lines: DataFrame, fields: Iterable[int], line_column: str = "line") -> DataFrame:
    """Add `failure` to a DataFrame of raw enriched lines, judging only the fields at the indexes `fields`.

    A line's failure is parse_enriched's whenever every field left out is one the full parser accepts: the
    fast path's pending fields (canonical.py) are the only ones it could not vouch for. The plan holds only
    those fields, so it is a fraction of the full parser's to build and compile.
    """
    inputs = [identifier(c) for c in lines.columns]
    judged = [ENRICHED_FIELDS[i] for i in sorted(set(fields))]
    typed = _typed_fields(lines, line_column, judged)
    return typed.selectExpr(*inputs, f"{_failure_of(line_column, judged)} AS failure")


def _typed_fields(lines: DataFrame, line_column: str, fields: list[EnrichedField]) -> DataFrame:
    """The input columns, `_field_count` and each field's raw and typed value, each projection reading the
    one before."""
    line = identifier(line_column)
    inputs = [identifier(c) for c in lines.columns]
    split = lines.selectExpr(*inputs, f"split({line}, '\\t', -1) AS _fields")
    raw = split.selectExpr(
        *inputs,
        "size(_fields) AS _field_count",
        *(f"nullif(try_element_at(_fields, {f.index + 1}), '') AS {_raw(f)}" for f in fields),
    )
    objects = (f"{_objects_value(f)} AS {_objects(f)}" for f in fields if f.type is FieldType.JSON)
    return raw.selectExpr("*", *(f"{_typed_value(f)} AS {_typed(f)}" for f in fields), *objects)


def _failure_of(line_column: str, fields: list[EnrichedField]) -> str:
    """Why a line is bad, from _typed_fields' columns of `fields`: not TSV, the wrong number of fields, or
    every invalid value among them in field order; null for a good line."""
    line = identifier(line_column)
    errors = ", ".join(_error(f) for f in fields if f.type is not FieldType.STRING or f.required)
    decoding_errors = f"filter(array({errors}), e -> e IS NOT NULL)" if errors else "array()"
    return case(
        (f"NOT contains({line}, '\\t')", _failure("NotTSV")),
        (f"_field_count != {FIELD_COUNT}", _failure("FieldNumberMismatch", field_count="_field_count")),
        (f"size({decoding_errors}) > 0", _failure("RowDecodingError", errors=decoding_errors)),
    )


def _raw(field: EnrichedField) -> str:
    return f"_raw_{field.name}"


def _typed(field: EnrichedField) -> str:
    return f"_typed_{field.name}"


def _objects(field: EnrichedField) -> str:
    return f"_objects_{field.name}"


def _typed_value(field: EnrichedField) -> str:
    raw = _raw(field)
    match field.type:
        case FieldType.STRING:
            return raw
        case FieldType.UUID:
            return f"CASE WHEN {raw} RLIKE {literal(UUID_PATTERN)} THEN {raw} END"
        case FieldType.INT:
            return f"CASE WHEN {raw} RLIKE {literal(INT_PATTERN)} THEN try_cast({raw} AS INT) END"
        case FieldType.DOUBLE:
            return f"CASE WHEN {raw} RLIKE {literal(DOUBLE_PATTERN)} THEN try_cast({raw} AS DOUBLE) END"
        case FieldType.BOOLEAN:
            return f"CASE {raw} WHEN '1' THEN true WHEN '0' THEN false END"
        case FieldType.TIMESTAMP:
            return f"CASE WHEN {raw} RLIKE {literal(TIMESTAMP_PATTERN)} THEN try_cast({raw} AS TIMESTAMP) END"
        case FieldType.JSON:
            data = f"ARRAY<{_SDJ}>" if JSON_WRAPPERS[field.name][1] else _SDJ
            schema = f"schema STRING, data {data}, {_CORRUPT} STRING"
            return f"from_json({raw}, {literal(schema)}, {_JSON_OPTIONS})"


def _objects_value(field: EnrichedField) -> str:
    """The JSON field's second reading (see the module's docstring), its entities' data as empty structs.

    Where an entity's data is not an object, Spark leaves that data null and sets the corrupt record. When an
    entity repeats `data` it keeps the object it read, and sets the corrupt record if another value is not
    one (the first reading keeps the last value): so the entities' data and the corrupt record both count.
    """
    data = f"ARRAY<{_OBJECT_SDJ}>" if JSON_WRAPPERS[field.name][1] else _OBJECT_SDJ
    return f"from_json({_raw(field)}, {literal(f'data {data}, {_CORRUPT} STRING')}, {_JSON_OPTIONS})"


def _value(field: EnrichedField) -> str:
    typed = _typed(field)
    if field.type is not FieldType.JSON:
        return typed
    if JSON_WRAPPERS[field.name][1]:
        return f"coalesce(transform({typed}.data, e -> {_entity('e')}), CAST(array() AS ARRAY<{ENTITY_TYPE}>))"
    return f"CASE WHEN {typed}.data IS NOT NULL THEN {_entity(f'{typed}.data')} END"


def _entity(sdj: str) -> str:
    """An entity with the parts of its Iglu URI, `iglu:vendor/name/format/version`.

    The parts are cut at the URI's `/`s rather than extracted with the URI pattern: four regex matches per
    entity were a tenth of the parse. That is exact for every URI that matches the pattern, whose parts
    hold no `/`; a line with any other URI is bad (`_entity_error`), so its parts are never used.
    """
    uri = f"{sdj}.schema"
    parts = {
        "vendor": f"substring_index(substr({uri}, 6), '/', 1)",
        "name": f"substring_index(substring_index({uri}, '/', 2), '/', -1)",
        "format": f"substring_index(substring_index({uri}, '/', 3), '/', -1)",
        "version": f"substring_index({uri}, '/', -1)",
    }
    return named_struct(schema=uri, **parts, data=f"{sdj}.data")


def _failure(kind: str, field_count: str = "NULL", errors: str = "NULL") -> str:
    return named_struct(
        type=literal(kind),
        fieldCount=f"CAST({field_count} AS INT)",
        errors=f"CAST({errors} AS {_ERRORS_TYPE})",
    )


def _invalid_value(key: str, value: str, message: str) -> str:
    return named_struct(type="'InvalidValue'", key=literal(key), value=f"coalesce({value}, '')", message=message)


def _error(field: EnrichedField) -> str:
    raw, typed = _raw(field), _typed(field)
    if field.type is FieldType.JSON:
        return _json_error(field)
    branches = []
    if field.required:
        branches.append((f"{raw} IS NULL", _invalid_value(field.name, raw, "'Field is required but empty'")))
    if field.type is not FieldType.STRING:
        invalid = _invalid_value(field.name, raw, literal(_TYPE_MESSAGES[field.type]))
        branches.append((f"{raw} IS NOT NULL AND {typed} IS NULL", invalid))
    if field.type is FieldType.DOUBLE:
        branches.append((_beyond_double(raw, typed), _invalid_value(field.name, raw, literal(_BEYOND_DOUBLE))))
    return case(*branches)


_DOUBLE_RANGE = "(0, or 4.9E-324 to 1.7976931348623157E308 in magnitude)"
_BEYOND_DOUBLE = f"Value is out of the range of a double {_DOUBLE_RANGE}"


def _beyond_double(raw: str, typed: str) -> str:
    """A number that reads as a double only by losing its value: past the largest it becomes infinite, and
    so close to zero that it becomes 0 (a mantissa with a digit other than 0). Rendering either (shred.py)
    would write a number the input never held."""
    return f"(abs({typed}) = CAST('Infinity' AS DOUBLE) OR ({typed} = 0 AND {raw} RLIKE '^[^eE]*[1-9]'))"


# JSON's strings, in double or (as Spark's reader allows) single quotes, and its numbers; each possessive, so
# that Java's regex neither backtracks nor recurses per character. A number is captured (group 1) where no
# letter, digit or point comes before it: a string is consumed whole, so a number in one is never captured.
_JSON_NUMBERS = (
    r"""(?s)"[^"\\]*+(?:\\.[^"\\]*+)*+"|'[^'\\]*+(?:\\.[^'\\]*+)*+'"""
    r"|(?<![0-9A-Za-z.])([0-9]++(?:\.[0-9]++)?+(?:[eE][+-]?+[0-9]++)?+)"
)
# A double 0 as Spark writes it in an entity's data (compact JSON): 0.0 or -0.0, as a value.
_ZERO_IN_JSON = r"[:,\[]-?0\.0[,\]}]"
_BEYOND_DOUBLE_IN_DATA = f"a number in an entity's data is out of the range of a double {_DOUBLE_RANGE}"


def _beyond_double_in_data(data: str, raw: str) -> str:
    """Whether an entity's data held a number beyond a double's range, which Spark's reader wrote wrongly.

    The reader makes a number with a fraction or an exponent a double (an integer keeps its digits), and
    writes one beyond the largest as "Infinity" and one so close to 0 that it reads as 0 as 0.0. `data` is
    only the output, so the field's text, `raw`, is searched for such a number, outside its strings; only
    for an entity whose data holds "Infinity" or a 0.0, so the search seldom runs. A number a double cannot
    hold elsewhere in the field (a key the reader skips, text after the JSON) is then found too; the fast
    path leaves every field with such a number anywhere to the full parser (CanonicalLine)."""
    number = "number"
    beyond = _beyond_double(number, f"try_cast({number} AS DOUBLE)")
    numbers = f"regexp_extract_all({raw}, {literal(_JSON_NUMBERS)}, 1)"
    in_raw = f"exists({numbers}, {number} -> {number} RLIKE '[.eE]' AND {beyond})"
    wrote = f"contains({data}, 'Infinity\"') OR (contains({data}, '0.0') AND {data} RLIKE {literal(_ZERO_IN_JSON)})"
    return f"(({wrote}) AND {in_raw})"


def _entity_error(sdj: str, object_sdj: str, raw: str) -> str:
    """Why an entity is unusable, or null: it is null, has no valid Iglu URI, one too long to name its
    type's folders (iglu.py), data that is no JSON object, or data with a number a double cannot hold.
    `object_sdj` is the entity in the field's second reading, `raw` the field's text."""
    schema = f"{sdj}.schema"
    return case(
        (f"{sdj} IS NULL", "'an entity is null'"),
        (
            f"NOT coalesce({schema} RLIKE {literal(IGLU_URI_PATTERN)}, false)",
            f"format_string('entity schema \\'%s\\' is not a valid Iglu URI', coalesce({schema}, ''))",
        ),
        (f"length({schema}) > {MAX_SCHEMA_URI_LENGTH}", f"format_string({literal(_TOO_LONG)}, {schema})"),
        (f"{object_sdj}.data IS NULL", _not_an_object(schema)),
        (_beyond_double_in_data(f"{sdj}.data", raw), literal(_BEYOND_DOUBLE_IN_DATA)),
    )


_TOO_LONG = f"entity schema '%s' is longer than {MAX_SCHEMA_URI_LENGTH} characters, too long to name its type's folders"


def _not_an_object(schema: str) -> str:
    return f"format_string('data of entity %s is not a JSON object', {schema})"


def _json_error(field: EnrichedField) -> str:
    """Why a JSON field is unusable: unparseable, wrong wrapper, or an entity without a valid URI or object,
    or with a number a double cannot hold."""
    name, raw, parsed, objects = field.name, _raw(field), _typed(field), _objects(field)
    wrapper, is_array = JSON_WRAPPERS[name]
    data = f"{parsed}.data"
    if is_array:
        entity_errors = f"transform({data}, (e, i) -> {_entity_error('e', f'get({objects}.data, i)', raw)})"
        entity_error, first_entity = f"get(array_compact({entity_errors}), 0)", f"get({data}, 0)"
    else:
        entity_error, first_entity = _entity_error(data, f"{objects}.data", raw), data
    # An entity that repeats `data`, one value an object and another not, leaves the second reading corrupt
    # though it found an object there: the line is bad all the same, and its first entity is named.
    repeated = f"CASE WHEN {objects}.{_CORRUPT} IS NOT NULL THEN {_not_an_object(f'{first_entity}.schema')} END"
    message = case(
        (
            f"{parsed}.{_CORRUPT} IS NOT NULL OR {parsed}.schema IS NULL OR {data} IS NULL",
            "'invalid JSON or not a self-describing JSON with schema and data'",
        ),
        (
            f"NOT {parsed}.schema RLIKE {literal(wrapper)}",
            f"format_string('wrapper schema \\'%s\\' does not match %s', {parsed}.schema, {literal(wrapper)})",
        ),
        otherwise=f"coalesce({entity_error}, {repeated})",
    )
    return f"CASE WHEN {raw} IS NOT NULL AND ({message}) IS NOT NULL THEN {_invalid_value(name, raw, message)} END"
