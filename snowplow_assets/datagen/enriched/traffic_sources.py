"""Reference data: where a session comes from (search, social, ads, email), as the fields of its landing."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cached_property
from urllib.parse import quote_plus, urlsplit

from snowplow_assets.datagen.enriched.event_templates import page_span
from snowplow_assets.datagen.enriched.shop_site import Page
from snowplow_assets.datagen.enriched.weighted_choice import WeightedChoice


@dataclass(frozen=True)
class _TrafficSource:
    weight: float
    referrer: str = ""
    medium: str = ""
    source: str = ""
    campaign: Mapping[str, str] = field(default_factory=dict)  # utm_* parameters of the landing page
    click_network: str = ""  # ad network whose click id the landing page carries

    def landing(self, page: Page, click_id: str) -> tuple[str, ...]:
        """The PAGE_SPAN fields of a session's first page, reached from this source."""
        if click_id:
            return self._landing_span(page, click_id)
        span = self._landings.get(page)
        if span is None:
            span = self._landings[page] = self._landing_span(page, "")
        return span

    @cached_property
    def _landings(self) -> dict[Page, tuple[str, ...]]:
        return {}

    def _landing_span(self, page: Page, click_id: str) -> tuple[str, ...]:
        query = "&".join(f"utm_{key}={quote_plus(value)}" for key, value in self.campaign.items())
        if click_id:
            query = "&".join(part for part in (query, f"gclid={click_id}") if part)
        fields = page.url_fields(query) | {f"mkt_{key}": value for key, value in self.campaign.items()}
        if self.referrer:
            url = urlsplit(self.referrer)
            fields |= {
                "page_referrer": self.referrer,
                "refr_urlscheme": url.scheme,
                "refr_urlhost": url.hostname or "",
                "refr_urlport": str(url.port or (443 if url.scheme == "https" else 80)),
                "refr_urlpath": url.path,
                "refr_urlquery": url.query,
                "refr_medium": self.medium,
                "refr_source": self.source,
            }
        return page_span(fields)


TRAFFIC_SOURCES = WeightedChoice((source, source.weight) for source in (
    _TrafficSource(32),
    _TrafficSource(20, "https://www.google.com/", "search", "Google"),
    _TrafficSource(4, "https://www.bing.com/", "search", "Bing"),
    _TrafficSource(2, "https://duckduckgo.com/", "search", "DuckDuckGo"),
    _TrafficSource(
        10, "https://www.google.com/", "search", "Google",
        {"source": "google", "medium": "cpc", "campaign": "spring_sale_2026", "term": "running shoes"}, "Google",
    ),
    _TrafficSource(7, "https://l.facebook.com/", "social", "Facebook"),
    _TrafficSource(
        5, "https://www.instagram.com/", "social", "Instagram",
        {"source": "instagram", "medium": "paid_social", "campaign": "trail_season", "content": "carousel_2"},
    ),
    _TrafficSource(
        10, "", "", "",
        {"source": "newsletter", "medium": "email", "campaign": "march_newsletter", "content": "hero_banner"},
    ),
    _TrafficSource(3, "https://www.runnersworld.com/gear/a20865766/best-running-shoes/", "unknown"),
))  # fmt: skip
