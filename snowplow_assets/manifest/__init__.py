"""The event manifest behind cross-batch deduplication: one interface (base.py), two backends.

- `lake_event_manifest.py`: Parquet in the lake, checked with a Spark join (the embedded default);
- `dynamodb_event_manifest.py`: Snowplow's DynamoDB table, one conditional PutItem per key;
- `populate.py`: back-filling either from shredded output; `checks.py`: verifying a batch against it.

Which batch owns a key, why reruns are safe, and how entries expire: base.py. What the answers do to the
events: events/dedup.py. No dagster import here; defs/ wires it.
"""

from __future__ import annotations

from snowplow_assets.lake import Lake
from snowplow_assets.manifest.base import DEFAULT_TTL_DAYS, Clock, EventManifest, utc_now
from snowplow_assets.manifest.dynamodb_event_manifest import DynamoDbConfig, DynamoDbEventManifest
from snowplow_assets.manifest.lake_event_manifest import LakeEventManifest
from snowplow_assets.storage import LakeFileSystem

BACKENDS = ("none", "lake", "dynamodb")


def make_event_manifest(
    backend: str,
    fs: LakeFileSystem,
    lake: Lake,
    ttl_days: int = DEFAULT_TTL_DAYS,
    dynamodb_table: str | None = None,
    dynamodb_region: str | None = None,
    dynamodb_endpoint_url: str | None = None,
    clock: Clock = utc_now,
) -> EventManifest | None:
    """The configured backend, or None when cross-batch deduplication is off (`none`)."""
    if backend == "none":
        return None
    if backend == "lake":
        return LakeEventManifest(fs, lake, ttl_days, clock)
    if backend == "dynamodb":
        if not dynamodb_table or not dynamodb_region:
            raise ValueError("the dynamodb event manifest needs a table name and a region")
        config = DynamoDbConfig(dynamodb_table, dynamodb_region, dynamodb_endpoint_url or None)
        return DynamoDbEventManifest(config, fs, ttl_days, clock)
    raise ValueError(f"unknown event manifest backend {backend!r}; expected one of {', '.join(BACKENDS)}")
