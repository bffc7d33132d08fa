"""Enriched TSV lines to typed event columns, or to a precise parse failure (FORMATS.md §1).

Everything here is a Spark SQL expression: one `split` per line, one `try_element_at` per field and
`from_json` for the three self-describing JSON fields. No Python UDF runs, so a line never leaves the JVM.

A parsed row has the input columns, a `failure` struct (null for a good line) and one column per enriched
field. The JSON fields become entities: `unstruct_event` a struct, `contexts` and `derived_contexts`
arrays of structs, each entity carrying its Iglu URI, the URI's parts and its `data` as compact JSON.

The work is staged in projections (split, raw values, typed values, failure), each reading the columns of
the one before. Catalyst does not merge a projection into one that would evaluate a costly column many
times, so every split, field extraction, cast and JSON parse happens once per line.

Known leniency, inherited from Spark's JSON reader: numbers with a fraction or an exponent come back as doubles
in `data` (so with at most 17 significant digits). Spark's reader would also ignore text after the first JSON
value of a field, take NaN and Infinity for numbers, and read a number beyond a double's range as "Infinity" or
0.0: each makes the line bad here (strict_json.py).

Each JSON field is read twice. Read into a STRING, an entity's `data` is its compact JSON when it is an object
or an array, but the unescaped text when it is a JSON string, so `"{oops"` and `"{\"a\":1}"` would pass for
objects. A second reading with `data` as an empty struct tells which entities' data really is an object. The
two readings wrap the field in different wrappers (`{"v": field}` and `{"v": [field]}`), which together
refuse text after its JSON value (strict_json.py), at no third reading.
"""

from __future__ import annotations

from collections.abc import Iterable

from pyspark.sql import DataFrame

from snowplow_assets.events.enriched_schema import ENRICHED_FIELDS, FIELD_COUNT, EnrichedField, FieldType
from snowplow_assets.events.iglu import IGLU_URI_PATTERN, MAX_SCHEMA_URI_LENGTH, SHREDDER_DUPLICATE_PREFIX
from snowplow_assets.events.sql import case, identifier, literal, named_struct
from snowplow_assets.patterns import END
from snowplow_assets.strict_json import (
    DOUBLE_RANGE,
    IN_ARRAY_IN_OBJECT,
    IN_OBJECT,
    beyond_double,
    beyond_double_in_json,
    options,
    wrapped,
)

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


def _json_options(wrapper: tuple[str, str, int] | None) -> str:
    return options(wrapper, mode="PERMISSIVE", columnNameOfCorruptRecord=_CORRUPT)


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
            # One event in either case, as Snowplow's own shredder reads the id (a java.util.UUID) and writes it.
            return f"CASE WHEN {raw} RLIKE {literal(UUID_PATTERN)} THEN lower({raw}) END"
        case FieldType.INT:
            return f"CASE WHEN {raw} RLIKE {literal(INT_PATTERN)} THEN try_cast({raw} AS INT) END"
        case FieldType.DOUBLE:
            return f"CASE WHEN {raw} RLIKE {literal(DOUBLE_PATTERN)} THEN try_cast({raw} AS DOUBLE) END"
        case FieldType.BOOLEAN:
            return f"CASE {raw} WHEN '1' THEN true WHEN '0' THEN false END"
        case FieldType.TIMESTAMP:
            return f"CASE WHEN {raw} RLIKE {literal(TIMESTAMP_PATTERN)} THEN try_cast({raw} AS TIMESTAMP) END"
        case FieldType.JSON:
            schema = literal(_document_schema(field))
            return f"from_json({wrapped(raw, IN_OBJECT)}, {schema}, {_json_options(IN_OBJECT)})"


def _document_schema(field: EnrichedField, wrapper: bool = True) -> str:
    """The JSON field's first reading: its document (schema and data), in `v` when it is read inside IN_OBJECT."""
    data = f"ARRAY<{_SDJ}>" if JSON_WRAPPERS[field.name][1] else _SDJ
    if wrapper:
        return f"v STRUCT<schema: STRING, data: {data}>, {_CORRUPT} STRING"
    return f"schema STRING, data {data}, {_CORRUPT} STRING"


def _document(field: EnrichedField) -> str:
    """The JSON field's document (schema and data) in its first reading."""
    return f"{_typed(field)}.v"


def _objects_value(field: EnrichedField) -> str:
    """The JSON field's second reading (see the module's docstring), its entities' data as empty structs.

    Where an entity's data is not an object, Spark leaves that data null and sets the corrupt record. When an
    entity repeats `data` it keeps the object it read, and sets the corrupt record if another value is not
    one (the first reading keeps the last value): so the entities' data and the corrupt record both count.
    The field is read inside IN_ARRAY_IN_OBJECT, an object still, for the corrupt record: inside an array at
    the root, Spark gives no corrupt record, and a failure in an element makes the whole array null.
    """
    data = f"ARRAY<{_OBJECT_SDJ}>" if JSON_WRAPPERS[field.name][1] else _OBJECT_SDJ
    schema = f"v ARRAY<STRUCT<data: {data}>>, {_CORRUPT} STRING"
    text = wrapped(_raw(field), IN_ARRAY_IN_OBJECT)
    return f"from_json({text}, {literal(schema)}, {_json_options(IN_ARRAY_IN_OBJECT)})"


def _objects_document(field: EnrichedField) -> str:
    """The JSON field's document in its second reading: null unless that reading found one JSON value."""
    return f"get({_objects(field)}.v, 0)"


def _value(field: EnrichedField) -> str:
    if field.type is not FieldType.JSON:
        return _typed(field)
    document = _document(field)
    if JSON_WRAPPERS[field.name][1]:
        return f"coalesce(transform({document}.data, e -> {_entity('e')}), CAST(array() AS ARRAY<{ENTITY_TYPE}>))"
    return f"CASE WHEN {document}.data IS NOT NULL THEN {_entity(f'{document}.data')} END"


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
        # Rendering a double that lost its value (shred.py) would write a number the input never held.
        branches.append((beyond_double(raw, typed), _invalid_value(field.name, raw, literal(_BEYOND_DOUBLE))))
    return case(*branches)


_BEYOND_DOUBLE = f"Value is out of the range of a double {DOUBLE_RANGE}"


_BEYOND_DOUBLE_IN_DATA = f"a number in an entity's data is out of the range of a double {DOUBLE_RANGE}"


def _beyond_double_in_data(data: str, raw: str) -> str:
    """Whether an entity's data held a number beyond a double's range, which Spark's reader wrote wrongly
    (strict_json.beyond_double_in_json, the field's text `raw` searched where the entity's `data` holds
    "Infinity" or a 0.0). Read into a STRING, an integer keeps its digits. A number a double cannot hold
    elsewhere in the field (a key the reader skips) is then found too; the fast path leaves every field with
    such a number anywhere to the full parser (CanonicalLine)."""
    return beyond_double_in_json(raw, data, integers=False)


def _entity_error(sdj: str, object_sdj: str, raw: str) -> str:
    """Why an entity is unusable, or null: it is null, has no valid Iglu URI, one too long to name its
    type's folders, the shredder's own (iglu.py), data that is no JSON object, or data with a number a
    double cannot hold.
    `object_sdj` is the entity in the field's second reading, `raw` the field's text."""
    schema = f"{sdj}.schema"
    return case(
        (f"{sdj} IS NULL", "'an entity is null'"),
        (
            f"NOT coalesce({schema} RLIKE {literal(IGLU_URI_PATTERN)}, false)",
            f"format_string('entity schema \\'%s\\' is not a valid Iglu URI', coalesce({schema}, ''))",
        ),
        (f"length({schema}) > {MAX_SCHEMA_URI_LENGTH}", f"format_string({literal(_TOO_LONG)}, {schema})"),
        (
            f"startswith({schema}, {literal(SHREDDER_DUPLICATE_PREFIX)})",
            f"format_string({literal(_RESERVED)}, {schema})",
        ),
        (f"{object_sdj}.data IS NULL", _not_an_object(schema)),
        (_beyond_double_in_data(f"{sdj}.data", raw), literal(_BEYOND_DOUBLE_IN_DATA)),
    )


_RESERVED = (
    "entity schema '%s' is the shredder's own: it adds such a context to each event it renames as a synthetic "
    "duplicate, and no input event may carry one (iglu.py)"
)
_TOO_LONG = f"entity schema '%s' is longer than {MAX_SCHEMA_URI_LENGTH} characters, too long to name its type's folders"


def _not_an_object(schema: str) -> str:
    return f"format_string('data of entity %s is not a JSON object', {schema})"


_TEXT_AFTER = "'invalid JSON: text after the self-describing JSON'"


def _json_error(field: EnrichedField) -> str:
    """Why a JSON field is unusable: unparseable, more than one JSON value, wrong wrapper, or an entity
    without a valid URI or object, or with a number a double cannot hold."""
    name, raw, objects = field.name, _raw(field), _objects(field)
    wrapper, is_array = JSON_WRAPPERS[name]
    document, object_document = _document(field), _objects_document(field)
    data = f"{document}.data"
    if is_array:
        entity_errors = f"transform({data}, (e, i) -> {_entity_error('e', f'get({object_document}.data, i)', raw)})"
        entity_error, first_entity = f"get(array_compact({entity_errors}), 0)", f"get({data}, 0)"
    else:
        entity_error, first_entity = _entity_error(data, f"{object_document}.data", raw), data
    # An entity that repeats `data`, one value an object and another not, leaves the second reading corrupt
    # though it found an object there: the line is bad all the same, and its first entity is named.
    repeated = f"CASE WHEN {objects}.{_CORRUPT} IS NOT NULL THEN {_not_an_object(f'{first_entity}.schema')} END"
    # For a bad field only: read without a wrapper, as Spark's reader reads the first JSON value of a text.
    first_value = f"from_json({raw}, {literal(_document_schema(field, wrapper=False))}, {_json_options(None)})"
    first_value_is_a_document = (
        f"{first_value}.{_CORRUPT} IS NULL AND {first_value}.schema IS NOT NULL AND {first_value}.data IS NOT NULL"
    )
    message = case(
        (
            f"{_typed(field)}.{_CORRUPT} IS NOT NULL OR {document}.schema IS NULL OR {data} IS NULL",
            f"CASE WHEN {first_value_is_a_document} THEN {_TEXT_AFTER} "
            "ELSE 'invalid JSON or not a self-describing JSON with schema and data' END",
        ),
        # The first reading found one document, the second, in the other wrapper, not: text follows it.
        (f"{object_document} IS NULL", _TEXT_AFTER),
        (
            f"NOT {document}.schema RLIKE {literal(wrapper)}",
            f"format_string('wrapper schema \\'%s\\' does not match %s', {document}.schema, {literal(wrapper)})",
        ),
        otherwise=f"coalesce({entity_error}, {repeated})",
    )
    return f"CASE WHEN {raw} IS NOT NULL AND ({message}) IS NOT NULL THEN {_invalid_value(name, raw, message)} END"
