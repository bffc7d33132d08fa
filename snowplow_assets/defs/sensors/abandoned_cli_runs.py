"""Fails, every minute, the runs that a `snowplow-assets` process on this host left in flight when it died.

`process` sweeps them when it starts (defs/manifests/cli_run_processes.py), but where the sensors do the
processing nobody need ever run `process` again: an operator's `process` killed mid-shred would keep the
`shred` pool's one slot for good, and every run the folder sensor requests after it would wait for that slot.
This sensor makes the same sweep from the code server. It finds the runs by one query (in-flight runs tagged
with this host), asks the kernel after each one's process, and requests no runs itself; what it failed is in
its tick's message and log. It sees only the CLI processes of the host (and pid namespace) its code server
runs on, so in a deployment whose code server runs elsewhere, `process` remains the sweep.
"""

import dagster as dg

from snowplow_assets.defs.manifests.cli_run_processes import fail_abandoned_runs
from snowplow_assets.shown import shown

SENSOR_NAME = "abandoned_cli_runs"


@dg.sensor(
    name=SENSOR_NAME,
    minimum_interval_seconds=60,
    default_status=dg.DefaultSensorStatus.RUNNING,
    description=(
        "Fails the runs of snowplow-assets CLI processes on this host that ended without recording the run's "
        "end (killed mid-run), and frees their pool slots, as `snowplow-assets process` does when it starts."
    ),
)
def abandoned_cli_runs(context: dg.SensorEvaluationContext) -> dg.SkipReason:
    failed = fail_abandoned_runs(context.instance, context.log.warning)
    if not failed:
        return dg.SkipReason("no run of a snowplow-assets process that has ended")
    return dg.SkipReason(f"failed {len(failed)} run(s) whose snowplow-assets process had ended: {shown(failed)}")
