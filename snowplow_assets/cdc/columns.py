"""A model's columns: the union of the keys seen in its rows across all its topics, with types (seed 004).

Like the dbt macro of seed 004, the columns are every top-level key of every insert or update row the
model's topics ever landed (the rows of later-deleted keys included), so a column never disappears
because its last row did. Each landing records the JSON type of every key it saw (one aggregate in the
ingestion job); a model's types merge those:

| JSON values seen (nulls ignored)  | column type |
|-----------------------------------|-------------|
| integers (that fit 64 bits)       | BIGINT      |
| integers, some of 19 to 38 digits | DECIMAL(38,0) |
| numbers, or integers and numbers, or integers of more than 38 digits | DOUBLE |
| booleans                          | BOOLEAN     |
| strings                           | STRING      |
| objects, arrays, only nulls, or a mix of kinds | STRING (JSON text for objects, arrays and numbers) |

Numbers whose fractions are all zeros (`20.0`, as Debezium writes a float column's whole values) can count as
integers: JSON parsing keeps no trailing zeros (their text in `__data` is `20`), so a column of them alone is
BIGINT. column_tests.py compares an integer column's accepted values as exact numbers for that reason.

Integers beyond 64 bits (MySQL's `BIGINT UNSIGNED`, `NUMERIC(20,0)`) are exact in DECIMAL(38,0). Until
2026-11-28 one such value made its whole column DOUBLE, and distinct values above 2^53 rounded to one (in the
batches, `latest` and the column tests; `__data` kept the text). A landing ingested before then recorded such
a column's values as numbers: ingest it again (`process --ingest`) for the exact type.

Columns leave out the key (the model's `id` names the key column, or columns) and names the typed table cannot
hold: empty names, names starting with `__` (bookkeeping columns use that prefix) and names equal but for case
to a name kept before them (Spark resolves columns case-insensitively). Those keys stay in each row's JSON
(`__data`); the batch manifest lists them as skipped, with the reason.

Of names equal but for case, the one seen first keeps the column: the one in the landing with the model's
earliest record (history.model_columns), and within one landing the first in sorted order. So one stray
`Email` row in a later landing is skipped, instead of renaming the `email` column: the typed column reads
its values by its name, so a renamed column would have been empty in every other row, and column tests
naming `email` would have failed. (Until 2026-11-28 sorted order alone decided, and `Email` won.) The order
is the data's, not the arrival's, since landing names need not sort by time: a landing ingested later whose
records are older than every other landing's still decides, and can rename the column.

A row key named like the model's id is the key column's value only in the topics that read the key from
that field (Debezium and event topics without another `id_field`). When the model has a topic that takes
its key elsewhere (a partial topic: the Kafka key; another `id_field`), that topic's rows may carry an
`id` of their own, which the key column does not show: the field is then listed as skipped, naming those
topics, rather than dropped without trace. Decision: the key column keeps the id name (the documented
rule, and what `latest` sorts and the column tests name); the row's field is not renamed into a column of
an invented name.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from snowplow_assets.cdc.models import RESERVED_PREFIX, ModelSpec
from snowplow_assets.cdc.order import DATA, KEY
from snowplow_assets.events.sql import identifier

NULL, BOOLEAN, INTEGER, BIG_INTEGER, NUMBER, STRING, OBJECT, ARRAY, MIXED = (
    "null", "boolean", "integer", "big integer", "number", "string", "object", "array", "mixed",
)  # fmt: skip
SQL_TYPE = {BOOLEAN: "BOOLEAN", INTEGER: "BIGINT", BIG_INTEGER: "DECIMAL(38,0)", NUMBER: "DOUBLE"}  # else STRING
INTEGER_TYPES = (SQL_TYPE[INTEGER], SQL_TYPE[BIG_INTEGER])
# Of two numeric kinds, the one whose type holds both: a merge takes the wider.
_NUMERIC_WIDTH = {INTEGER: 0, BIG_INTEGER: 1, NUMBER: 2}


def json_kind(variant_type: str) -> str:
    """The JSON kind of a value from the type Spark's schema_of_variant gives it."""
    if variant_type == "VOID":
        return NULL
    if variant_type in ("BIGINT", "INT", "SMALLINT", "TINYINT"):
        return INTEGER
    if variant_type.startswith("DECIMAL("):
        precision, scale = (int(p) for p in variant_type[len("DECIMAL(") : -1].split(","))
        if scale:
            return NUMBER
        return INTEGER if precision <= 18 else BIG_INTEGER  # a variant decimal has at most 38 digits
    if variant_type in ("DOUBLE", "FLOAT"):
        return NUMBER
    if variant_type == "BOOLEAN":
        return BOOLEAN
    if variant_type == "STRING":
        return STRING
    if variant_type.startswith("OBJECT<"):
        return OBJECT
    if variant_type.startswith("ARRAY<"):
        return ARRAY
    return MIXED  # VARIANT: schema_of_variant_agg saw different kinds


def merge_kinds(a: str, b: str) -> str:
    if a == b or b == NULL:
        return a
    if a == NULL:
        return b
    if a in _NUMERIC_WIDTH and b in _NUMERIC_WIDTH:
        return max(a, b, key=_NUMERIC_WIDTH.__getitem__)
    return MIXED


def top_level_kinds(object_type: str | None) -> dict[str, str]:
    """`{key: JSON kind}` from a schema_of_variant(_agg) type such as `OBJECT<a: BIGINT, `b c`: STRING>`.

    `VOID` (no rows) and NULL give no keys. Names with unusual characters come back-quoted, a back-quote
    doubled inside them, and may contain `,`, `:` or `<`: the scan honours the quoting at every depth, and
    the commas of `DECIMAL(p,s)`.
    """
    if object_type is None or object_type == "VOID":
        return {}
    if not (object_type.startswith("OBJECT<") and object_type.endswith(">")):
        raise ValueError(f"not an object type: {object_type!r}")
    body = object_type[len("OBJECT<") : -1]
    fields: list[tuple[str, str]] = []
    depth, quoted, start, i = 0, False, 0, 0
    while i < len(body):
        char = body[i]
        if char == "`":
            if quoted and body[i + 1 : i + 2] == "`":
                i += 2
                continue
            quoted = not quoted
        elif not quoted:
            if char in "<(":
                depth += 1
            elif char in ">)":
                depth -= 1
            elif char == "," and depth == 0:
                fields.append(_field(body[start:i]))
                start = i + 1
        i += 1
    if body.strip():
        fields.append(_field(body[start:]))
    return {name: json_kind(kind) for name, kind in fields}


def _field(text: str) -> tuple[str, str]:
    text = text.strip()
    if text.startswith("`"):
        end = 1
        while True:
            end = text.index("`", end)
            if text[end + 1 : end + 2] == "`":
                end += 2
                continue
            break
        name, rest = text[1:end].replace("``", "`"), text[end + 1 :]
    else:
        name, _, rest = text.partition(":")
        rest = ":" + rest
    if not rest.startswith(":"):
        raise ValueError(f"not a field of an object type: {text!r}")
    return name, rest[1:].strip()


def merge_column_kinds(*kinds: dict[str, str]) -> dict[str, str]:
    merged: dict[str, str] = {}
    for one in kinds:
        for name, kind in one.items():
            merged[name] = merge_kinds(merged[name], kind) if name in merged else kind
    return merged


@dataclass(frozen=True)
class ModelColumns:
    types: dict[str, str]  # column -> Spark SQL type, sorted by name
    skipped: dict[str, str] = field(default_factory=dict)  # key -> why it is not a column

    def ddl(self, names: list[str] | None = None) -> str:
        chosen = self.types if names is None else {n: self.types[n] for n in names}
        return "struct<" + ", ".join(f"{identifier(n)}: {t}" for n, t in chosen.items()) + ">"


def resolve_columns(kinds: dict[str, str], model: ModelSpec, first_seen: Sequence[str] = ()) -> ModelColumns:
    """The columns of `kinds`; of names equal but for case, the earliest in `first_seen` (then in sorted order)."""
    types: dict[str, str] = {}
    skipped: dict[str, str] = {}
    taken = {name.lower(): name for name in model.id}
    elsewhere = model.keyed_elsewhere()
    for name in dict.fromkeys([*(n for n in first_seen if n in kinds), *sorted(kinds)]):
        if name in model.id:
            # A key column holds its part of the record key. Where every topic reads the key from these fields,
            # that is this field's value and nothing is lost; where some topic takes it elsewhere, the field's
            # own values in that topic's rows are in no column, which the operator must be able to see.
            if elsewhere:
                keyed = ", ".join(f"{topic} from {source}" for topic, source in elsewhere.items())
                key = "part of the record key" if len(model.id) > 1 else "the record key"
                skipped[name] = (
                    f"the {name} column is {key}, which topics take from elsewhere ({keyed}); "
                    f"their rows' own {name} is only in __data"
                )
        elif not name:
            skipped[name] = "empty name"
        elif name.startswith(RESERVED_PREFIX):
            skipped[name] = f"names starting with {RESERVED_PREFIX} are reserved"
        elif name.lower() in taken:
            skipped[name] = f"same name as {taken[name.lower()]!r} but for case"
        else:
            taken[name.lower()] = name
            types[name] = SQL_TYPE.get(kinds[name], "STRING")
    return ModelColumns(dict(sorted(types.items())), dict(sorted(skipped.items())))


@dataclass(frozen=True)
class Drift:
    added: dict[str, str]
    removed: dict[str, str]
    retyped: dict[str, tuple[str, str]]  # column -> (before, after)

    @property
    def changed(self) -> bool:
        return bool(self.added or self.removed or self.retyped)


def column_drift(before: dict[str, str], after: dict[str, str]) -> Drift:
    return Drift(
        added={n: t for n, t in after.items() if n not in before},
        removed={n: t for n, t in before.items() if n not in after},
        retyped={n: (before[n], after[n]) for n in before.keys() & after.keys() if before[n] != after[n]},
    )


def key_columns(id_names: tuple[str, ...]) -> list[Column]:
    """The record key as the model's key columns: `__key` itself, or the parts of its JSON array
    (models.key_text), each a STRING under its name."""
    if len(id_names) == 1:
        return [F.col(KEY).alias(id_names[0])]
    parts = F.from_json(F.col(KEY), "array<string>")
    return [parts.getItem(index).alias(name) for index, name in enumerate(id_names)]


def typed_view(
    state: DataFrame, id_names: tuple[str, ...], columns: ModelColumns, names: list[str] | None = None
) -> DataFrame:
    """The model as a table: its key under the model's key column names, then its columns (all, or `names`),
    typed."""
    chosen = list(columns.types) if names is None else names
    unknown = [n for n in chosen if n not in columns.types and n not in id_names]
    if unknown:
        raise KeyError(f"not columns of the model: {unknown} (columns: {[*id_names, *columns.types]})")
    data = [n for n in chosen if n not in id_names]
    keys = key_columns(id_names)
    if not data:
        return state.select(*keys)
    # One parse per row: fields taken one by one from from_json are each given their own, narrower parse.
    row = state.select(*keys, F.from_json(F.col(DATA), columns.ddl(data)).alias("__row"))
    return row.select(*(identifier(n) for n in id_names), "__row.*")
