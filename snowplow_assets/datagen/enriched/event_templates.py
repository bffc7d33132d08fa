"""Event lines: a template per page view, filled in per event.

Most fields are the same for every event of a page view (visitor, device, session, page, contexts). They
are joined into text once per page view, leaving gaps for the few per-event fields, so an event costs a
join of about 50 short strings instead of one of 131 fields.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import TYPE_CHECKING

from snowplow_assets.events.enriched_schema import FIELD_INDEX, FIELD_NAMES

if TYPE_CHECKING:
    from snowplow_assets.datagen.enriched.visitors import Visitor


def _indices(*names: str) -> tuple[int, ...]:
    return tuple(FIELD_INDEX[name] for name in names)


PER_EVENT_FIELDS = tuple(
    sorted(
        _indices(
            "etl_tstamp", "collector_tstamp", "dvce_created_tstamp", "event", "event_id",
            "se_category", "se_action", "se_label", "se_property", "se_value", "unstruct_event",
            "pp_xoffset_min", "pp_xoffset_max", "pp_yoffset_min", "pp_yoffset_max",
            "dvce_sent_tstamp", "derived_tstamp", "event_vendor", "event_name", "event_format", "event_version",
            "event_fingerprint", "true_tstamp",
        )
    )
)  # fmt: skip
_VALUE_POSITION = {FIELD_NAMES[index]: position for position, index in enumerate(PER_EVENT_FIELDS)}


def _value_span(first: str, last: str) -> slice:
    """Per-event fields that are consecutive in the line, to set in one slice assignment."""
    span = slice(_VALUE_POSITION[first], _VALUE_POSITION[last] + 1)
    assert span.stop - span.start == FIELD_INDEX[last] - FIELD_INDEX[first] + 1, (first, last)
    return span


(
    V_ETL, V_COLLECTOR, V_DVCE_CREATED, V_DVCE_SENT, V_DERIVED, V_TRUE_TSTAMP, V_EVENT, V_EVENT_ID,
    V_UNSTRUCT, V_FINGERPRINT,
) = (
    _VALUE_POSITION[name]
    for name in (
        "etl_tstamp", "collector_tstamp", "dvce_created_tstamp", "dvce_sent_tstamp", "derived_tstamp",
        "true_tstamp", "event", "event_id", "unstruct_event", "event_fingerprint",
    )
)  # fmt: skip
V_EVENT_SCHEMA = _value_span("event_vendor", "event_version")
V_STRUCT = _value_span("se_category", "se_value")
V_PAGE_PING = _value_span("pp_xoffset_min", "pp_yoffset_max")

# Marks the per-event fields in a page view's fields, where its text is split into parts; never in data.
PER_EVENT = "\0"

(CONTEXTS, DOMAIN_SESSIONID, DOMAIN_SESSIONIDX, DOC_HEIGHT) = _indices(
    "contexts", "domain_sessionid", "domain_sessionidx", "doc_height"
)
# The page, its referrer and its campaign are consecutive fields, set per page view in one slice.
PAGE_SPAN = slice(FIELD_INDEX["page_url"], FIELD_INDEX["mkt_campaign"] + 1)
AD_CLICK_SPAN = slice(FIELD_INDEX["mkt_clickid"], FIELD_INDEX["mkt_network"] + 1)


def page_span(values: Mapping[str, str]) -> tuple[str, ...]:
    """The PAGE_SPAN fields from field name -> text; the ones not given are empty."""
    assert values.keys() <= set(FIELD_NAMES[PAGE_SPAN]), values.keys() - set(FIELD_NAMES[PAGE_SPAN])
    return tuple(values.get(name, "") for name in FIELD_NAMES[PAGE_SPAN])


class PageView:
    """The text shared by the events of one page view, with a slot for each per-event field."""

    __slots__ = ("parts", "payload_hash")

    def __init__(self, page_view_id: str, fields: list[str]):
        # the fixed text at even positions, a slot for each per-event field at odd ones
        self.parts: list[str] = [PER_EVENT] * (2 * len(PER_EVENT_FIELDS) + 1)
        self.parts[::2] = ("\t".join(fields) + "\n").split(PER_EVENT)
        # The page view id (in the web_page context) stands for all the fields fixed per page view: hashing
        # it is as good as hashing them, and much cheaper.
        self.payload_hash = hashlib.md5(page_view_id.encode())


class Event:
    """One event: its page view's text and its own per-event fields."""

    __slots__ = ("page_view", "values", "event_ms", "visitor")

    def __init__(self, page_view: PageView, values: list[str], event_ms: int, visitor: Visitor):
        self.page_view = page_view
        self.values = values  # the per-event fields, in line order
        self.event_ms = event_ms  # when it happened, by a correct clock
        self.visitor = visitor

    def line(self) -> bytes:
        parts = self.page_view.parts.copy()
        parts[1::2] = self.values
        return "".join(parts).encode()

    def replaced(self, position: int, value: str) -> Event:
        """A copy with one per-event field changed and the fingerprint kept."""
        values = self.values.copy()
        values[position] = value
        return Event(self.page_view, values, self.event_ms, self.visitor)


def fingerprint(page_view: PageView, values: list[str]) -> str:
    """An md5 of the payload: the page view's fixed fields and the event's own, taken while etl_tstamp and
    the fingerprint itself are still empty, so a copy delivered again and enriched later keeps it."""
    payload_hash = page_view.payload_hash.copy()
    payload_hash.update("\t".join(values).encode())
    return payload_hash.hexdigest()
