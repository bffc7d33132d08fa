import pytest

from snowplow_assets.cdc.models import IGNORED_TOPIC, ModelsFileError, key_text, load_models, parse_models
from snowplow_assets.settings import DEFAULT_CDC_MODELS, Settings
from snowplow_assets_tests.cdc.builders import ISSUE_MODELS_YAML, ORDER_LINES_YAML, models


def test_the_issue_format_is_accepted_as_written():
    customers = models().model("customers")
    assert customers.id == ("id",)
    assert [(t.topic, t.contract, customers.id_field(t)) for t in customers.topics] == [
        ("shop.customers", "debezium", ("id",)),
        ("customer_events", "event", ("customerId",)),
        ("customers_raw", "partial", ("id",)),
    ]
    assert customers.tests.not_null == ["email"] and customers.tests.unique == ["id"]
    assert customers.tests.accepted_values == {"state": ["active", "invited"]}
    assert set(models().topics()) == {"shop.customers", "customer_events", "customers_raw"}


def test_defaults_id_and_id_field_and_tests():
    spec = parse_models("models:\n  orders:\n    topics: [{topic: shop.orders, contract: partial}]\n").model("orders")
    assert spec.id == ("id",) and spec.id_field(spec.topics[0]) == ("id",)
    assert not (spec.tests.not_null or spec.tests.unique or spec.tests.accepted_values)
    keyed = parse_models("models:\n  orders:\n    id: order_no\n    topics: [{topic: o, contract: event}]\n").model(
        "orders"
    )
    assert keyed.id_field(keyed.topics[0]) == ("order_no",), "a topic's id field defaults to the model's key column"


def test_digest_follows_what_the_model_reads():
    base = models().model("customers").digest
    renamed = models(ISSUE_MODELS_YAML.replace("id_field: customerId", "id_field: customer_id")).model("customers")
    retested = models(ISSUE_MODELS_YAML.replace("[email]", "[email, state]")).model("customers")
    assert renamed.digest != base
    assert retested.digest == base, "tests do not change what a batch holds"


def test_a_key_of_several_columns_and_the_fields_that_hold_it():
    lines = models(ORDER_LINES_YAML)
    spec = lines.model("order_lines")
    assert spec.id == ("order_id", "line_no")
    assert [spec.id_field(t) for t in spec.topics] == [
        ("order_id", "line_no"),
        ("orderId", "lineNo"),
        ("order_id", "line_no"),
    ]
    assert spec.keyed_elsewhere() == {"order_line_events": "orderId, lineNo", "order_lines_raw": "the Kafka key"}
    assert lines.reading("order_line_events") == "order_lines/event/orderId,lineNo"
    assert lines.reading("shop.order_lines") == "order_lines/debezium/order_id,line_no"
    swapped = models(ORDER_LINES_YAML.replace("[orderId, lineNo]", "[lineNo, orderId]")).model("order_lines")
    assert swapped.digest != spec.digest, "the parts are matched by position: another order reads other keys"


def test_a_one_column_key_reads_and_digests_as_it_always_did():
    """A one-element list is the name; and the digest of a one-column model is the one it had before keys of
    several columns existed (2026-11-28), so that upgrading does not recompute every batch in full."""
    as_list = models(ISSUE_MODELS_YAML.replace("id: id ", "id: [id]").replace("customerId}", "[customerId]}"))
    assert as_list.model("customers") == models().model("customers")
    assert models().model("customers").digest == "aad5a1aa7dd8f12f"
    assert models().reading("customer_events") == "customers/event/customerId"


def test_key_text_is_the_text_itself_or_a_json_array_no_two_keys_share():
    assert key_text(["42"]) == "42"
    assert key_text(["7", "2"]) == '["7","2"]'
    assert key_text(['a","b', "c"]) != key_text(["a", 'b","c'])
    assert key_text(["ü", "x"]) == '["ü","x"]', "written as Spark's to_json writes it"


def test_digest_follows_the_order_of_changes(monkeypatch):
    """Batches cut under an earlier order (order.ORDER_VERSION) are recomputed in full, not merged into."""
    base = models().model("customers").digest
    monkeypatch.setattr("snowplow_assets.cdc.models.ORDER_VERSION", 1)
    assert models().model("customers").digest != base


def test_how_each_topic_is_read_declared_topics_first_then_ignored_patterns():
    ignoring = models(ISSUE_MODELS_YAML + "ignored_topics: ['shop.*', '__debezium-heartbeat.*', exact_one]\n")
    assert ignoring.reading("shop.customers") == "customers/debezium/id", "declared, though a pattern fits it"
    assert ignoring.reading("customer_events") == "customers/event/customerId"
    assert ignoring.reading("shop.inventory.orders") == ignoring.reading("shop.") == IGNORED_TOPIC
    assert ignoring.reading("__debezium-heartbeat.shop") == ignoring.reading("exact_one") == IGNORED_TOPIC
    # `.` is a dot and `*` the only wildcard; a pattern fits the whole name, up to its very end
    assert ignoring.reading("shopping") is None and ignoring.reading("exact_ones") is None
    assert ignoring.reading("exact_one\n") is None and ignoring.reading("my.shop.x") is None
    assert models().reading("shop.inventory.orders") is None, "nothing is ignored unless the file says so"
    assert models().ignored_topic_regex() is None


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        (
            "models:\n  m:\n    topics: [{topic: t, contract: avro}]\n",
            "contract: Input should be 'partial', 'debezium' or 'event' (got 'avro')",
        ),
        ("models:\n  m:\n    topics: [{topic: t, contract: partial, contarct: event}]\n", "contarct"),
        ("models:\n  m:\n    topics: []\n", "topics"),
        ("models:\n  ../evil:\n    topics: [{topic: t, contract: partial}]\n", "not a CDC model name"),
        (
            "models:\n  a:\n    topics: [{topic: t, contract: partial}]\n  b:\n    topics: [{topic: t, contract: event}]\n",
            "only one model",
        ),
        ("models:\n  m:\n    topics: [{topic: 'no spaces', contract: partial}]\n", "Kafka topic"),
        ("models:\n  m:\n    topics: [{topic: t, contract: event, id_field: 'a.b'}]\n", "field name"),
        # A final line break is not the end of a name: YAML can carry one in a quoted string.
        ('models:\n  m:\n    topics: [{topic: "orders\\n", contract: partial}]\n', "Kafka topic"),
        ('models:\n  m:\n    topics: [{topic: t, contract: event, id_field: "id\\n"}]\n', "field name"),
        ("models:\n  m:\n    id: __key\n    topics: [{topic: t, contract: event}]\n", "key column"),
        ("models:\n  m:\n    id: [a, __b]\n    topics: [{topic: t, contract: event}]\n", "may not start with __"),
        ("models:\n  m:\n    id: []\n    topics: [{topic: t, contract: event}]\n", "a list of field names"),
        ("models:\n  m:\n    id: [a, 2]\n    topics: [{topic: t, contract: event}]\n", "a list of field names"),
        ("models:\n  m:\n    id: [a, b, A]\n    topics: [{topic: t, contract: event}]\n", "names a field twice"),
        (
            "models:\n  m:\n    id: [a, b, c, d, e, f, g, h, i]\n    topics: [{topic: t, contract: event}]\n",
            "more than 8",
        ),
        ("models:\n  m:\n    id: [a, b]\n    topics: [{topic: t, contract: event, id_field: x}]\n", "of ['t']"),
        ("models:\n  m:\n    topics: [{topic: t, contract: event, id_field: [x, y]}]\n", "1 column(s) ['id']"),
        (
            "models:\n  m:\n    id: [a, b]\n    topics: [{topic: t, contract: event, id_field: [x, 'y.z']}]\n",
            "field name",
        ),
        (
            "models:\n  m:\n    topics: [{topic: t, contract: event}]\n    tests: {accepted_values: {state: []}}\n",
            "no values",
        ),
        ("models: {}\nignored_topics: ['shop/*']\n", "ignored_topics: Value error, not a topic name with * for"),
        ("models: {}\nignored_topics: [a, '']\n", "at most 249): ''"),
        ('models: {}\nignored_topics: ["x\\n"]\n', "at most 249): 'x\\n'"),
        ("models: {}\nignored_topics: shop.*\n", "ignored_topics: Input should be a valid list"),
        ("models: [1, 2]\n", "models"),
        ("models: {m: [\n", "not valid YAML"),
    ],
)
def test_invalid_models_are_rejected_with_the_reason(text, problem):
    with pytest.raises(ModelsFileError, match="invalid CDC models|not valid YAML") as error:
        parse_models(text, "models.yaml")
    assert problem in str(error.value) and "models.yaml" in str(error.value)


def test_unknown_model_and_missing_file(tmp_path):
    with pytest.raises(KeyError, match="customers"):
        models().model("orders")
    with pytest.raises(ModelsFileError, match="not found"):
        load_models(tmp_path / "missing.yaml")


def test_default_models_file_is_packaged_and_valid(monkeypatch, tmp_path):
    assert Settings().cdc_models == str(DEFAULT_CDC_MODELS)
    assert "customers" in load_models(DEFAULT_CDC_MODELS).models
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("SNOWPLOW_CDC_MODELS", "mine.yaml")
    assert Settings().cdc_models == str(tmp_path / "mine.yaml")
