"""`snowplow-assets shared-spark-server`: the shared Spark server of this environment's settings, and stopping it."""

from __future__ import annotations

import click

from snowplow_assets.settings import Settings


@click.command("shared-spark-server")
@click.option("--stop", is_flag=True, help="Stop it now, failing any run on it.")
def shared_spark_server(stop: bool) -> None:
    """Show the shared Spark server that runs with these settings lease (SNOWPLOW_SPARK_SERVER=shared), or stop it.

    Runs start it when they need it, and it stops by itself once idle (SNOWPLOW_SPARK_SERVER_IDLE_MINUTES).
    """
    settings = Settings()
    shared = settings.shared_spark_server
    if shared is None:
        raise click.UsageError("runs share no server: SNOWPLOW_SPARK_REMOTE is set, or SNOWPLOW_SPARK_SERVER is own")
    config = settings.spark_config
    state = shared.status(config)
    click.echo(f"folder: {state.folder}")
    if state.address is None:
        click.echo("no shared server runs for these settings")
        return
    address = state.address
    click.echo(f"running: JVM {address.jvm_pid} (keeper {address.keeper_pid}) on {address.host}:{address.port}")
    if state.in_use:
        click.echo("in use by a run")
    else:
        click.echo(f"idle for {state.idle_seconds / 60:.1f} min; stops after {shared.idle_seconds / 60:g}")
    if stop:
        click.echo("stopped" if shared.stop(config) else "it had stopped already")
