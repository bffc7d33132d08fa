"""The events of a batch whose schemas no Iglu registry holds, as `iglu_error` decisions (FORMATS.md §4).

Their schemas are looked up once per batch (iglu_resolver.py); here each good line's entity types are
matched against the unresolved ones. Such an event is bad before deduplication, as an unparsable line is:
it is neither a duplicate nor a survivor, and the event manifest never records it, so that a copy sent again
once the schema is published loads. The output pass makes its `loader_iglu_error` row (output_pass.py).
"""

from __future__ import annotations

import json

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from snowplow_assets.events.dedup import IGLU_ERROR
from snowplow_assets.events.iglu_resolver import IgluResolver
from snowplow_assets.events.sql import literal


def batch_schemas(keys: DataFrame) -> list[str]:
    """The distinct schema URIs of the entities of `keys` (the staged keys' `entity_types`)."""
    rows = keys.select(F.explode("entity_types.schema").alias("schema")).distinct().collect()
    return sorted(row["schema"] for row in rows)


def split_unresolved(keys: DataFrame, resolver: IgluResolver) -> tuple[DataFrame, DataFrame | None, list[str]]:
    """`keys` whose schemas all resolve, the `iglu_error` decisions (dedup.DECISION_COLUMNS) of the others, or None
    when there are none, and the unresolved schema URIs."""
    failures = resolver.unresolved(batch_schemas(keys))
    if not failures:
        return keys, None, []
    known = "map(" + ", ".join(f"{literal(uri)}, {literal(json.dumps(f))}" for uri, f in failures.items()) + ")"
    unresolved = f"filter(array_distinct(entity_types.schema), s -> map_contains_key({known}, s))"
    marked = keys.withColumn("_unresolved", F.expr(unresolved))
    decisions = marked.where(F.size("_unresolved") > 0).select(
        "row_id",
        F.lit(IGLU_ERROR).alias("action"),
        "event_id",
        F.lit(None).cast("string").alias("new_event_id"),
        F.expr(f"concat('[', array_join(transform(_unresolved, s -> {known}[s]), ','), ']')").alias("failure"),
    )
    return marked.where(F.size("_unresolved") == 0).drop("_unresolved"), decisions, sorted(failures)
