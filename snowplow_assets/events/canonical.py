"""The fast path of parsing: lines already written the way the shredder would write them (FORMATS.md §1, §3).

Enrich writes every typed field in one form: timestamps as `yyyy-MM-dd HH:mm:ss.SSS`, integers without a
plus sign or leading zeros, booleans as 1 or 0. For a field in that *canonical* form, converting it to its type
and rendering it back (shred.py) gives the same text, so the atomic-events line of such an event is its
input fields as they are, without the three JSON fields. Checking each typed field against the pattern of
its canonical form replaces converting and rendering it, which is what the full parser (parse.py) spends
most of its time on.

A line is canonical when it has 131 fields, every typed field is empty or canonical, every required field is
present, and its JSON fields are valid. Such a line is good, and this module gives its values and output
parts exactly as the full parser and shred.py would. Every other line, bad or good but written in another
accepted form (`2026-03-01T10:00:00Z`, `+5`, a 10-digit integer), goes to the full parser, which remains
the one definition of what is valid: the canonical patterns only ever accept a subset of what it accepts.

Decimal numbers are the exception to passing text through: "52.5200", "52.52" and "5.252E1" are all the same
valid double, and shred.py writes each the one way Spark prints it. So double fields are converted and
rendered on this path too; they are few and mostly empty.

The JSON fields are parsed and validated by the same expressions as in parse.py, since an entity is output
re-serialised either way.
"""

from __future__ import annotations

from pyspark.sql import DataFrame

from snowplow_assets.events import parse, shred
from snowplow_assets.events.enriched_schema import (
    ATOMIC_FIELDS,
    ENRICHED_FIELDS,
    FIELD_COUNT,
    FIELD_INDEX,
    EnrichedField,
    FieldType,
)
from snowplow_assets.events.sql import identifier, literal

# Month and day pairs that exist in every year. 29 February is canonical only in leap years, which a pattern
# cannot tell, so it takes the full parser's path.
_MONTH_DAY = r"(0[1-9]|1[0-2])-(0[1-9]|1[0-9]|2[0-8])|(0[13-9]|1[0-2])-(29|30)|(0[13578]|1[02])-31"

CANONICAL_PATTERNS: dict[FieldType, str] = {
    FieldType.UUID: parse.UUID_PATTERN,
    # Nine digits at most: every such number fits in 32 bits.
    FieldType.INT: r"^(0|-?[1-9][0-9]{0,8})$",
    FieldType.TIMESTAMP: rf"^[1-9][0-9]{{3}}-({_MONTH_DAY}) ([01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9]\.[0-9]{{3}}$",
}

_JSON_FIELDS = tuple(f for f in ENRICHED_FIELDS if f.type is FieldType.JSON)


def _field(name: str) -> EnrichedField:
    return ENRICHED_FIELDS[FIELD_INDEX[name]]


_EVENT_ID = _field("event_id")


def _text(field: EnrichedField) -> str:
    """The field's text as written, '' when empty."""
    return f"try_element_at(_fields, {field.index + 1})"


def _double(field: EnrichedField) -> str:
    # Never cast '': a failed cast costs an exception, and most double fields are empty.
    return f"try_cast(nullif({_text(field)}, '') AS DOUBLE)"


def _field_is_canonical(field: EnrichedField) -> str:
    text = _text(field)
    if field.type is FieldType.STRING:
        return f"{text} != ''" if field.required else "true"
    if field.type is FieldType.DOUBLE:
        check = f"({text} RLIKE {literal(parse.DOUBLE_PATTERN)} AND {_double(field)} IS NOT NULL)"
    elif field.type is FieldType.BOOLEAN:
        check = f"{text} IN ('0', '1')"  # a regex costs more than these two comparisons
    else:
        check = f"{text} RLIKE {literal(CANONICAL_PATTERNS[field.type])}"
    return check if field.required else f"({text} = '' OR {check})"


def _json_is_valid(field: EnrichedField) -> str:
    return f"({parse.json_error(field.name, parse.raw_column(field), parse.typed_column(field))}) IS NULL"


def _atomic_tail() -> str:
    """The atomic-events line after the event id: runs of fields copied as they are, doubles rendered."""
    after = [f for f in ATOMIC_FIELDS if f.index > _EVENT_ID.index]
    pieces: list[str] = []
    run: list[EnrichedField] = []

    def close_run() -> None:
        if run:
            pieces.append(f"slice(_fields, {run[0].index + 1}, {len(run)})")
            run.clear()

    for field in after:
        if field.type is FieldType.DOUBLE:
            close_run()
            pieces.append(f"coalesce({shred.render_double(_double(field))}, '')")
        elif run and field.index != run[-1].index + 1:
            close_run()
            run.append(field)
        else:
            run.append(field)
    close_run()
    return "concat('\\t', concat_ws('\\t', " + ", ".join(pieces) + "))"


def _atomic_head(line: str) -> str:
    """The atomic-events line up to the event id: the line's first fields, which are all copied as they are."""
    before = [f for f in ATOMIC_FIELDS if f.index < _EVENT_ID.index]
    assert [f.index for f in before] == list(range(_EVENT_ID.index)), "fields before event_id are not contiguous"
    assert not any(f.type is FieldType.DOUBLE for f in before)
    return f"concat(substring_index({line}, '\\t', {_EVENT_ID.index}), '\\t')"


def parse_canonical(lines: DataFrame, line_column: str = "line") -> DataFrame:
    """The input columns plus `canonical`, and for canonical lines the values shredding needs, named as
    parse_enriched names them, and the event's output parts: `atomic_head` and `atomic_tail` (shred.py's
    atomic_events_parts) and `root_tstamp`. Every other column is null on a line that is not canonical.

    `from_json` has no generated code, so Spark runs a projection that holds it through an interpreter: the
    JSON fields are parsed in a projection of their own, and the checks after it run as generated code.
    """
    line = identifier(line_column)
    inputs = [identifier(c) for c in lines.columns]
    fields = lines.selectExpr(*inputs, f"split({line}, '\\t', -1) AS _fields")
    parsed_json = fields.selectExpr(
        "*", *(f"nullif({_text(f)}, '') AS {parse.raw_column(f)}" for f in _JSON_FIELDS)
    ).selectExpr("*", *(f"{parse.typed_value(f)} AS {parse.typed_column(f)}" for f in _JSON_FIELDS))

    checks = [_field_is_canonical(f) for f in ENRICHED_FIELDS if f.type is not FieldType.JSON]
    checks += [_json_is_valid(f) for f in _JSON_FIELDS]
    canonical = f"coalesce(size(_fields) = {FIELD_COUNT} AND {' AND '.join(checks)}, false)"
    checked = parsed_json.selectExpr("*", f"{canonical} AS canonical")

    def when_canonical(value: str, name: str) -> str:
        return f"CASE WHEN canonical THEN {value} END AS {identifier(name)}"

    def timestamp(name: str) -> str:
        return f"try_cast(nullif({_text(_field(name))}, '') AS TIMESTAMP)"

    return checked.selectExpr(
        *inputs,
        "canonical",
        when_canonical(_text(_EVENT_ID), "event_id"),
        when_canonical(f"nullif({_text(_field('event_fingerprint'))}, '')", "event_fingerprint"),
        when_canonical(timestamp("etl_tstamp"), "etl_tstamp"),
        when_canonical(timestamp("collector_tstamp"), "collector_tstamp"),
        *(when_canonical(parse.field_value(f), f.name) for f in _JSON_FIELDS),
        when_canonical(_atomic_head(line), "atomic_head"),
        when_canonical(_atomic_tail(), "atomic_tail"),
        when_canonical(_text(_field("collector_tstamp")), "root_tstamp"),
    )
