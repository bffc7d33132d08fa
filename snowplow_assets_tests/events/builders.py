"""Hand-written enriched lines for tests: a valid page view whose fields a test overrides."""

from __future__ import annotations

from snowplow_assets.datagen.enriched import contexts_json, make_line, unstruct_json

WEB_PAGE = "iglu:com.snowplowanalytics.snowplow/web_page/jsonschema/1-0-0"
UA_PARSER = "iglu:com.snowplowanalytics.snowplow/ua_parser_context/jsonschema/1-0-0"
LINK_CLICK = "iglu:com.snowplowanalytics.snowplow/link_click/jsonschema/1-0-1"
EVENT_ID = "c6ef3124-b53a-4b13-a233-0088f79dcbcb"

BASE_EVENT = {
    "app_id": "shop",
    "platform": "web",
    "etl_tstamp": "2026-03-01 10:05:00.000",
    "collector_tstamp": "2026-03-01 10:00:00.123",
    "dvce_created_tstamp": "2026-03-01 09:59:59.900",
    "event": "page_view",
    "event_id": EVENT_ID,
    "v_tracker": "js-3.24.0",
    "v_collector": "ssc-3.2.0-kinesis",
    "v_etl": "snowplow-enrich-kinesis-5.0.0",
    "domain_userid": "b1a2c3d4-0000-4000-8000-000000000001",
    "domain_sessionid": "5e551011-0000-4000-8000-000000000001",
    "domain_sessionidx": "3",
    "page_url": "https://shop.example.com/basket",
    "geo_latitude": "52.3731",
    "dvce_ismobile": "0",
    "dvce_screenwidth": "1920",
    "contexts": contexts_json([(WEB_PAGE, {"id": "a0e3f1b2-0000-4000-8000-00000000cafe"})]),
    "derived_contexts": contexts_json([(UA_PARSER, {"useragentFamily": "Firefox"})]),
    "event_fingerprint": "5f1b1b5b1b5b1b5b1b5b1b5b1b5b1b5b",
}


def event_line(**overrides: str | None) -> str:
    return make_line({**BASE_EVENT, **overrides})


def link_click(target: str = "https://example.com") -> str:
    return unstruct_json(LINK_CLICK, {"targetUrl": target})
