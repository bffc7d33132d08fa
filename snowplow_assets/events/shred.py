"""Rendering a parsed event as loader-ready shredded output (FORMATS.md §3), as Spark SQL expressions.

An event becomes one atomic-events TSV line (the 128 non-JSON fields) and one JSON line per entity, in
the order unstruct event, derived contexts, contexts (ENTITY_FIELDS). The JSON envelope is assembled by
concatenation, from a template (templates.py) that the fast path's Java function renders too: every piece
except `data` is either a fixed string or a value that passed a strict pattern (Iglu parts, UUIDs, formatted
timestamps), so none of them can need JSON escaping, and `data` is already compact JSON.

Each line is rendered as two parts, the text before the event's id and the text after it, so that the
expensive rendering runs once, before deduplication has decided which events get a new id, and putting
the final id in is a cheap concatenation (output_pass.py).
"""

from __future__ import annotations

from snowplow_assets.events.enriched_schema import ATOMIC_FIELDS, EnrichedField, FieldType
from snowplow_assets.events.iglu import SHREDDER_DUPLICATE_PREFIX
from snowplow_assets.events.parse import ENTITY_TYPE, JSON_WRAPPERS
from snowplow_assets.events.sql import identifier, literal, named_struct
from snowplow_assets.events.templates import Template, Value

TIMESTAMP_FORMAT = "yyyy-MM-dd HH:mm:ss.SSS"
DUPLICATE_SCHEMA = "iglu:com.snowplowanalytics.snowplow/duplicate/jsonschema/1-0-0"
assert DUPLICATE_SCHEMA.startswith(SHREDDER_DUPLICATE_PREFIX), "no input entity may carry the shredder's own"

# Entity kinds as the completion marker names them.
SELF_DESCRIBING_EVENT = "SELF_DESCRIBING_EVENT"
CONTEXT = "CONTEXT"


def render_timestamp(expression: str) -> str:
    return f"date_format({expression}, {literal(TIMESTAMP_FORMAT)})"


def _render_double(expression: str) -> str:
    """A double in plain decimal notation, every one of its digits kept.

    Spark prints a double as Java does, in exponent form (`1.0E7`, `-1.5E-30`) from 1E7 up and below 1E-3,
    which a TSV loader may reject. Java's formatter writes the same digits in plain form, padded with zeros
    to the places asked for: 325 hold the smallest double's (4.9E-324), and the padding is cut off. (A
    DECIMAL(38,18) cast instead failed the batch past 1E20 under ANSI and rounded 1.5E-30 to 0.) The parser
    makes a line bad whose number is beyond a double's range (parse.py), so there is no infinity to render.
    """
    text = f"CAST({expression} AS STRING)"
    plain = f"regexp_replace(format_string('%.325f', {expression}), '\\\\.?0+$', '')"
    return f"CASE WHEN contains({text}, 'E') THEN {plain} ELSE {text} END"


def render_field(field: EnrichedField) -> str:
    column = identifier(field.name)
    match field.type:
        case FieldType.TIMESTAMP:
            rendered = render_timestamp(column)
        case FieldType.BOOLEAN:
            rendered = f"CASE WHEN {column} THEN '1' WHEN NOT {column} THEN '0' END"
        case FieldType.DOUBLE:
            rendered = _render_double(column)
        case _:
            rendered = f"CAST({column} AS STRING)"
    return f"coalesce({rendered}, '')"


_EVENT_ID_POSITION = next(i for i, f in enumerate(ATOMIC_FIELDS) if f.name == "event_id")


def atomic_events_parts() -> tuple[str, str]:
    """The 128-column TSV line of an event (every field but contexts, unstruct_event and derived_contexts)
    as the text before its event_id and the text after it: line = head || event_id || tail.

    The id is left out because deduplication may replace it after the line is rendered (output_pass.py).
    """
    before, after = ATOMIC_FIELDS[:_EVENT_ID_POSITION], ATOMIC_FIELDS[_EVENT_ID_POSITION + 1 :]
    head = "concat(concat_ws('\\t', " + ", ".join(render_field(f) for f in before) + "), '\\t')"
    tail = "concat('\\t', concat_ws('\\t', " + ", ".join(render_field(f) for f in after) + "))"
    return head, tail


def duplicate_context(original_event_id: str) -> str:
    entity = named_struct(
        schema=literal(DUPLICATE_SCHEMA),
        vendor="'com.snowplowanalytics.snowplow'",
        name="'duplicate'",
        format="'jsonschema'",
        version="'1-0-0'",
        data=f"""concat('{{"originalEventId":"', {original_event_id}, '"}}')""",
    )
    return f"CAST({entity} AS {ENTITY_TYPE})"


# An entity's values, as the templates below (and the fast path's function, which renders them too) name them.
SCHEMA, VENDOR, NAME, FORMAT, VERSION, DATA, ROOT_TSTAMP = (
    Value(name) for name in ("schema", "vendor", "name", "format", "version", "data", "root_tstamp")
)
ENTITY_VALUES = (SCHEMA, VENDOR, NAME, FORMAT, VERSION, DATA, ROOT_TSTAMP)

# `{"schema":{…},"data":{…},"hierarchy":{…}}` for one entity of an event, as the text before its rootId (the
# event's id) and the text after it: line = head || rootId || tail.
ENTITY_LINE_HEAD: Template = (
    '{"schema":{"vendor":"', VENDOR, '","name":"', NAME, '","format":"', FORMAT, '","version":"', VERSION,
    '"},"data":', DATA, ',"hierarchy":{"rootId":"',
)  # fmt: skip
ENTITY_LINE_TAIL: Template = (
    '","rootTstamp":"', ROOT_TSTAMP, '","refRoot":"events","refTree":["events","', NAME, '"],"refParent":"events"}}',
)  # fmt: skip

# The JSON fields whose entities an event's output carries, in shredding order, with their kind.
ENTITY_FIELDS = (("unstruct_event", SELF_DESCRIBING_EVENT), ("derived_contexts", CONTEXT), ("contexts", CONTEXT))


def event_entities() -> str:
    """Every entity of an event with its kind, in shredding order (ENTITY_FIELDS)."""

    def with_kind(entities: str, kind: str) -> str:
        return f"transform({entities}, e -> named_struct('entity', e, 'kind', {literal(kind)}))"

    def entities(name: str) -> str:
        if JSON_WRAPPERS[name][1]:
            return identifier(name)
        return f"CASE WHEN {identifier(name)} IS NULL THEN CAST(array() AS ARRAY<{ENTITY_TYPE}>) ELSE array({identifier(name)}) END"

    return "concat(" + ", ".join(with_kind(entities(name), kind) for name, kind in ENTITY_FIELDS) + ")"


def entity_values(entity: str, root_tstamp: str) -> dict[str, str]:
    """The SQL of an entity's values (ENTITY_VALUES) for templates.sql: `entity` an ENTITY_TYPE."""
    return {
        **{v.name: f"{entity}.{v.name}" for v in ENTITY_VALUES if v is not ROOT_TSTAMP},
        ROOT_TSTAMP.name: root_tstamp,
    }
