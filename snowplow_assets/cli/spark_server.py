"""`snowplow-assets spark-server`: a Spark Connect server for the runs to share (spark_connect_server.py)."""

from __future__ import annotations

import os

import click

from snowplow_assets.settings import Settings
from snowplow_assets.spark_connect_server import (
    DEFAULT_HOST,
    DEFAULT_PORT,
    spark_connect_server_command,
    spark_connect_server_environment,
)


@click.command("spark-server")
@click.option("--host", default=DEFAULT_HOST, show_default=True, help="Address to listen on.")
@click.option("--port", default=DEFAULT_PORT, show_default=True, type=click.IntRange(1, 65535))
def spark_server(host: str, port: int) -> None:
    """Run a Spark Connect server with this project's Spark settings (SNOWPLOW_SPARK_*), in the foreground.

    Runs, the CLI and `dagster dev` use it with SNOWPLOW_SPARK_REMOTE=sc://HOST:PORT, and then share its JVM
    instead of starting one each. Stop it with Ctrl-C.
    """
    config = Settings().spark_config
    command = spark_connect_server_command(config, host, port)
    # The server becomes this process: signals reach the JVM directly.
    os.execve(command[0], command, spark_connect_server_environment(config))
