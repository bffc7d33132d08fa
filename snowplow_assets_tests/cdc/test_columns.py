import pytest

from snowplow_assets.cdc.columns import (
    Drift,
    ModelColumns,
    column_drift,
    json_kind,
    merge_column_kinds,
    resolve_columns,
    top_level_kinds,
    typed_view,
)
from snowplow_assets_tests.cdc.builders import ORDER_LINES_YAML, models

# Every topic reads its key from its rows' `id`: that field is the key column's value.
KEYED_BY_ID = models(
    "models:\n  customers:\n    topics: [{topic: a, contract: debezium}, {topic: b, contract: event, id_field: id}]\n"
).model("customers")


@pytest.mark.parametrize(
    ("variant_type", "kind"),
    [
        ("BIGINT", "integer"), ("DECIMAL(2,1)", "number"), ("DECIMAL(18,0)", "integer"), ("DECIMAL(23,0)", "big integer"),
        ("DOUBLE", "number"), ("BOOLEAN", "boolean"), ("STRING", "string"), ("VOID", "null"),
        ("OBJECT<a: BIGINT>", "object"), ("ARRAY<STRING>", "array"), ("VARIANT", "mixed"),
    ],
)  # fmt: skip
def test_json_kinds_from_variant_types(variant_type, kind):
    assert json_kind(variant_type) == kind


def test_top_level_keys_of_an_object_type():
    schema = (
        "OBJECT<`a, b`: DECIMAL(21,1), `x``y`: OBJECT<`c>d`: BIGINT, e: ARRAY<OBJECT<f: STRING>>>, n: VOID, s: STRING>"
    )
    assert top_level_kinds(schema) == {"a, b": "number", "x`y": "object", "n": "null", "s": "string"}
    assert top_level_kinds("OBJECT<>") == {} and top_level_kinds("VOID") == {} and top_level_kinds(None) == {}
    with pytest.raises(ValueError):
        top_level_kinds("ARRAY<BIGINT>")


def test_kinds_merge_across_landings():
    merged = merge_column_kinds(
        {"a": "integer", "b": "null", "c": "string", "d": "integer", "e": "object"},
        {"a": "number", "b": "boolean", "c": "integer", "d": "integer", "f": "array"},
    )
    assert merged == {"a": "number", "b": "boolean", "c": "mixed", "d": "integer", "e": "object", "f": "array"}
    wide = merge_column_kinds({"a": "integer", "b": "big integer"}, {"a": "big integer", "b": "number"})
    assert wide == {"a": "big integer", "b": "number"}, "the wider numeric kind, whose type holds both"


def test_columns_are_the_union_with_sql_types_without_the_key_or_unusable_names():
    columns = resolve_columns(
        {"id": "integer", "email": "string", "Email": "string", "n": "number", "ok": "boolean", "tags": "array",
         "x": "null", "m": "mixed", "__secret": "string", "": "string"},
        KEYED_BY_ID,
    )  # fmt: skip
    assert (
        columns.types
        == {"m": "STRING", "n": "DOUBLE", "ok": "BOOLEAN", "tags": "STRING", "x": "STRING", "Email": "STRING"} | {}
    )
    assert list(columns.types) == sorted(columns.types)
    assert set(columns.skipped) == {"email", "__secret", ""}, "every topic reads the key from id: the key column is it"
    assert "but for case" in columns.skipped["email"] and "reserved" in columns.skipped["__secret"]


def test_of_names_equal_but_for_case_the_first_seen_keeps_the_column():
    kinds = {"email": "string", "Email": "string", "State": "string", "state": "string"}
    columns = resolve_columns(kinds, KEYED_BY_ID, first_seen=["email", "state", "Email", "State"])
    assert (list(columns.types), list(columns.skipped)) == (["email", "state"], ["Email", "State"])
    assert columns.skipped["Email"] == "same name as 'email' but for case"
    columns = resolve_columns(kinds, KEYED_BY_ID, first_seen=["state"])
    assert list(columns.types) == ["Email", "state"], "names never seen in order: sorted order decides"


def test_a_row_field_named_like_the_key_is_listed_when_some_topic_takes_the_key_elsewhere():
    """Such a field is not the key column in those topics' rows: dropped from the table, listed with why."""
    kinds = {"id": "integer", "customerId": "integer", "email": "string"}
    columns = resolve_columns(kinds, models().model("customers"))
    assert columns.types == {"customerId": "BIGINT", "email": "STRING"}
    assert list(columns.skipped) == ["id"]
    assert "customer_events from customerId, customers_raw from the Kafka key" in columns.skipped["id"]
    assert "shop.customers" not in columns.skipped["id"], "a Debezium topic keyed by id reads the key from it"
    assert resolve_columns({"email": "string"}, models().model("customers")).skipped == {}, "no such field, no entry"


def test_drift_lists_added_removed_and_retyped_columns():
    drift = column_drift({"a": "BIGINT", "b": "STRING", "c": "BIGINT"}, {"a": "BIGINT", "c": "DOUBLE", "d": "STRING"})
    assert drift == Drift(added={"d": "STRING"}, removed={"b": "STRING"}, retyped={"c": ("BIGINT", "DOUBLE")})
    assert drift.changed and not column_drift({"a": "BIGINT"}, {"a": "BIGINT"}).changed


def test_typed_view_names_the_key_and_types_the_columns(spark):
    state = spark.createDataFrame(
        [("7", '{"id":7,"e.f":"x","n":1,"obj":{"k":[1,2]},"ok":true}'), ("8", '{"n":2.5}')],
        "__key STRING, __data STRING",
    )
    columns = ModelColumns({"e.f": "STRING", "n": "DOUBLE", "obj": "STRING", "ok": "BOOLEAN"})
    rows = sorted(tuple(r) for r in typed_view(state, ("customer_id",), columns).collect())
    assert rows == [("7", "x", 1.0, '{"k":[1,2]}', True), ("8", None, 2.5, None, None)]
    assert typed_view(state, ("customer_id",), columns, ["ok", "customer_id"]).columns == ["customer_id", "ok"]
    with pytest.raises(KeyError, match="nope"):
        typed_view(state, ("customer_id",), columns, ["nope"])


def test_every_key_column_is_left_out_of_the_columns_and_listed_where_a_topic_keys_elsewhere():
    kinds = {"order_id": "integer", "line_no": "integer", "Line_No": "integer", "orderId": "integer", "sku": "string"}
    columns = resolve_columns(kinds, models(ORDER_LINES_YAML).model("order_lines"))
    assert columns.types == {"orderId": "BIGINT", "sku": "STRING"}
    assert columns.skipped["Line_No"] == "same name as 'line_no' but for case"
    assert columns.skipped["order_id"] == (
        "the order_id column is part of the record key, which topics take from elsewhere "
        "(order_line_events from orderId, lineNo, order_lines_raw from the Kafka key); "
        "their rows' own order_id is only in __data"
    )
    assert set(columns.skipped) == {"Line_No", "line_no", "order_id"}


def test_typed_view_splits_a_key_of_several_columns_into_them(spark):
    state = spark.createDataFrame(
        [('["7","1"]', '{"sku":"a"}'), ('["7","2"]', '{"sku":"b"}'), ('["a\\",\\"b","c"]', "{}")],
        "__key STRING, __data STRING",
    )
    columns = ModelColumns({"sku": "STRING"})
    table = typed_view(state, ("order_id", "line_no"), columns)
    assert table.columns == ["order_id", "line_no", "sku"]
    assert sorted(tuple(r) for r in table.collect()) == [("7", "1", "a"), ("7", "2", "b"), ('a","b', "c", None)]
    keys_only = typed_view(state, ("order_id", "line_no"), columns, ["line_no"])
    assert keys_only.columns == ["order_id", "line_no"] and keys_only.count() == 3
