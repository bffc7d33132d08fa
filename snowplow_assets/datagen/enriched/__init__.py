"""Synthetic Snowplow enriched events: run folders of realistic web tracking data (FORMATS.md §1 and §5).

The data is what a JavaScript tracker on a shop site produces: visitors with sessions of page views, page
pings, structured events, link clicks and checkout steps. On top of that come the defects a pipeline has to
handle, in exact numbers: natural duplicates (one payload delivered twice), synthetic duplicates (another
payload that reuses an event id) and lines the parser must reject.

Generation is deterministic for a seed and has to write gigabytes for benchmarks in reasonable time. Values
therefore come from pools and per-visitor, per-session and per-page field templates, the JSON texts are
precomputed where they do not vary, and one `random.Random` drives everything.

How the modules fit: `run_folder` writes the lines of a `batch`, which interleaves the events of the
`visitors` with their duplicates and `bad_lines`. Visitors browse the `shop_site`, arriving from
`traffic_sources`, from `places` and `devices` of the reference data (`pipeline` names the software the
events pass through). Their events are `event_kinds` filled into `event_templates`, with `timestamps` and
`uuids` made fast; `lines` holds the TSV and self-describing JSON helpers, `schemas` the Iglu URIs.
"""

from snowplow_assets.datagen.enriched.bad_lines import BAD_LINE_KINDS
from snowplow_assets.datagen.enriched.lines import contexts_json, make_line, unstruct_json
from snowplow_assets.datagen.enriched.options import GenerationOptions, GenerationStats
from snowplow_assets.datagen.enriched.run_folder import SUCCESS_MARKER, generate_run_folder, run_folder_name
from snowplow_assets.datagen.enriched.schemas import (
    CHECKOUT_STEP_SCHEMA,
    CONTEXTS_SCHEMA,
    LINK_CLICK_SCHEMA,
    SCHEMA_ORG_WEB_PAGE_SCHEMA,
    UA_PARSER_SCHEMA,
    UNSTRUCT_EVENT_SCHEMA,
    USER_CONTEXT_SCHEMA,
    WEB_PAGE_SCHEMA,
    YAUAA_SCHEMA,
)

__all__ = [
    "BAD_LINE_KINDS",
    "CHECKOUT_STEP_SCHEMA",
    "CONTEXTS_SCHEMA",
    "LINK_CLICK_SCHEMA",
    "SCHEMA_ORG_WEB_PAGE_SCHEMA",
    "SUCCESS_MARKER",
    "UA_PARSER_SCHEMA",
    "UNSTRUCT_EVENT_SCHEMA",
    "USER_CONTEXT_SCHEMA",
    "WEB_PAGE_SCHEMA",
    "YAUAA_SCHEMA",
    "GenerationOptions",
    "GenerationStats",
    "contexts_json",
    "generate_run_folder",
    "make_line",
    "run_folder_name",
    "unstruct_json",
]
