"""`shredding_complete.json`, the marker a loader waits for before it loads a run folder (FORMATS.md §3)."""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Any

from snowplow_assets.events.bad_rows import PROCESSOR_ARTIFACT, PROCESSOR_VERSION

if TYPE_CHECKING:
    from snowplow_assets.events.shred_batch import ShredReport
    from snowplow_assets.lake import Lake
    from snowplow_assets.storage import LakeFileSystem

SHREDDING_COMPLETE_SCHEMA = "iglu:com.snowplowanalytics.snowplow.storage.rdbloader/shredding_complete/jsonschema/2-0-1"


def _iso(value: datetime | None) -> str | None:
    return value.isoformat(timespec="milliseconds").replace("+00:00", "Z") if value else None


def shredding_complete(report: ShredReport, compression: str) -> dict[str, Any]:
    types = sorted({(t.schema, t.kind) for t in report.entity_types})
    return {
        "schema": SHREDDING_COMPLETE_SCHEMA,
        "data": {
            "base": report.good_output.rstrip("/") + "/",
            "typesInfo": {
                "transformation": "SHREDDED",
                "types": [{"schemaKey": schema, "format": "JSON", "snowplowEntity": kind} for schema, kind in types],
            },
            "timestamps": {
                "jobStarted": _iso(report.started),
                "jobCompleted": _iso(report.completed),
                "min": report.min_collector_tstamp,
                "max": report.max_collector_tstamp,
            },
            "compression": compression,
            "processor": {"artifact": PROCESSOR_ARTIFACT, "version": PROCESSOR_VERSION},
            "count": {"good": report.good, "bad": report.bad},
        },
    }


def withdraw_completion(fs: LakeFileSystem, lake: Lake, run: str) -> bool:
    """Remove a published run folder's marker; whether there was one.

    A batch's output can only be checked once it is published, and loaders (and the web models) take in any
    folder that has the marker: output that failed a blocking check must lose it, so that nothing loads it
    until a rerun that passes publishes it again.
    """
    marker = lake.shredding_complete(run)
    if not fs.exists(marker):
        return False
    fs.delete(marker)
    return True
