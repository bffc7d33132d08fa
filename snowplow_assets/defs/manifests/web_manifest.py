"""The web models' incremental manifest: each model's last_success, kept in its materialisation metadata.

Dagster's event log is the manifest (dbt-snowplow-web keeps a table for it): every build of a web model
records a materialisation carrying `last_success`, and a model's entry is that value in its latest
materialisation. A model never materialised (or whose history was wiped) is missing from the manifest,
which makes the next run backfill it from start_date.
"""

from datetime import UTC, datetime

import dagster as dg

from snowplow_assets.web.variables import MODELS

LAST_SUCCESS = "last_success"
WEB_MODELS_JOB = "web_models"


def web_asset_key(model: str) -> dg.AssetKey:
    return dg.AssetKey(f"web_{model}")


def last_success_of(materialization: dg.AssetMaterialization | None) -> datetime | None:
    value = materialization.metadata.get(LAST_SUCCESS) if materialization else None
    if value is None:
        return None
    if not isinstance(value, dg.TimestampMetadataValue):
        asset = materialization.asset_key.to_user_string()  # type: ignore[union-attr]
        raise ValueError(f"{LAST_SUCCESS} of {asset} is not a timestamp: {value!r}")
    return datetime.fromtimestamp(value.value, UTC)


def read_web_manifest(instance: dg.DagsterInstance, models: tuple[str, ...] = MODELS) -> dict[str, datetime | None]:
    """{model: last_success} from the latest materialisation of each model's asset."""
    manifest: dict[str, datetime | None] = {}
    for model in models:
        records = instance.fetch_materializations(dg.AssetRecordsFilter(asset_key=web_asset_key(model)), limit=1)
        manifest[model] = last_success_of(records.records[0].asset_materialization if records.records else None)
    return manifest
