"""The `snowplow-assets` command. Each subcommand lives in its own module of this package."""

import click

from snowplow_assets.cli.demo import demo
from snowplow_assets.cli.generate import generate
from snowplow_assets.cli.process import process


@click.group()
def main() -> None:
    """Snowplow shredding, CDC consolidation and web models as Dagster assets on Spark."""


for command in (demo, generate, process):
    main.add_command(command)
