"""The 131 fields of a Snowplow enriched event, in TSV order, with their types (FORMATS.md §1).

This table is the one place that knows the layout of an enriched line. The parser, the atomic-events
renderer, the data generator and the web models all read it from here.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum


class FieldType(str, Enum):
    STRING = "string"
    INT = "int"
    DOUBLE = "double"
    BOOLEAN = "boolean"
    TIMESTAMP = "timestamp"
    UUID = "uuid"
    JSON = "json"


@dataclass(frozen=True)
class EnrichedField:
    index: int
    name: str
    type: FieldType
    required: bool = False


_S, _I, _D, _B, _T = FieldType.STRING, FieldType.INT, FieldType.DOUBLE, FieldType.BOOLEAN, FieldType.TIMESTAMP

_LAYOUT: list[tuple[str, FieldType] | tuple[str, FieldType, bool]] = [
    ("app_id", _S),
    ("platform", _S),
    ("etl_tstamp", _T),
    ("collector_tstamp", _T, True),
    ("dvce_created_tstamp", _T),
    ("event", _S),
    ("event_id", FieldType.UUID, True),
    ("txn_id", _I),
    ("name_tracker", _S),
    ("v_tracker", _S),
    ("v_collector", _S, True),
    ("v_etl", _S, True),
    ("user_id", _S),
    ("user_ipaddress", _S),
    ("user_fingerprint", _S),
    ("domain_userid", _S),
    ("domain_sessionidx", _I),
    ("network_userid", _S),
    ("geo_country", _S),
    ("geo_region", _S),
    ("geo_city", _S),
    ("geo_zipcode", _S),
    ("geo_latitude", _D),
    ("geo_longitude", _D),
    ("geo_region_name", _S),
    ("ip_isp", _S),
    ("ip_organization", _S),
    ("ip_domain", _S),
    ("ip_netspeed", _S),
    ("page_url", _S),
    ("page_title", _S),
    ("page_referrer", _S),
    ("page_urlscheme", _S),
    ("page_urlhost", _S),
    ("page_urlport", _I),
    ("page_urlpath", _S),
    ("page_urlquery", _S),
    ("page_urlfragment", _S),
    ("refr_urlscheme", _S),
    ("refr_urlhost", _S),
    ("refr_urlport", _I),
    ("refr_urlpath", _S),
    ("refr_urlquery", _S),
    ("refr_urlfragment", _S),
    ("refr_medium", _S),
    ("refr_source", _S),
    ("refr_term", _S),
    ("mkt_medium", _S),
    ("mkt_source", _S),
    ("mkt_term", _S),
    ("mkt_content", _S),
    ("mkt_campaign", _S),
    ("contexts", FieldType.JSON),
    ("se_category", _S),
    ("se_action", _S),
    ("se_label", _S),
    ("se_property", _S),
    ("se_value", _D),
    ("unstruct_event", FieldType.JSON),
    ("tr_orderid", _S),
    ("tr_affiliation", _S),
    ("tr_total", _D),
    ("tr_tax", _D),
    ("tr_shipping", _D),
    ("tr_city", _S),
    ("tr_state", _S),
    ("tr_country", _S),
    ("ti_orderid", _S),
    ("ti_sku", _S),
    ("ti_name", _S),
    ("ti_category", _S),
    ("ti_price", _D),
    ("ti_quantity", _I),
    ("pp_xoffset_min", _I),
    ("pp_xoffset_max", _I),
    ("pp_yoffset_min", _I),
    ("pp_yoffset_max", _I),
    ("useragent", _S),
    ("br_name", _S),
    ("br_family", _S),
    ("br_version", _S),
    ("br_type", _S),
    ("br_renderengine", _S),
    ("br_lang", _S),
    ("br_features_pdf", _B),
    ("br_features_flash", _B),
    ("br_features_java", _B),
    ("br_features_director", _B),
    ("br_features_quicktime", _B),
    ("br_features_realplayer", _B),
    ("br_features_windowsmedia", _B),
    ("br_features_gears", _B),
    ("br_features_silverlight", _B),
    ("br_cookies", _B),
    ("br_colordepth", _S),
    ("br_viewwidth", _I),
    ("br_viewheight", _I),
    ("os_name", _S),
    ("os_family", _S),
    ("os_manufacturer", _S),
    ("os_timezone", _S),
    ("dvce_type", _S),
    ("dvce_ismobile", _B),
    ("dvce_screenwidth", _I),
    ("dvce_screenheight", _I),
    ("doc_charset", _S),
    ("doc_width", _I),
    ("doc_height", _I),
    ("tr_currency", _S),
    ("tr_total_base", _D),
    ("tr_tax_base", _D),
    ("tr_shipping_base", _D),
    ("ti_currency", _S),
    ("ti_price_base", _D),
    ("base_currency", _S),
    ("geo_timezone", _S),
    ("mkt_clickid", _S),
    ("mkt_network", _S),
    ("etl_tags", _S),
    ("dvce_sent_tstamp", _T),
    ("refr_domain_userid", _S),
    ("refr_dvce_tstamp", _T),
    ("derived_contexts", FieldType.JSON),
    ("domain_sessionid", _S),
    ("derived_tstamp", _T),
    ("event_vendor", _S),
    ("event_name", _S),
    ("event_format", _S),
    ("event_version", _S),
    ("event_fingerprint", _S),
    ("true_tstamp", _T),
]

ENRICHED_FIELDS: tuple[EnrichedField, ...] = tuple(
    EnrichedField(index, spec[0], spec[1], bool(spec[2]) if len(spec) > 2 else False)  # type: ignore[misc]
    for index, spec in enumerate(_LAYOUT)
)
FIELD_COUNT = len(ENRICHED_FIELDS)
FIELD_NAMES: tuple[str, ...] = tuple(f.name for f in ENRICHED_FIELDS)
FIELD_INDEX: dict[str, int] = {f.name: f.index for f in ENRICHED_FIELDS}

JSON_FIELDS: tuple[str, ...] = ("contexts", "unstruct_event", "derived_contexts")
ATOMIC_FIELDS: tuple[EnrichedField, ...] = tuple(f for f in ENRICHED_FIELDS if f.type is not FieldType.JSON)

assert FIELD_COUNT == 131, FIELD_COUNT
assert len(ATOMIC_FIELDS) == 128
