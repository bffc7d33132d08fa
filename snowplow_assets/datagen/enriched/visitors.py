"""Visitors, sessions and pages: what visitors do on the shop site, as events in time order per visitor."""

from __future__ import annotations

import random
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from operator import itemgetter

from snowplow_assets.datagen.enriched.devices import BROWSER_FEATURES, DEVICES
from snowplow_assets.datagen.enriched.event_kinds import (
    CHECKOUT_STEP,
    LINK_CLICK,
    PAGE_PING,
    PAGE_VIEW,
    STRUCT,
    EventKind,
)
from snowplow_assets.datagen.enriched.event_templates import (
    AD_CLICK_SPAN,
    CONTEXTS,
    DOC_HEIGHT,
    DOMAIN_SESSIONID,
    DOMAIN_SESSIONIDX,
    PAGE_SPAN,
    PER_EVENT,
    PER_EVENT_FIELDS,
    V_COLLECTOR,
    V_DERIVED,
    V_DVCE_CREATED,
    V_DVCE_SENT,
    V_ETL,
    V_EVENT_ID,
    V_FINGERPRINT,
    V_PAGE_PING,
    V_STRUCT,
    V_TRUE_TSTAMP,
    V_UNSTRUCT,
    Event,
    PageView,
    fingerprint,
)
from snowplow_assets.datagen.enriched.lines import contexts_text, entity_json, unstruct_json, web_page_entity
from snowplow_assets.datagen.enriched.pipeline import APP_ID, COLLECTOR_VERSION, ENRICH_VERSION, TRACKER_VERSIONS
from snowplow_assets.datagen.enriched.places import PLACES
from snowplow_assets.datagen.enriched.schemas import CHECKOUT_STEP_SCHEMA, USER_CONTEXT_SCHEMA
from snowplow_assets.datagen.enriched.shop_site import (
    FILTER_COLOURS,
    FOOTER_LINK_CLICKS,
    LANDING_PAGE,
    NEXT_PAGE,
    SITE,
    SITE_WIDE_STRUCT_EVENTS,
    SIZE_GUIDE_CLICK,
    Page,
)
from snowplow_assets.datagen.enriched.timestamps import timestamp_text
from snowplow_assets.datagen.enriched.traffic_sources import TRAFFIC_SOURCES
from snowplow_assets.datagen.enriched.uuids import Uuids
from snowplow_assets.events.enriched_schema import FIELD_INDEX, FIELD_NAMES

_MINIMUM_VISIT_MS = 5_000
_HEARTBEAT_MS = 10_000
_MAX_PINGS_PER_PAGE = 60
# No two consecutive events of a session are further apart than this (pings every heartbeat, an idle
# heartbeat skipped, or a short look at a page), which bounds how long a session of n events can last.
_MAX_EVENT_SPACING_MS = 30_000
_SESSION_TIMEOUT_MS = 30 * 60_000
_MEAN_SESSION_GAP_MS = 8 * 3_600_000
# The last session of a visitor ends at least this long before the batch's latest collector time, which
# leaves room for events that a device sends minutes after it created them.
_LAST_SESSION_MARGIN_MS = 10 * 60_000
_OFFLINE_RATE = 0.01


@dataclass(frozen=True)
class Visitor:
    template: list[str]  # the fields all events of the visitor share; per-event fields are PER_EVENT
    first_session_index: int
    clock_skew_ms: int  # how far the device clock is off
    sets_true_tstamp: bool
    view_height: int
    extra_contexts: str  # ",{entity}" texts added to the contexts of every event


def _assign(fields: list[str], values: Mapping[str, str]) -> None:
    for name, value in values.items():
        fields[FIELD_INDEX[name]] = value


class WebTraffic:
    """What visitors do on the shop site, as events in time order per visitor."""

    def __init__(self, rng: random.Random, latest_event_ms: int):
        self._rng = rng
        self._uuids = Uuids(rng)
        self._latest_event_ms = latest_event_ms

    def visitor_events(self, budget: int) -> Iterator[Event]:
        """A new visitor's `budget` events, over sessions hours or days apart."""
        rng = self._rng
        visitor = self._new_visitor()
        sessions = min(budget, max(1, round(budget / rng.uniform(6, 25))))
        cuts = sorted(rng.sample(range(1, budget), sessions - 1))
        sizes = [end - begin for begin, end in zip([0, *cuts], [*cuts, budget], strict=True)]
        # Sessions are placed backwards from the end of the batch, so no event is later than the batch.
        starts: list[int] = []
        end = self._latest_event_ms - _LAST_SESSION_MARGIN_MS - rng.randrange(3_600_000)
        for size in reversed(sizes):
            start = end - size * _MAX_EVENT_SPACING_MS
            starts.append(start)
            end = start - _SESSION_TIMEOUT_MS - int(rng.expovariate(1 / _MEAN_SESSION_GAP_MS))
        starts.reverse()
        for number, (size, start) in enumerate(zip(sizes, starts, strict=True)):
            yield from self._session_events(visitor, visitor.first_session_index + number, start, size)

    def synthetic_twin(self, event: Event) -> Event:
        """Another event on the same page reusing the event id, as a buggy tracker or a bot sends."""
        rng = self._rng
        values = STRUCT.blank_values.copy()
        values[V_EVENT_ID] = event.values[V_EVENT_ID]
        values[V_STRUCT] = rng.choice(SITE_WIDE_STRUCT_EVENTS)
        event_ms = event.event_ms + rng.randrange(1_000, 120_000)
        self._stamp(values, event_ms, event.visitor)
        values[V_FINGERPRINT] = fingerprint(event.page_view, values)
        values[V_ETL] = event.values[V_ETL]
        return Event(event.page_view, values, event_ms, event.visitor)

    def _new_visitor(self) -> Visitor:
        rng = self._rng
        place = PLACES.pick(rng)
        device = DEVICES.pick(rng)
        screen_width, screen_height = rng.choice(device.screens)
        if device.is_mobile:
            view_width, view_height = screen_width, screen_height - rng.randrange(80, 160)
        else:
            view_width = screen_width - rng.choice((0, 0, 15, 17, 120, 300))
            view_height = screen_height - rng.randrange(110, 220)
        user_id = str(rng.randrange(10_000_000, 100_000_000)) if rng.random() < 0.3 else ""
        extra_contexts = ""
        if rng.random() < 0.5:
            user_context = {"tier": rng.choice(("bronze", "silver", "gold")), "loggedIn": bool(user_id)}
            extra_contexts = "," + entity_json(USER_CONTEXT_SCHEMA, user_context)
        template = [""] * len(FIELD_NAMES)
        for index in PER_EVENT_FIELDS:
            template[index] = PER_EVENT
        _assign(
            template,
            {
                "app_id": APP_ID,
                "platform": "web",
                "name_tracker": "sp",
                "v_tracker": rng.choice(TRACKER_VERSIONS),
                "v_collector": COLLECTOR_VERSION,
                "v_etl": ENRICH_VERSION,
                "user_id": user_id,
                "user_ipaddress": f"{place.ip_prefix}.{rng.randrange(256)}.{rng.randrange(1, 255)}",
                "domain_userid": self._uuids.next(),
                "network_userid": self._uuids.next(),
                "geo_country": place.country,
                "geo_region": place.region,
                "geo_city": place.city,
                "geo_zipcode": place.zipcode,
                "geo_latitude": place.latitude,
                "geo_longitude": place.longitude,
                "geo_region_name": place.region_name,
                "geo_timezone": place.timezone,
                "ip_isp": place.isp,
                "ip_organization": place.isp,
                "ip_domain": place.isp_domain,
                "ip_netspeed": "Cellular" if device.is_mobile and rng.random() < 0.6 else "Cable/DSL",
                "useragent": device.useragent,
                "br_name": f"{device.browser} {device.browser_version.split('.')[0]}",
                "br_family": device.browser,
                "br_version": device.browser_version,
                "br_type": "Browser (mobile)" if device.is_mobile else "Browser",
                "br_renderengine": device.render_engine,
                "br_lang": place.language,
                "br_features_pdf": "0" if device.is_mobile else "1",
                **{feature: "0" for feature in BROWSER_FEATURES},
                "br_cookies": "0" if rng.random() < 0.01 else "1",
                "br_colordepth": device.color_depth,
                "br_viewwidth": str(view_width),
                "br_viewheight": str(view_height),
                "os_name": device.os_name,
                "os_family": device.os_family,
                "os_manufacturer": device.os_manufacturer,
                "os_timezone": place.timezone,
                "dvce_type": device.device_type,
                "dvce_ismobile": "1" if device.is_mobile else "0",
                "dvce_screenwidth": str(screen_width),
                "dvce_screenheight": str(screen_height),
                "doc_charset": "UTF-8",
                "doc_width": str(view_width),
                "derived_contexts": device.derived_contexts[rng.random() < 0.15],
            },
        )
        return Visitor(
            template=template,
            first_session_index=1 if rng.random() < 0.6 else rng.randint(2, 25),
            clock_skew_ms=self._clock_skew(),
            sets_true_tstamp=rng.random() < 0.02,
            view_height=view_height,
            extra_contexts=extra_contexts,
        )

    def _clock_skew(self) -> int:
        """Most device clocks are about right; some are off by minutes, a few by hours."""
        rng = self._rng
        roll = rng.random()
        if roll < 0.85:
            return rng.randrange(-800, 800)
        if roll < 0.97:
            return rng.randrange(-180_000, 180_000)
        return rng.randrange(-36 * 3_600_000, 36 * 3_600_000)

    def _session_events(self, visitor: Visitor, index: int, start_ms: int, budget: int) -> Iterator[Event]:
        rng = self._rng
        session = visitor.template.copy()
        session[DOMAIN_SESSIONID] = self._uuids.next()
        session[DOMAIN_SESSIONIDX] = str(index)
        source = TRAFFIC_SOURCES.pick(rng)
        page = self._page_of_kind(LANDING_PAGE.pick(rng))
        click_id = f"EAIaIQobChMI{rng.getrandbits(96):024x}" if source.click_network else ""
        page_span = source.landing(page, click_id)
        ad_click = (click_id, source.click_network) if click_id else ("", "")
        basket = 0.0
        now = start_ms
        landing = True
        while True:
            fields = session.copy()
            fields[PAGE_SPAN] = page_span
            fields[AD_CLICK_SPAN] = ad_click
            page_view_id = self._uuids.next()
            entities = web_page_entity(page_view_id) + visitor.extra_contexts + page.schema_org
            fields[CONTEXTS] = contexts_text(entities)
            fields[DOC_HEIGHT] = page.doc_height_text
            page_view = PageView(page_view_id, fields)
            timeline, now, basket = self._page_activity(page, now, visitor, basket, landing, budget)
            for values, event_ms in timeline:
                values[V_FINGERPRINT] = fingerprint(page_view, values)
                yield Event(page_view, values, event_ms, visitor)
                budget -= 1
                if not budget:
                    return
            previous, page = page, self._next_page(page)
            page_span = page.arrival_from(previous)
            ad_click = ("", "")
            landing = False

    def _page_activity(
        self, page: Page, viewed_ms: int, visitor: Visitor, basket: float, landing: bool, budget: int
    ) -> tuple[list[tuple[list[str], int]], int, float]:
        """The per-event values of one page view's events in time order, when the visitor views the next
        page, and the basket value then. Pings beyond the session's remaining `budget` are not made."""
        rng = self._rng
        rand = rng.random
        timeline = [(self._event(PAGE_VIEW, viewed_ms, visitor), viewed_ms)]

        pings = 0 if rand() < 0.2 else min(_MAX_PINGS_PER_PAGE, 1 + int(rng.expovariate(1 / 6)), budget - 1)
        view_height = visitor.view_height
        max_scroll = max(0, page.doc_height - view_height)
        scroll = 0
        ping_ms = viewed_ms + _MINIMUM_VISIT_MS
        left_ms = viewed_ms + 2_000 + int(rand() * 13_000)
        for _ in range(pings):
            ping_ms += int(rand() * 1_000)
            top = scroll
            scroll = min(max_scroll, scroll + int(rand() * view_height))
            ping = self._event(PAGE_PING, ping_ms, visitor)
            ping[V_PAGE_PING] = ("0", "0", str(top), str(scroll))
            timeline.append((ping, ping_ms))
            left_ms = ping_ms
            # a visitor who is idle for a whole heartbeat produces no ping for it
            ping_ms += _HEARTBEAT_MS if rand() >= 0.1 else 2 * _HEARTBEAT_MS

        def during_visit() -> int:
            return viewed_ms + rng.randrange(300, max(400, left_ms - viewed_ms))

        if landing and rand() < 0.5:
            consent = ("consent", "accept-all", "cookie-banner", "", "")
            timeline.append(self._struct(during_visit(), visitor, consent))
        if page.product is not None:
            if rand() < 0.25:
                product = page.product
                basket = round(basket + product.price, 2)
                values = ("product", "add-to-cart", product.sku, rng.choice(product.sizes), f"{product.price:.2f}")
                timeline.append(self._struct(during_visit(), visitor, values))
            if rand() < 0.08:
                timeline.append(self._unstruct(during_visit(), visitor, LINK_CLICK, SIZE_GUIDE_CLICK))
        elif page.kind == "category" and rand() < 0.2:
            values = ("filter", "apply", "colour", rng.choice(FILTER_COLOURS), "")
            timeline.append(self._struct(during_visit(), visitor, values))
        elif page.kind == "search" and rand() < 0.5:
            query = page.query.removeprefix("q=").replace("+", " ")
            values = ("search", "refine", query, "results", str(rng.randrange(0, 60)))
            timeline.append(self._struct(during_visit(), visitor, values))
        elif page.checkout_step:
            value = basket or rng.choice(SITE["product"]).product.price  # type: ignore[union-attr]
            step = unstruct_json(CHECKOUT_STEP_SCHEMA, {"step": page.checkout_step, "basketValue": value})
            timeline.append(self._unstruct(during_visit(), visitor, CHECKOUT_STEP, step))
        if rand() < 0.04:
            click = rng.choice(FOOTER_LINK_CLICKS)
            timeline.append(self._unstruct(during_visit(), visitor, LINK_CLICK, click))
        if rand() < 0.02:
            timeline.append(self._struct(during_visit(), visitor, rng.choice(SITE_WIDE_STRUCT_EVENTS)))

        if len(timeline) > pings + 1:  # other events happened between the pings
            timeline.sort(key=itemgetter(1))
        next_page_ms = left_ms + 1_000 + int(rand() * 11_000)
        if page.kind == "confirmation":
            basket = 0.0
        return timeline, next_page_ms, basket

    def _event(self, kind: EventKind, event_ms: int, visitor: Visitor) -> list[str]:
        values = kind.blank_values.copy()
        values[V_EVENT_ID] = self._uuids.next()
        self._stamp(values, event_ms, visitor)
        return values

    def _struct(self, event_ms: int, visitor: Visitor, struct: tuple[str, ...]) -> tuple[list[str], int]:
        values = self._event(STRUCT, event_ms, visitor)
        values[V_STRUCT] = struct
        return values, event_ms

    def _unstruct(self, event_ms: int, visitor: Visitor, kind: EventKind, unstruct: str) -> tuple[list[str], int]:
        values = self._event(kind, event_ms, visitor)
        values[V_UNSTRUCT] = unstruct
        return values, event_ms

    def _stamp(self, values: list[str], event_ms: int, visitor: Visitor) -> None:
        """The timestamps of an event that happened at `event_ms`, as the tracker and the collector see it."""
        rand = self._rng.random
        if rand() < _OFFLINE_RATE:
            queued = 10_000 + int(rand() * 290_000)  # the device was offline and sent the event later
        else:
            queued = 20 + int(rand() * 1_480)
        network = 30 + int(rand() * 370)
        created = event_ms + visitor.clock_skew_ms
        collector = event_ms + queued + network
        values[V_DVCE_CREATED] = timestamp_text(created)
        values[V_DVCE_SENT] = timestamp_text(created + queued)
        values[V_COLLECTOR] = timestamp_text(collector)
        if visitor.sets_true_tstamp:
            values[V_TRUE_TSTAMP] = values[V_DERIVED] = timestamp_text(event_ms)
        else:
            # derived_tstamp corrects the collector time by the time the event spent on the device
            values[V_DERIVED] = timestamp_text(collector - queued)

    def _page_of_kind(self, kind: str) -> Page:
        return self._rng.choice(SITE[kind])

    def _next_page(self, page: Page) -> Page:
        if page.checkout_step:
            if self._rng.random() < 0.15:
                return SITE["cart"][0]
            if page.checkout_step == len(SITE["checkout"]):
                return SITE["confirmation"][0]
            return SITE["checkout"][page.checkout_step]
        kind = NEXT_PAGE[page.kind].pick(self._rng)
        return SITE["checkout"][0] if kind == "checkout" else self._page_of_kind(kind)
