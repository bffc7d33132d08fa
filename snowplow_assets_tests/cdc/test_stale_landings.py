"""Landings read under other models than the models file declares now (stale_landings.py)."""

import dataclasses
import json

from snowplow_assets.cdc.history import IngestedLanding
from snowplow_assets.cdc.stale_landings import model_readings, reading_changes, stale_landings
from snowplow_assets_tests.cdc.builders import ISSUE_MODELS_YAML, models

READ = {"shop.customers": "customers/debezium/id", "customer_events": "customers/event/customerId", "other": None}


def _landing(name: str, topics: dict | None) -> IngestedLanding:
    return IngestedLanding(name, "token", "2026-11-26T00:00:00+00:00", 1, 0, 0, 0, 0, 0, {}, {}, topics)


def test_a_landing_is_stale_when_a_topic_it_holds_is_read_otherwise():
    ingested = {
        "a": _landing("a", READ),
        "b": _landing("b", {"customers_raw": "customers/partial/id"}),
        "before_topics_were_recorded": _landing("before_topics_were_recorded", None),
    }
    assert stale_landings(ingested, models()) == {}
    id_field = models(ISSUE_MODELS_YAML.replace("id_field: customerId", "id_field: customer_id"))
    assert stale_landings(ingested, id_field) == {
        "a": ["customer_events: customers/event/customerId -> customers/event/customer_id"]
    }
    declared = models(ISSUE_MODELS_YAML + "  others:\n    topics: [{topic: other, contract: partial}]\n")
    assert stale_landings(ingested, declared) == {"a": ["other: no model (bad rows) -> others/partial/id"]}
    dropped = models(ISSUE_MODELS_YAML.replace("      - {topic: customers_raw, contract: partial}\n", ""))
    assert stale_landings(ingested, dropped) == {"b": ["customers_raw: customers/partial/id -> no model (bad rows)"]}
    assert stale_landings(ingested, declared, model="customers") == {}, "a change that concerns others only"
    assert stale_landings(ingested, declared, model="others") == stale_landings(ingested, declared)
    tests_only = models(ISSUE_MODELS_YAML.replace("[email]", "[email, state]"))
    assert stale_landings(ingested, tests_only) == {}, "a model's tests do not change how records are read"


def test_a_summary_written_before_topics_were_recorded_still_loads():
    old = {k: v for k, v in dataclasses.asdict(_landing("a", None)).items() if k != "topics"}
    assert IngestedLanding.from_json(json.dumps(old)).topics is None


def test_a_topic_ignored_since_or_declared_after_being_ignored_makes_its_landings_stale():
    ignoring = models(ISSUE_MODELS_YAML + "ignored_topics: ['oth*']\n")
    bad_then = {"a": _landing("a", READ)}
    assert stale_landings(bad_then, ignoring) == {"a": ["other: no model (bad rows) -> ignored"]}
    assert stale_landings(bad_then, ignoring, model="customers") == {}, "ignoring a topic concerns no model"
    ignored_then = {"c": _landing("c", {"other": "ignored"})}
    assert stale_landings(ignored_then, ignoring) == {}
    assert stale_landings(ignored_then, models()) == {"c": ["other: ignored -> no model (bad rows)"]}
    declared = models(
        ISSUE_MODELS_YAML + "  others:\n    topics: [{topic: other, contract: partial}]\nignored_topics: ['oth*']\n"
    )
    assert stale_landings(ignored_then, declared) == {"c": ["other: ignored -> others/partial/id"]}
    assert stale_landings(ignored_then, declared, model="others") == stale_landings(ignored_then, declared)


def test_the_readings_a_batch_keeps_and_how_they_changed_for_one_model():
    landing = _landing("a", READ)
    then = model_readings(landing, "customers")
    assert then == {"customer_events": "customers/event/customerId", "shop.customers": "customers/debezium/id"}
    assert model_readings(_landing("old", None), "customers") is None, "not recorded: cannot be compared"
    assert reading_changes(then, landing, "customers") == []
    now = {"shop.customers": "accounts/debezium/id", "other": "customers/partial/id"}
    assert reading_changes(then, _landing("a", now), "customers") == [
        "customer_events: customers/event/customerId -> no longer in the landing",
        "other: not customers -> customers/partial/id",
        "shop.customers: customers/debezium/id -> accounts/debezium/id",
    ]
