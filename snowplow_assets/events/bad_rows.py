"""Bad rows (FORMATS.md §4): self-describing JSON lines that keep a rejected line and say why."""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version

from snowplow_assets.events.enriched_schema import ENRICHED_FIELDS, FieldType
from snowplow_assets.events.sql import identifier, literal, named_struct

BAD_ROWS_VENDOR = "iglu:com.snowplowanalytics.snowplow.badrows"
LOADER_PARSING_ERROR = f"{BAD_ROWS_VENDOR}/loader_parsing_error/jsonschema/2-0-0"
LOADER_IGLU_ERROR = f"{BAD_ROWS_VENDOR}/loader_iglu_error/jsonschema/2-0-1"
LOADER_RUNTIME_ERROR = f"{BAD_ROWS_VENDOR}/loader_runtime_error/jsonschema/1-0-1"

PROCESSOR_ARTIFACT = "snowplow-assets"
try:
    PROCESSOR_VERSION = version("snowplow-assets")
except PackageNotFoundError:  # running from a source tree that was never installed
    PROCESSOR_VERSION = "0.0.0"


def processor() -> str:
    return named_struct(artifact=literal(PROCESSOR_ARTIFACT), version=literal(PROCESSOR_VERSION))


def bad_row(schema: str, failure: str, payload: str) -> str:
    """SQL for the JSON text of one bad row. Null members of `failure` are left out, as in Snowplow's bad rows."""
    data = named_struct(processor=processor(), failure=failure, payload=payload)
    return f"to_json({named_struct(schema=literal(schema), data=data)})"


def loader_parsing_error(failure: str, line: str) -> str:
    return bad_row(LOADER_PARSING_ERROR, failure, line)


def loader_iglu_error(failure: str, payload: str) -> str:
    """`failure` is JSON (a VARIANT): the array of the event's unresolved schemas (events/iglu_resolver.py);
    `payload` the event, see `event_json`."""
    return bad_row(LOADER_IGLU_ERROR, failure, payload)


def loader_runtime_error(failure: str, payload: str) -> str:
    """`failure` is a message string (loader_runtime_error 1-0-1); `payload` the event, see `event_json`."""
    return bad_row(LOADER_RUNTIME_ERROR, failure, payload)


def event_json(line: str) -> str:
    """SQL for a parsed good line as a JSON object: every enriched field under its name, typed.

    Numbers and booleans are JSON numbers and booleans, timestamps ISO 8601 UTC strings, and the three
    JSON fields the self-describing JSON they hold, taken from the raw line. Empty fields are left out.
    """
    raw = f"split({line}, '\\t', -1)"
    members = {
        f.name: f"try_parse_json(nullif(try_element_at({raw}, {f.index + 1}), ''))"
        if f.type is FieldType.JSON
        else identifier(f.name)
        for f in ENRICHED_FIELDS
    }
    return named_struct(**members)
