"""The `snowplow-assets` command. Each subcommand lives in its own module of this package."""

import textwrap
from typing import Any

import click

from snowplow_assets.cli.demo import demo
from snowplow_assets.cli.event_manifest import event_manifest
from snowplow_assets.cli.generate import generate
from snowplow_assets.cli.generate_cdc import cdc as generate_cdc
from snowplow_assets.cli.latest import latest
from snowplow_assets.cli.manifest import manifest
from snowplow_assets.cli.process import process
from snowplow_assets.cli.shared_spark_server import shared_spark_server
from snowplow_assets.cli.spark_server import spark_server
from snowplow_assets.cli.web_limits import web_limits
from snowplow_assets.settings import InvalidSettings


class _Commands(click.Group):
    """The commands, which report settings that the environment got wrong as an error, not a traceback."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except InvalidSettings as error:
            raise click.ClickException("invalid settings:\n" + textwrap.indent(str(error), "  ")) from error


@click.group(cls=_Commands)
def main() -> None:
    """Snowplow shredding, CDC consolidation and web models as Dagster assets on Spark."""


for command in (
    demo,
    generate,
    process,
    event_manifest,
    web_limits,
    latest,
    manifest,
    spark_server,
    shared_spark_server,
):
    main.add_command(command)
generate.add_command(generate_cdc)
