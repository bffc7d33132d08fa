"""`snowplow-assets event-manifest`: create the DynamoDB table, back-fill the manifest from shredded output."""

from __future__ import annotations

from datetime import date

import click

from snowplow_assets.lake import Lake
from snowplow_assets.manifest import EventManifest, make_event_manifest
from snowplow_assets.manifest.base import EventManifestUnavailable
from snowplow_assets.manifest.dynamodb_event_manifest import DynamoDbConfig, create_table
from snowplow_assets.manifest.populate import populate_event_manifest
from snowplow_assets.settings import Settings
from snowplow_assets.spark import lazy_spark_session
from snowplow_assets.storage import LakeFileSystem, filesystem_for


def configured_event_manifest(settings: Settings, fs: LakeFileSystem, lake: Lake) -> EventManifest | None:
    """The event manifest SNOWPLOW_EVENT_MANIFEST names, None for `none`."""
    return make_event_manifest(
        settings.event_manifest,
        fs,
        lake,
        settings.event_manifest_ttl_days,
        settings.event_manifest_dynamodb_table,
        settings.event_manifest_dynamodb_region,
        settings.event_manifest_dynamodb_endpoint_url,
    )


@click.group(name="event-manifest")
def event_manifest() -> None:
    """The event manifest behind cross-batch deduplication (SNOWPLOW_EVENT_MANIFEST)."""


@event_manifest.command(name="create-table")
@click.option("--table", help="Table name. Default: SNOWPLOW_EVENT_MANIFEST_DYNAMODB_TABLE.")
@click.option("--region", help="AWS region. Default: SNOWPLOW_EVENT_MANIFEST_DYNAMODB_REGION.")
@click.option(
    "--endpoint-url",
    help="DynamoDB endpoint, for a local stack. Default: SNOWPLOW_EVENT_MANIFEST_DYNAMODB_ENDPOINT_URL.",
)
def create_table_command(table: str | None, region: str | None, endpoint_url: str | None) -> None:
    """Create the DynamoDB event manifest table (on-demand) with TTL enabled on `ttl`; keep it if it exists."""
    settings = Settings()
    table = table or settings.event_manifest_dynamodb_table
    region = region or settings.event_manifest_dynamodb_region
    if not table or not region:
        raise click.UsageError("give --table and --region, or set SNOWPLOW_EVENT_MANIFEST_DYNAMODB_TABLE and _REGION")
    config = DynamoDbConfig(table, region, endpoint_url or settings.event_manifest_dynamodb_endpoint_url)
    try:
        click.echo(create_table(config))
    except EventManifestUnavailable as error:
        raise click.ClickException(str(error)) from error


def _parse_date(_context: click.Context, _parameter: click.Parameter, value: str) -> date:
    try:
        return date.fromisoformat(value)
    except ValueError as error:
        raise click.BadParameter(f"not a date (YYYY-MM-DD): {value!r}") from error


@event_manifest.command(name="populate")
@click.option("--since", required=True, callback=_parse_date, help="First day (YYYY-MM-DD) of run folders to record.")
def populate_command(since: date) -> None:
    """Record the events of shredded run folders from SINCE onwards in the configured event manifest.

    Run it before turning cross-batch deduplication on, so the first batches are checked against what was
    already loaded. It runs in this process, outside the Dagster run queue: do not run it while shred runs
    write the lake manifest.
    """
    settings = Settings()
    lake, fs = Lake(settings.lake), filesystem_for(settings.lake)
    manifest = configured_event_manifest(settings, fs, lake)
    if manifest is None:
        raise click.UsageError("SNOWPLOW_EVENT_MANIFEST is none: there is no event manifest to populate")
    spark = lazy_spark_session(settings.spark_config, settings.shared_spark_server, app_name="snowplow-assets-populate")
    try:
        with spark as session:
            report = populate_event_manifest(session, fs, lake, manifest, since, settings.cross_batch_synthetic)
    except EventManifestUnavailable as error:
        raise click.ClickException(str(error)) from error
    click.echo(f"{manifest.describe()}: {len(report.runs)} run folder(s) from {since.isoformat()}")
    for name, value in report.counts.items():
        click.echo(f"  {name}: {value}")
