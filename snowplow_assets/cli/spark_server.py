"""`snowplow-assets spark-server`: a Spark Connect server for the runs to share (spark_connect_server.py)."""

from __future__ import annotations

import os

import click

from snowplow_assets.settings import Settings
from snowplow_assets.spark_connect_server import (
    DEFAULT_HOST,
    DEFAULT_PORT,
    connection_note,
    server_token,
    spark_connect_server_command,
    spark_connect_server_environment,
)


@click.command("spark-server")
@click.option("--host", default=DEFAULT_HOST, show_default=True, help="Address to listen on.")
@click.option("--port", default=DEFAULT_PORT, show_default=True, type=click.IntRange(1, 65535))
def spark_server(host: str, port: int) -> None:
    """Run a Spark Connect server with this project's Spark settings (SNOWPLOW_SPARK_*), in the foreground.

    Runs, the CLI and `dagster dev` use it with the SNOWPLOW_SPARK_REMOTE it prints, instead of the shared
    server they start by themselves (`shared-spark-server`): a server on the address, and for as long, as you
    choose. It accepts only clients that present its token: SPARK_CONNECT_AUTHENTICATE_TOKEN if set (clients
    with the same variable then need no token in their URL), else a new one, in the URL it prints. Stop it
    with Ctrl-C.
    """
    config = Settings().spark_config
    command = spark_connect_server_command(config, host, port)
    token = server_token()
    click.echo(connection_note(host, port, token), err=True)
    # The server becomes this process: signals reach the JVM directly.
    os.execve(command[0], command, spark_connect_server_environment(config, token, host=host))
