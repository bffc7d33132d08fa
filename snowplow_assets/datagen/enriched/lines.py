"""Enriched TSV lines and the self-describing JSON texts inside them."""

from __future__ import annotations

import json
from collections.abc import Mapping

from snowplow_assets.datagen.enriched.schemas import CONTEXTS_SCHEMA, UNSTRUCT_EVENT_SCHEMA, WEB_PAGE_SCHEMA
from snowplow_assets.events.enriched_schema import FIELD_INDEX, FIELD_NAMES


def make_line(values: Mapping[str, str | None]) -> str:
    """One enriched TSV line (no newline) from field name -> text; fields not given are empty."""
    fields = [""] * len(FIELD_NAMES)
    for name, value in values.items():
        if name not in FIELD_INDEX:
            raise KeyError(f"not an enriched event field: {name!r}")
        if value is not None:
            if "\t" in value or "\n" in value:
                raise ValueError(f"{name} contains a tab or a newline, which would break the TSV line: {value!r}")
            fields[FIELD_INDEX[name]] = value
    return "\t".join(fields)


def contexts_json(entities: list[tuple[str, dict]]) -> str:
    """The `contexts` / `derived_contexts` text for (schema URI, data) entities."""
    return contexts_text(",".join(entity_json(schema, data) for schema, data in entities))


def unstruct_json(schema: str, data: dict) -> str:
    """The `unstruct_event` text for one self-describing event."""
    return _compact({"schema": UNSTRUCT_EVENT_SCHEMA, "data": {"schema": schema, "data": data}})


def _compact(value: object) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def entity_json(schema: str, data: dict) -> str:
    """One self-describing entity, as it appears in a contexts array."""
    return _compact({"schema": schema, "data": data})


_CONTEXTS_OPEN = '{"schema":"' + CONTEXTS_SCHEMA + '","data":['


def contexts_text(joined_entities: str) -> str:
    """The contexts text around entity texts already joined by commas."""
    return _CONTEXTS_OPEN + joined_entities + "]}"


_WEB_PAGE_OPEN = '{"schema":"' + WEB_PAGE_SCHEMA + '","data":{"id":"'


def web_page_entity(page_view_id: str) -> str:
    """The web_page entity of a page view."""
    return _WEB_PAGE_OPEN + page_view_id + '"}}'
