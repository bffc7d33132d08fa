"""Reading a generated run folder back, judging each line independently of the generator."""

from __future__ import annotations

import gzip
import json
import re

from snowplow_assets.datagen.enriched import CONTEXTS_SCHEMA, UNSTRUCT_EVENT_SCHEMA, WEB_PAGE_SCHEMA, GenerationStats
from snowplow_assets.events.enriched_schema import ENRICHED_FIELDS, FIELD_COUNT, FIELD_INDEX, FieldType

_UUID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$")
_TIMESTAMP = re.compile(r"^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}\.\d{3}$")
_INT = re.compile(r"^-?\d{1,10}$")
_DOUBLE = re.compile(r"^-?\d+(\.\d+)?$")
_IGLU_URI = re.compile(r"^iglu:[a-zA-Z0-9\-_.]+/[a-zA-Z0-9\-_]+/[a-zA-Z0-9\-_]+/[1-9]\d*-\d+-\d+$")


def lines(stats: GenerationStats) -> list[str]:
    found: list[str] = []
    for path in stats.files:
        opener = gzip.open if path.suffix == ".gz" else open
        with opener(path, "rt", encoding="utf-8", newline="") as f:  # type: ignore[operator]
            found += f.read().splitlines(keepends=True)
    return found


def defect(line: str) -> str | None:
    """The bad line kind of a line, judged independently of the generator; None for a good line."""
    if "\t" not in line:
        return "not_tsv"
    fields = line.removesuffix("\n").split("\t")
    if len(fields) != FIELD_COUNT:
        return "truncated"
    for field in ENRICHED_FIELDS:
        text = fields[field.index]
        if field.type is FieldType.UUID and not _UUID.match(text):
            return "invalid_uuid"
        if field.type is FieldType.TIMESTAMP and text and not _TIMESTAMP.match(text):
            return "invalid_timestamp"
        if field.type is FieldType.INT and text and not _INT.match(text):
            return "invalid_int"
        if field.type is FieldType.BOOLEAN and text not in ("", "0", "1"):
            return "invalid_boolean"
        if field.type is FieldType.DOUBLE and text and not _DOUBLE.match(text):
            return "invalid_double"
        if field.type is FieldType.JSON and text:
            try:
                wrapper = json.loads(text)
            except json.JSONDecodeError:
                return "invalid_json"
            expected = UNSTRUCT_EVENT_SCHEMA if field.name == "unstruct_event" else CONTEXTS_SCHEMA
            if wrapper["schema"] != expected:
                return "wrong_wrapper_schema"
            entities = [wrapper["data"]] if field.name == "unstruct_event" else wrapper["data"]
            if not all(_IGLU_URI.match(entity["schema"]) and isinstance(entity["data"], dict) for entity in entities):
                return "invalid_iglu_uri"
    return None


def good_fields(stats: GenerationStats) -> list[list[str]]:
    return [line.removesuffix("\n").split("\t") for line in lines(stats) if defect(line) is None]


def value(fields: list[str], name: str) -> str:
    return fields[FIELD_INDEX[name]]


def web_page_id(fields: list[str]) -> str:
    contexts = json.loads(value(fields, "contexts"))["data"]
    return next(entity["data"]["id"] for entity in contexts if entity["schema"] == WEB_PAGE_SCHEMA)
