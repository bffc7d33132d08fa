"""`snowplow-assets web-limits`: the state and window the next run of the web models would process."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import click

from snowplow_assets.cli.instance import project_instance
from snowplow_assets.defs.manifests.web_manifest import read_web_manifest
from snowplow_assets.settings import Settings
from snowplow_assets.web.run_limits import RunLimits, format_timestamp, run_limits
from snowplow_assets.web.variables import WebVariables, parse_models


def next_run_limits(
    settings: Settings, enabled: tuple[str, ...], now: datetime
) -> tuple[RunLimits, dict[str, datetime | None]]:
    with project_instance() as instance:
        manifest = read_web_manifest(instance, enabled)
    return run_limits(enabled, manifest, now, WebVariables.from_settings(settings)), manifest


@click.command(name="web-limits")
@click.option("--json", "as_json", is_flag=True, help="Print the state, the window and the manifest as JSON.")
def web_limits(as_json: bool) -> None:
    """Print the state of the incremental manifest and the window the next web-models run would process."""
    settings = Settings()
    enabled = parse_models(settings.web_models)
    if not enabled:
        # As `process` reports it: with no model there is no run, so no state and no window.
        none = {"state": None, "lower_limit": None, "upper_limit": None, "models": {}}
        click.echo(json.dumps(none, indent=2) if as_json else "web models: none enabled (SNOWPLOW_WEB_MODELS)")
        return
    limits, manifest = next_run_limits(settings, enabled, datetime.now(UTC))
    if as_json:
        document = {
            "state": limits.state.value,
            "lower_limit": limits.lower.isoformat(),
            "upper_limit": limits.upper.isoformat(),
            "models": {
                model: {
                    "last_success": manifest[model].isoformat() if manifest[model] else None,  # type: ignore[union-attr]
                    "runs": limits.should_run(manifest[model]),
                }
                for model in limits.models
            },
        }
        click.echo(json.dumps(document, indent=2))
        return
    click.echo(limits.message)
    click.echo(limits.processing)
    width = max(len(m) for m in limits.models)
    for model in limits.models:
        last = manifest[model]
        shown = format_timestamp(last) if last else "never"
        action = "processes the window" if limits.should_run(last) else "up to date, writes nothing"
        click.echo(f"  {model:<{width}}  last_success {shown:<19}  {action}")
