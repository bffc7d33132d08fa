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
    stops_after = f"stops after {state.stops_after_seconds / 60:g} min without a run"
    if state.stops_after_seconds != shared.idle_seconds:
        stops_after += (
            f" (as set when it started; SNOWPLOW_SPARK_SERVER_IDLE_MINUTES={shared.idle_seconds / 60:g} applies to"
            " the next server started)"
        )
    if state.in_use:
        click.echo(f"in use by a run; {stops_after}")
    else:
        click.echo(f"idle for {state.idle_seconds / 60:.1f} min; {stops_after}")
    if stop:
        click.echo("stopped" if shared.stop(config) else "it had stopped already")
