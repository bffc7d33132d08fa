"""Lines the parser must reject, each made from a good line with exactly one defect of a known kind."""

from __future__ import annotations

import random

from snowplow_assets.datagen.enriched.event_templates import CONTEXTS
from snowplow_assets.datagen.enriched.schemas import CONTEXTS_SCHEMA, WEB_PAGE_SCHEMA
from snowplow_assets.events.enriched_schema import FIELD_INDEX

# Bad line kind -> the parse failure type it must produce (FORMATS.md §1).
BAD_LINE_KINDS: dict[str, str] = {
    "not_tsv": "NotTSV",
    "truncated": "FieldNumberMismatch",
    "invalid_timestamp": "RowDecodingError",
    "invalid_int": "RowDecodingError",
    "invalid_boolean": "RowDecodingError",
    "invalid_uuid": "RowDecodingError",
    "invalid_json": "RowDecodingError",
    "wrong_wrapper_schema": "RowDecodingError",
    "invalid_iglu_uri": "RowDecodingError",
}


_INVALID_VALUES = {
    "invalid_timestamp": ("collector_tstamp", "not-a-date"),
    "invalid_int": ("dvce_screenwidth", "wide"),
    "invalid_boolean": ("dvce_ismobile", "yes"),
    "invalid_uuid": ("event_id", "not-a-uuid"),
}
_WRONG_WRAPPER_SCHEMAS = (
    "iglu:com.snowplowanalytics.snowplow/unstruct_event/jsonschema/1-0-0",
    "iglu:com.snowplowanalytics.snowplow/contexts/jsonschema/2-0-0",
    "iglu:com.acme/contexts/jsonschema/1-0-1",
)
_INVALID_IGLU_URIS = (
    "iglu:com.acme/../../etc/jsonschema/1-0-0",
    "iglu:bad",
    "com.snowplowanalytics.snowplow/web_page/jsonschema/1-0-0",
    "iglu:com.snowplowanalytics.snowplow/web_page/jsonschema/1-0",
)


def bad_line(kind: str, good_line: str, rng: random.Random) -> bytes:
    """A line with exactly one defect of `kind`, made from a good line so everything else is valid."""
    fields = good_line.removesuffix("\n").split("\t")
    if kind == "not_tsv":
        return (",".join(fields) + "\n").encode()
    if kind == "truncated":
        return ("\t".join(fields[: rng.randint(2, len(fields) - 1)]) + "\n").encode()
    if kind in _INVALID_VALUES:
        name, value = _INVALID_VALUES[kind]
        fields[FIELD_INDEX[name]] = value
    elif kind == "invalid_json":
        fields[CONTEXTS] = fields[CONTEXTS][: len(fields[CONTEXTS]) // 2]
    elif kind == "wrong_wrapper_schema":
        fields[CONTEXTS] = fields[CONTEXTS].replace(CONTEXTS_SCHEMA, rng.choice(_WRONG_WRAPPER_SCHEMAS), 1)
    elif kind == "invalid_iglu_uri":
        fields[CONTEXTS] = fields[CONTEXTS].replace(WEB_PAGE_SCHEMA, rng.choice(_INVALID_IGLU_URIS), 1)
    else:
        raise ValueError(f"unknown bad line kind {kind!r}")
    return ("\t".join(fields) + "\n").encode()
