"""The three contracts that turn a landed Kafka record into a change of one model key (FORMATS.md §7).

Every parsed record of a landing gets exactly one outcome: a change (insert or update, with its row as a
JSON object), a delete, a bad row with a reason, or, when no model declares its topic and one of the models
file's `ignored_topics` fits it, ignored (models.py). Per contract:

`partial` (the seed's Tinybird pipe): the value is the whole row; a null value deletes the key. The key is
`__key`. A row cannot tell an insert from an update, so every row counts as an update. The row may come in
Kafka Connect's JSON envelope (JsonConverter with `schemas.enable`, its default): a value of exactly `schema`,
an object, and `payload`, the row, or null for a delete. (Until 2026-11-28 the envelope was the row, its
columns `schema` and `payload`.) A row whose `__deleted` is `true` (or `"true"`) deletes the key too: that is
how Debezium's ExtractNewRecordState transform, which lands Debezium's changes as plain rows, writes a delete
with `delete.handling.mode=rewrite`, and by default it drops the tombstone after it. (Until 2026-11-28 such a
row was an update, and the key stayed.) A source column of that name would be read the same way; the prefix is
reserved here, and such fields are never columns.

`debezium`: the value is `{"payload": {"op": …, "before": …, "after": …}}` or the bare payload. `op` `c`
(create) and `r` (snapshot read) are inserts, `u` an update, `d` a delete; the row is `after`. `t`, a
truncate, deletes every key of the model: its key is order.TABLE_KEY, whatever its Kafka key (Debezium gives
it none), and order.py says how it applies. (Until 2026-11-28 a truncate was an `unknown_change_type` bad row,
and the rows it removed stayed.) The key is the id field of the row image (`after`, or `before` for a delete)
and, when the image lacks it, the Kafka key. The tombstone Debezium writes after a delete (null value) is a
delete of the Kafka key: harmless after the delete it follows, and still right when compaction removed that
delete. A tombstone whose key is an object without the id field (a topic keyed by another field than the
table's key: `id_field: customerId` where Debezium keys by `id`) cannot name the model's key and is counted as
ignored: it only repeats the `d` before it, whose `before` image gives the id. Until 2026-11-28 it was a
`no_id` bad row, one per delete, and every landing with a delete failed `no_bad_records`. (Compaction removes
a `d` only in favour of its tombstone, and the key's inserts with it: a topic landed again from a compacted
log has nothing of that key for the tombstone to delete, and the landings that took the inserts took the `d`
too.)

`event` (the OMG contract of seed 004): `changeType` INSERT, UPDATE or DELETE; the row is `data`; the key
is `data.<id field>`, or `deletedID` for a delete. A null value is not part of this contract: a bad row.

The Kafka key, where it is used, is its text; a JSON object key (`{"id": 42}`, or Debezium's
`{"payload": {"id": 42}}`) gives its id field. Keys are strings, so 42 and "42" are the same key.

A model keyed by several fields (models.py: `id: [order_id, line_no]`) reads each field as above, from the
same place: the row image, or else the Kafka key, which must then be an object naming them all (Debezium
keys such a table by `{"order_id": 7, "line_no": 2}`); a text Kafka key cannot give them. An event delete's
`deletedID` is then an object naming the topic's id fields. A record that lacks any part has no key
(`no_id`), and the parts are never taken from two places. `__key` is the JSON array of the parts' texts
(models.key_text), `["7","2"]`.

Bad-row reasons: `invalid_json`, `invalid_envelope`, `invalid_timestamp` (landing.py), `unknown_topic`
(no model declares it), `invalid_value` (a string value that is not exactly one JSON value (landing.py), not a
JSON object, a row that is not an object or that holds a number beyond a double's range, a null value where the
contract has none), `unknown_change_type` and `no_id` (no usable key: missing, empty, null, an
object, an array, or a number that only a double from 2^53 up holds, `_scalar`).
"""

from __future__ import annotations

from pyspark.sql import DataFrame

from snowplow_assets.cdc.landing import BEYOND_DOUBLE, ENVELOPE_COLUMNS, computed_once
from snowplow_assets.cdc.models import CdcModels
from snowplow_assets.cdc.order import DELETE, INSERT, TABLE_KEY, UPDATE
from snowplow_assets.events.sql import case, literal
from snowplow_assets.strict_json import beyond_double_in_json

HISTORY, DELETES, BAD, IGNORED = "history", "deletes", "bad", "ignored"
BAD_REASONS = (
    "invalid_json", "invalid_envelope", "invalid_timestamp", "unknown_topic", "invalid_value",
    "unknown_change_type", "no_id",
)  # fmt: skip

# Columns of a classified record: the envelope, then the outcome.
# `__row` is `__data` as a VARIANT, for aggregates over the rows' keys; it is never written.
OUTCOME_COLUMNS = ("__output", "__model", "__key", "__kind", "__data", "__row", "__reason", "__message")


def _map(pairs: dict[str, str]) -> str:
    if not pairs:
        return "CAST(map() AS MAP<STRING, STRING>)"
    return "map(" + ", ".join(f"{literal(k)}, {literal(v)}" for k, v in pairs.items()) + ")"


def _path(field: str) -> str:
    """A variant path to a top-level field; field names are validated identifiers (models.FIELD_NAME)."""
    return literal(f"$['{field}']")


# 2^53: from here on, a double cannot hold every whole number.
DOUBLE_EXACT_LIMIT = 9_007_199_254_740_992
DOUBLE_BEYOND_EXACT = "a number from 2^53 up written with an exponent or in more than 38 digits"


def _scalar(variant: str) -> str:
    """The text of a scalar JSON value; NULL for a missing, null, empty, object or array value.

    A number is a key by its value, as `42` and `"42"` are one key: Spark parses `10.0` as a decimal whose
    text is `10`, but a number with an exponent as a double, whose text would be `10.0` for `1e1` and
    `1.0E20` for `1e20`; so a whole double is written as the integer it is. (Until 2026-11-28, `1e1` and
    `10` were two keys.) A fraction in exponent form beyond Java's plain range (`1.5e-5`) keeps Java's text.

    A double from 2^53 up is no usable key: it holds every whole number near it that is written so, with an
    exponent or in more than 38 digits (which Spark also reads as a double), and not the digits written. Until
    2026-11-28 two 39-digit ids were one key, `1.0E39`, and `12345678901234567890e0` was not the key
    `12345678901234567890` (its delete missed it).
    """
    number = f"try_variant_get({variant}, '$', 'double')"
    is_double = f"schema_of_variant({variant}) = 'DOUBLE'"
    return (
        f"CASE WHEN {variant} IS NULL OR is_variant_null({variant}) "
        f"OR substr(schema_of_variant({variant}), 1, 6) IN ('OBJECT', 'ARRAY<') "
        f"OR ({is_double} AND abs({number}) >= {DOUBLE_EXACT_LIMIT}) THEN NULL "
        f"WHEN {is_double} AND {number} % 1 = 0 THEN CAST(CAST({number} AS DECIMAL(38, 0)) AS STRING) "
        f"ELSE nullif(variant_get({variant}, '$', 'string'), '') END"
    )


def _key(parts: list[str]) -> str:
    """`__key` from the text of each part (models.key_text): NULL unless every part is usable."""
    if len(parts) == 1:
        return parts[0]
    return (
        f"CASE WHEN {' OR '.join(f'{p} IS NULL' for p in parts)} THEN NULL ELSE to_json(array({', '.join(parts)})) END"
    )


def _fields_of(variant: str, fields: tuple[str, ...]) -> str:
    return _key([_scalar(f"variant_get({variant}, {_path(field)})") for field in fields])


def _kafka_key_id(fields: tuple[str, ...]) -> str:
    """The key from the Kafka key: its text, or the id fields of the JSON object it holds (bare or in
    `payload`); a key of several fields can only come from such an object."""
    text = "nullif(__kafka_key, '')" if len(fields) == 1 else "CAST(NULL AS STRING)"
    direct = _fields_of("__key_json", fields)
    wrapped = _fields_of("variant_get(__key_json, '$.payload')", fields)
    return f"CASE WHEN __key_json IS NULL THEN {text} ELSE coalesce({direct}, {wrapped}) END"


def _topics_by_reading(models: CdcModels) -> dict[tuple[str, tuple[str, ...]], list[str]]:
    """The declared topics, grouped by contract and id fields: topics of one group read their keys alike."""
    groups: dict[tuple[str, tuple[str, ...]], list[str]] = {}
    for topic, (model, spec) in sorted(models.topics().items()):
        groups.setdefault((spec.contract, model.id_field(spec)), []).append(topic)
    return dict(sorted(groups.items()))


def _of_topics(topics: list[str]) -> str:
    return f"__topic IN ({', '.join(literal(t) for t in topics)})"


def _id(models: CdcModels) -> str:
    """The key of each record, by its topic's contract and id fields (one branch per such pair)."""
    branches = []
    for (contract, fields), topics in _topics_by_reading(models).items():
        if contract == "partial":
            expression = _kafka_key_id(fields)
        elif contract == "debezium":
            keyed = f"coalesce({_fields_of('__row', fields)}, {_kafka_key_id(fields)})"
            expression = f"CASE WHEN __truncate THEN {literal(TABLE_KEY)} ELSE {keyed} END"
        else:
            # A one-field key is deleted by its value; a key of several, by an object naming every field.
            deleted = _scalar("__deleted_id") if len(fields) == 1 else _fields_of("__deleted_id", fields)
            expression = f"CASE WHEN __kind = '{DELETE}' THEN {deleted} ELSE {_fields_of('__row', fields)} END"
        branches.append((_of_topics(topics), expression))
    return case(*branches) if branches else "CAST(NULL AS STRING)"


def _no_id_message(models: CdcModels) -> str:
    """SQL: what a `no_id` bad row says, naming where its topic's contract looks for the key."""
    branches = []
    for (contract, fields), topics in _topics_by_reading(models).items():
        named = ", ".join(fields)
        in_object = f"a JSON object naming {named}" if len(fields) > 1 else f"its text or a JSON object naming {named}"
        if contract == "partial":
            where = f"the Kafka key ({in_object})"
        elif contract == "debezium":
            where = f"{named} of the row image (after, before for a delete), else the Kafka key ({in_object})"
        else:
            deleted = "its value" if len(fields) == 1 else f"an object naming {named}"
            where = f"{named} of data, or deletedID ({deleted}) for a delete"
        message = f"no usable id (missing, null, empty, an object, an array or {DOUBLE_BEYOND_EXACT}) in {where}"
        branches.append((_of_topics(topics), literal(message)))
    return case(*branches) if branches else literal("no usable id")


# A partial row that Debezium's ExtractNewRecordState rewrote from a delete (above).
_REWRITTEN_DELETE = "coalesce(lower(try_variant_get(__partial_row, '$.__deleted', 'string')) = 'true', FALSE)"
# Kafka Connect's JSON envelope (JsonConverter with schemas.enable): exactly `schema`, an object, and `payload`,
# an object or null. The size is checked first, so that an ordinary row's fields are not looked at again.
_CONNECT_ENVELOPE = (
    "CASE WHEN size(try_variant_get(__parsed_value, '$', 'map<string,variant>')) = 2 "
    "THEN try_variant_get(__parsed_value, '$.schema', 'map<string,variant>') IS NOT NULL "
    "AND (try_variant_get(__parsed_value, '$.payload', 'map<string,variant>') IS NOT NULL "
    "OR is_variant_null(variant_get(__parsed_value, '$.payload'))) ELSE FALSE END"
)


def _bad(reason: str, message: str) -> str:
    return f"named_struct('reason', '{reason}', 'message', {message})"


def classify(envelopes: DataFrame, models: CdcModels) -> DataFrame:
    """ENVELOPE_COLUMNS + OUTCOME_COLUMNS: what each parsed record is, by its topic's contract."""
    topics = models.topics()
    contract_of = _map({topic: spec.contract for topic, (_, spec) in topics.items()})
    model_of = _map({topic: model.name for topic, (model, _) in topics.items()})
    ignored_topic = models.ignored_topic_regex()
    # Declared topics are read whatever pattern they fit. A record whose Kafka coordinates or timestamp are
    # broken is bad whatever its topic; its value, which nothing reads, does not matter.
    ignored = (
        "FALSE"
        if ignored_topic is None
        else "coalesce(__model IS NULL "
        "AND (__envelope_error IS NULL OR __envelope_error.reason = 'invalid_value') "
        f"AND __topic RLIKE {literal(ignored_topic)}, FALSE)"
    )

    contract = (
        computed_once(envelopes)
        .selectExpr(
            *ENVELOPE_COLUMNS,
            f"try_element_at({model_of}, __topic) AS __model",
            f"try_element_at({contract_of}, __topic) AS __contract",
            "__value IS NULL OR is_variant_null(__parsed_value) AS __null_value",
            "CASE WHEN startswith(ltrim(__kafka_key), '{') THEN try_parse_json(__kafka_key) END AS __key_json",
        )
        .selectExpr(
            "*",
            f"{ignored} AS __ignored",
            "NOT __null_value AND startswith(ltrim(__value), '{') AS __object_value",
            # Debezium: the payload, wrapped or bare
            "CASE WHEN __contract = 'debezium' THEN coalesce(variant_get(__parsed_value, '$.payload'), __parsed_value) "
            "END AS __payload",
            # Partial: the row, in Kafka Connect's envelope or bare (above)
            f"CASE WHEN __contract = 'partial' THEN CASE WHEN {_CONNECT_ENVELOPE} "
            "THEN variant_get(__parsed_value, '$.payload') ELSE __parsed_value END END AS __partial_row",
        )
    )
    kinds = computed_once(contract).selectExpr(
        "*",
        "CASE __contract "
        "WHEN 'partial' THEN CASE "
        f"  WHEN __null_value OR is_variant_null(__partial_row) OR {_REWRITTEN_DELETE} THEN '{DELETE}' "
        f"  ELSE '{UPDATE}' END "
        "WHEN 'debezium' THEN CASE "
        f"  WHEN __null_value THEN '{DELETE}' "
        f"  WHEN try_variant_get(__payload, '$.op', 'string') IN ('c', 'r') THEN '{INSERT}' "
        f"  WHEN try_variant_get(__payload, '$.op', 'string') = 'u' THEN '{UPDATE}' "
        f"  WHEN try_variant_get(__payload, '$.op', 'string') IN ('d', 't') THEN '{DELETE}' END "
        "WHEN 'event' THEN CASE try_variant_get(__parsed_value, '$.changeType', 'string') "
        f"  WHEN 'INSERT' THEN '{INSERT}' WHEN 'UPDATE' THEN '{UPDATE}' WHEN 'DELETE' THEN '{DELETE}' END "
        "END AS __kind",
        "CASE __contract WHEN 'debezium' THEN try_variant_get(__payload, '$.op', 'string') "
        "WHEN 'event' THEN try_variant_get(__parsed_value, '$.changeType', 'string') END AS __change_type",
        "coalesce(__contract = 'debezium' AND NOT __null_value "
        "AND try_variant_get(__payload, '$.op', 'string') = 't', FALSE) AS __truncate",
    )
    kinds = computed_once(kinds).selectExpr(
        "*",
        # The row image the key is read from and, for inserts and updates, the row itself.
        "CASE __contract WHEN 'partial' THEN __partial_row "
        f"WHEN 'debezium' THEN CASE WHEN __kind = '{DELETE}' THEN variant_get(__payload, '$.before') "
        "  ELSE variant_get(__payload, '$.after') END "
        "WHEN 'event' THEN variant_get(__parsed_value, '$.data') END AS __row",
        "CASE WHEN __contract = 'event' THEN variant_get(__parsed_value, '$.deletedID') END AS __deleted_id",
    )
    keyed = computed_once(kinds).selectExpr(
        "*",
        f"CASE WHEN __kind IN ('{INSERT}', '{UPDATE}') THEN to_json(__row) END AS __row_json",
        f"{_id(models)} AS __id",
    )
    row_name = "CASE __contract WHEN 'debezium' THEN 'after' WHEN 'event' THEN 'data' ELSE '__value' END"
    expected_types = "CASE __contract WHEN 'event' THEN 'INSERT, UPDATE, DELETE' ELSE 'c, r, u, d, t' END"
    unknown_type = f"concat('change type ', coalesce(__change_type, 'missing'), ' is not one of ', {expected_types})"
    branches = [
        ("__envelope_error IS NOT NULL", "__envelope_error"),
        ("__model IS NULL", _bad("unknown_topic", "concat('no model declares topic ', __topic)")),
        (
            "__contract = 'event' AND __null_value",
            _bad("invalid_value", "'null value: the event contract has no tombstones'"),
        ),
        ("NOT __null_value AND NOT __object_value", _bad("invalid_value", "'__value is not a JSON object'")),
        ("__kind IS NULL", _bad("unknown_change_type", unknown_type)),
        (
            f"__kind IN ('{INSERT}', '{UPDATE}') AND NOT coalesce(startswith(__row_json, '{{'), false)",
            _bad("invalid_value", f"concat({row_name}, ' is not a JSON object')"),
        ),
        # The row as written, read from a string value (landing.py checks an object value, written whole).
        (
            f"__kind IN ('{INSERT}', '{UPDATE}') AND {beyond_double_in_json('__value', '__row_json', integers=True)}",
            _bad("invalid_value", f"concat({row_name}, ' holds ', {literal(BEYOND_DOUBLE)})"),
        ),
        ("__id IS NULL", _bad("no_id", _no_id_message(models))),
    ]
    outcome = case(*branches)
    # Also ignored: a Debezium tombstone whose key is an object without the id field, which repeats the `d`
    # before it (above).
    ignored_or_unkeyed_tombstone = (
        "(__ignored OR coalesce(__envelope_error IS NULL AND __contract = 'debezium' AND __null_value "
        "AND __id IS NULL AND substr(schema_of_variant(__key_json), 1, 6) = 'OBJECT', FALSE))"
    )
    decided = computed_once(keyed).selectExpr(
        *ENVELOPE_COLUMNS,
        f"{ignored_or_unkeyed_tombstone} AS __ignored",
        f"CASE WHEN NOT {ignored_or_unkeyed_tombstone} THEN {outcome} END AS __bad",
        "__model",
        "__id",
        "__kind",
        "__row",
        "__row_json",
    )
    kept = "NOT __ignored AND __bad IS NULL"
    return computed_once(decided).selectExpr(
        *ENVELOPE_COLUMNS,
        f"CASE WHEN __ignored THEN '{IGNORED}' WHEN __bad IS NOT NULL THEN '{BAD}' "
        f"WHEN __kind = '{DELETE}' THEN '{DELETES}' ELSE '{HISTORY}' END AS __output",
        "__model",
        f"CASE WHEN {kept} THEN __id END AS __key",
        f"CASE WHEN {kept} THEN __kind END AS __kind",
        f"CASE WHEN {kept} AND __kind != '{DELETE}' THEN __row_json END AS __data",
        f"CASE WHEN {kept} AND __kind != '{DELETE}' THEN __row END AS __row",
        "__bad.reason AS __reason",
        "__bad.message AS __message",
    )
