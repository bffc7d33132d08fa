"""The kinds of event the shop's tracker sends, as blank per-event values to copy and fill in."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

from snowplow_assets.datagen.enriched.event_templates import PER_EVENT_FIELDS, V_EVENT, V_EVENT_SCHEMA
from snowplow_assets.datagen.enriched.schemas import CHECKOUT_STEP_SCHEMA, LINK_CLICK_SCHEMA


@dataclass(frozen=True)
class EventKind:
    event: str
    schema: str

    @cached_property
    def blank_values(self) -> list[str]:
        """Per-event fields of this kind of event before any other is set: copy, then fill in."""
        values = [""] * len(PER_EVENT_FIELDS)
        values[V_EVENT] = self.event
        values[V_EVENT_SCHEMA] = self.schema.removeprefix("iglu:").split("/")
        return values


PAGE_VIEW = EventKind("page_view", "iglu:com.snowplowanalytics.snowplow/page_view/jsonschema/1-0-0")
PAGE_PING = EventKind("page_ping", "iglu:com.snowplowanalytics.snowplow/page_ping/jsonschema/1-0-0")
STRUCT = EventKind("struct", "iglu:com.google.analytics/event/jsonschema/1-0-0")
LINK_CLICK = EventKind("unstruct", LINK_CLICK_SCHEMA)
CHECKOUT_STEP = EventKind("unstruct", CHECKOUT_STEP_SCHEMA)
