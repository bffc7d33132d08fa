"""Landed Kafka records for CDC tests: JSON lines in the three contracts, and models files."""

from __future__ import annotations

import json
from pathlib import Path

from snowplow_assets.cdc.models import CdcModels, parse_models
from snowplow_assets.lake import Lake

# The issue's example, as written.
ISSUE_MODELS_YAML = """
models:
  customers:
    id: id                       # key column of the model (default: id)
    topics:
      - {topic: shop.customers, contract: debezium}
      - {topic: customer_events, contract: event, id_field: customerId}
      - {topic: customers_raw, contract: partial}
    tests:
      not_null: [email]
      unique: [id]
      accepted_values: {state: [active, invited]}
"""
DEBEZIUM, EVENT, PARTIAL = "shop.customers", "customer_events", "customers_raw"

# A model keyed by two columns: an order's lines, each topic with its own names for the parts.
ORDER_LINES_YAML = """
models:
  order_lines:
    id: [order_id, line_no]
    topics:
      - {topic: shop.order_lines, contract: debezium}
      - {topic: order_line_events, contract: event, id_field: [orderId, lineNo]}
      - {topic: order_lines_raw, contract: partial}
    tests:
      not_null: [line_no]
      unique: [order_id]         # fails: an order has many lines
"""
LINES_DEBEZIUM, LINES_EVENT, LINES_PARTIAL = "shop.order_lines", "order_line_events", "order_lines_raw"


def models(text: str = ISSUE_MODELS_YAML) -> CdcModels:
    return parse_models(text)


def record(
    topic: str, value: object, key: object = "1", ts: object = 1_000, offset: int = 0, partition: int = 0
) -> str:
    return json.dumps(
        {
            "__topic": topic,
            "__partition": partition,
            "__offset": offset,
            "__timestamp": ts,
            "__key": key,
            "__value": value,
        }
    )


def raw_record(
    topic: str, value: str, key: object = "1", ts: object = 1_000, offset: int = 0, partition: int = 0
) -> str:
    """A record whose `__value` is the text `value` as written, JSON or not (json.dumps cannot write NaN or 1e400)."""
    return record(topic, "\0", key, ts, offset, partition).replace('"\\u0000"', value)


def partial(key: int, ts: int, offset: int, row: dict | None, partition: int = 0) -> str:
    return record(PARTIAL, None if row is None else {"id": key, **row}, str(key), ts, offset, partition)


def debezium(op: str, key: int, ts: int, offset: int, row: dict | None = None, wrapped: bool = True) -> str:
    image = None if row is None else {"id": key, **row}
    payload = {"op": op, "before": image if op == "d" else None, "after": None if op == "d" else image}
    return record(DEBEZIUM, {"payload": payload} if wrapped else payload, json.dumps({"id": key}), ts, offset)


def event(change: str, key: int, ts: int, offset: int, row: dict | None = None) -> str:
    value = (
        {"changeType": change, "deletedID": key}
        if change == "DELETE"
        else {"changeType": change, "data": {"customerId": key, **(row or {})}}
    )
    return record(EVENT, value, str(key), ts, offset)


def write_landing(
    lake: Lake, name: str, lines: list[str], *, part: str = "part-00000.json", marker: bool = True
) -> Path:
    folder = Path(lake.cdc_landing(name))
    folder.mkdir(parents=True, exist_ok=True)
    (folder / part).write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    if marker:
        (folder / "_SUCCESS").touch()
    return folder


def write_models(path: Path, text: str = ISSUE_MODELS_YAML) -> Path:
    path.write_text(text, encoding="utf-8")
    return path
