"""Output records: each line a good or bad line of a batch becomes, as SQL, with the folder it is written to.

A record (output_folders.RECORD_TYPE) is `folder`, `head` and `tail`: the line is `head || event id ||
tail`, or `head` alone when the tail is null (a bad row, whose text names no id that deduplication could
change). The parse pass stages every line's records once (parse_pass.py); the output pass only puts the
event's final id between the parts (output_pass.py).
"""

from __future__ import annotations

from pyspark.sql import DataFrame

from snowplow_assets.events import bad_rows, shred, templates
from snowplow_assets.events.output_folders import ATOMIC_EVENTS, BAD, entity_folder_sql
from snowplow_assets.events.sql import identifier, literal, named_struct

# An entity's rootTstamp: its event's collector_tstamp, as the loaders' hierarchy names it.
ROOT_TSTAMP = shred.render_timestamp("collector_tstamp")


def record(output: str, head: str, tail: str = "CAST(NULL AS STRING)") -> str:
    """One line of a whole output (atomic events, bad rows): `head || event id || tail`, or `head` alone
    with a null tail."""
    return named_struct(folder=literal(output), head=head, tail=tail)


def record_line(record: str, event_id: str) -> str:
    """The line of `record` (a RECORD_TYPE value) given its event's final id: `head || event id || tail`, or
    `head` alone when the tail is null."""
    return (
        f"CASE WHEN {record}.tail IS NULL THEN {record}.head ELSE concat({record}.head, {event_id}, {record}.tail) END"
    )


def entity_record(entity: str, root_tstamp: str) -> str:
    """An entity's line in its type's folder (output_folders.ENTITY_FOLDER): `entity` a parse.ENTITY_TYPE."""
    values = shred.entity_values(entity, root_tstamp)
    head, tail = (templates.sql(t, values) for t in (shred.ENTITY_LINE_HEAD, shred.ENTITY_LINE_TAIL))
    return named_struct(folder=entity_folder_sql(values), head=head, tail=tail)


def render_entities(parsed: DataFrame, good: str) -> DataFrame:
    """A parsed event (parse.py) with `entity_lines`, a record per entity in shredding order, and
    `entity_types`, each entity's schema and kind, as the fast path's function renders them itself from the
    same templates (canonical.py); both null unless `good`. `root_tstamp` names the hierarchy's rootTstamp."""
    with_entities = parsed.selectExpr("*", f"CASE WHEN {good} THEN {shred.event_entities()} END AS _entities")
    return with_entities.selectExpr(
        *(identifier(c) for c in parsed.columns),
        f"transform(_entities, e -> {entity_record('e.entity', 'root_tstamp')}) AS entity_lines",
        "transform(_entities, e -> named_struct('schema', e.entity.schema, 'kind', e.kind)) AS entity_types",
    )


def parsing_error_records(line: str) -> str:
    """The output of a line the parser rejected: its loader_parsing_error bad row, from `failure`."""
    return f"array({record(BAD, bad_rows.loader_parsing_error('failure', line))})"


def event_records(atomic_head: str, atomic_tail: str) -> str:
    """The output of a good event: its atomic-events line, from the two parts around its id, then its
    `entity_lines`."""
    return f"concat(array({record(ATOMIC_EVENTS, atomic_head, atomic_tail)}), entity_lines)"
