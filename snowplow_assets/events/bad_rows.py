"""Bad rows (FORMATS.md §4): self-describing JSON lines that keep a rejected line and say why."""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version

from snowplow_assets.events.sql import literal, named_struct

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
