"""Reference data: the shop site, its pages, where visitors go next and what they click on the way."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from functools import cached_property
from urllib.parse import quote_plus

from snowplow_assets.datagen.enriched.event_templates import page_span
from snowplow_assets.datagen.enriched.lines import entity_json, unstruct_json
from snowplow_assets.datagen.enriched.schemas import LINK_CLICK_SCHEMA, SCHEMA_ORG_WEB_PAGE_SCHEMA
from snowplow_assets.datagen.enriched.weighted_choice import WeightedChoice

_SITE_HOST = "www.acme.com"


@dataclass(frozen=True)
class _Product:
    sku: str
    price: float
    sizes: tuple[str, ...]


@dataclass(frozen=True, eq=False)  # compared and hashed by identity: each page exists once
class Page:
    kind: str
    path: str
    title: str
    doc_height: int
    query: str = ""
    product: _Product | None = None
    checkout_step: int = 0
    schema_org: str = ""  # ",{org.schema WebPage entity}" for pages that carry one

    def url_fields(self, extra_query: str = "") -> dict[str, str]:
        """The page_url* fields, with campaign parameters added to the query of a landing page."""
        query = "&".join(part for part in (self.query, extra_query) if part)
        return {
            "page_url": f"https://{_SITE_HOST}{self.path}" + (f"?{query}" if query else ""),
            "page_title": self.title,
            "page_urlscheme": "https",
            "page_urlhost": _SITE_HOST,
            "page_urlport": "443",
            "page_urlpath": self.path,
            "page_urlquery": query,
        }

    def arrival_from(self, previous: Page) -> tuple[str, ...]:
        """The PAGE_SPAN fields of a visit to this page from `previous` on the site."""
        span = self._arrivals.get(previous)
        if span is None:
            previous_url = previous.url_fields()
            referrer = {
                "page_referrer": previous_url["page_url"],
                "refr_urlscheme": "https",
                "refr_urlhost": _SITE_HOST,
                "refr_urlport": "443",
                "refr_urlpath": previous.path,
                "refr_urlquery": previous.query,
                "refr_medium": "internal",
            }
            span = self._arrivals[previous] = page_span(self.url_fields() | referrer)
        return span

    @cached_property
    def _arrivals(self) -> dict[Page, tuple[str, ...]]:
        return {}

    @cached_property
    def doc_height_text(self) -> str:
        return str(self.doc_height)


_SHOE_SIZES = tuple(f"eu-{size}" for size in range(38, 47))
_CLOTHING_SIZES = ("xs", "s", "m", "l", "xl")
_CATEGORIES = (
    ("running-shoes", "Running shoes", _SHOE_SIZES,
     ("Cloudstride 3", "Tempo Racer", "Glide Max", "Pacer Lite", "Marathon Pro 2", "Daily Trainer", "Swift 5")),
    ("trail-shoes", "Trail shoes", _SHOE_SIZES,
     ("Ridgeline GTX", "Summit Grip", "Mudrunner", "Canyon Trail 2", "Fell Racer")),
    ("jackets", "Jackets", _CLOTHING_SIZES,
     ("Stormshell Jacket", "Windbreaker Ultra", "Thermal Vest", "Rain Runner Jacket")),
    ("tops", "Tops", _CLOTHING_SIZES,
     ("Merino Long Sleeve", "Breeze Tee", "Race Singlet", "Half-Zip Midlayer", "Tech Tee")),
    ("accessories", "Accessories", ("one-size",),
     ("Trail Socks 3-Pack", "Headlamp 400", "Running Belt", "Cap Airflow", "Hydration Vest 5L", "Gloves Thermo")),
)  # fmt: skip
_SEARCHES = ("running shoes", "trail", "rain jacket", "socks", "gore-tex", "marathon", "headlamp", "merino", "vest")
FILTER_COLOURS = ("black", "blue", "red", "green", "grey", "orange")


def _schema_org_entity(genre: str, breadcrumb: list[str], keywords: list[str]) -> str:
    data = {"genre": genre, "breadcrumb": breadcrumb, "inLanguage": "en-US", "keywords": keywords}
    return "," + entity_json(SCHEMA_ORG_WEB_PAGE_SCHEMA, data)


def _build_site() -> dict[str, tuple[Page, ...]]:
    pages: dict[str, list[Page]] = defaultdict(list)
    home_schema_org = _schema_org_entity("home", ["Home"], ["running", "outdoor"])
    pages["home"].append(Page("home", "/", "Acme - running and outdoor gear", 4200, schema_org=home_schema_org))
    number = 1000
    for slug, label, sizes, names in _CATEGORIES:
        pages["category"].append(Page("category", f"/c/{slug}", f"{label} | Acme", 5200 + 100 * len(names)))
        for name in names:
            number += 1
            product = _Product(f"ACM-{number}", round(29.95 + (number * 37 % 13) * 10, 2), sizes)
            slug_name = name.lower().replace(" ", "-")
            # about half the product pages carry the schema.org context
            schema_org = _schema_org_entity("product", ["Home", label, name], slug.split("-")) if number % 2 else ""
            pages["product"].append(
                Page("product", f"/p/{product.sku.lower()}-{slug_name}", f"{name} | Acme",
                      3400 + number % 7 * 150, product=product, schema_org=schema_org)
            )  # fmt: skip
    for search in _SEARCHES:
        pages["search"].append(
            Page("search", "/search", f"Search: {search} | Acme", 3800, query=f"q={quote_plus(search)}")
        )
    pages["cart"].append(Page("cart", "/cart", "Your basket | Acme", 1900))
    for step, name in enumerate(("address", "delivery", "payment"), start=1):
        pages["checkout"].append(
            Page("checkout", f"/checkout/{name}", f"Checkout - {name} | Acme", 1600, checkout_step=step)
        )
    pages["confirmation"].append(
        Page("confirmation", "/checkout/confirmation", "Thank you for your order | Acme", 1400)
    )
    pages["account"] += [
        Page("account", "/account", "My account | Acme", 1500),
        Page("account", "/account/orders", "My orders | Acme", 2100),
    ]
    for slug, title in (("returns", "Returns"), ("shipping", "Shipping"), ("size-guide", "Size guide")):
        pages["help"].append(Page("help", f"/help/{slug}", f"{title} | Acme help", 2600))
    return {kind: tuple(kind_pages) for kind, kind_pages in pages.items()}


# Where a visitor goes next from a kind of page; checkout steps advance through their own rule.
NEXT_PAGE = {
    "home": WeightedChoice.of(category=5, search=2, product=2, account=1, help=1),
    "category": WeightedChoice.of(product=6, category=2, search=1, home=1),
    "product": WeightedChoice.of(product=3, category=2, cart=2, search=1, home=1),
    "search": WeightedChoice.of(product=5, search=1, category=1),
    "cart": WeightedChoice.of(checkout=4, product=1, category=1),
    "confirmation": WeightedChoice.of(home=1, account=1),
    "account": WeightedChoice.of(home=1, category=1, product=1),
    "help": WeightedChoice.of(home=1, category=1, product=1),
}
LANDING_PAGE = WeightedChoice.of(home=4, category=3, product=4, search=1, help=0.5)
SITE = _build_site()


def _link_click(target_url: str, element_id: str, classes: list[str], target: str = "") -> str:
    data: dict[str, object] = {"targetUrl": target_url, "elementId": element_id, "elementClasses": classes}
    if target:
        data["elementTarget"] = target
    return unstruct_json(LINK_CLICK_SCHEMA, data)


FOOTER_LINK_CLICKS = (
    _link_click("https://www.instagram.com/acme/", "footer-instagram", ["footer-link", "social"], "_blank"),
    _link_click("https://www.strava.com/clubs/acme-run-club", "footer-strava", ["footer-link", "social"], "_blank"),
    _link_click(f"https://{_SITE_HOST}/help/returns", "footer-returns", ["footer-link"]),
    _link_click("https://maps.google.com/?q=Acme+Store+Amsterdam", "header-store-locator", ["header-link"], "_blank"),
)
SIZE_GUIDE_CLICK = _link_click(f"https://{_SITE_HOST}/help/size-guide", "size-guide-link", ["pdp-link"])
SITE_WIDE_STRUCT_EVENTS = (
    ("newsletter", "subscribe", "footer", "", ""),
    ("video", "play", "how-we-test-our-shoes", "", ""),
    ("ui", "open-menu", "header", "", ""),
    ("chat", "open", "help-widget", "", ""),
)
