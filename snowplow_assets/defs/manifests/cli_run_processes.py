"""Which process executes a CLI run, and the runs whose process died before recording their end.

The CLI executes runs in its own process (cli/runs.py), which no code server or daemon watches: killed
mid-run (`kill -9`, the kernel's out-of-memory killer, a reboot), it leaves its run Started for good. The
run's item then stays Processing, so neither a sensor nor `process` starts it again, and a `shred` step it
was in keeps the pool's one slot, so no shred anywhere runs again, not even the sensors' runs. Dagster's run
monitoring cannot help: the run has no worker it can ask after, and it frees only the slots of runs that
have ended.

So each CLI run carries its process's identity (processes.py) in two tags, and the in-flight runs of this
host's CLI processes that have ended are failed by two sweeps: `process` and `demo` begin with one, and the
`abandoned_cli_runs` sensor makes one every minute from the code server (defs/sensors/), which is what
frees a deployment whose runs come from the sensors after an operator's `process` was killed. A failed run
then holds nothing: the item is Failed with the reason below (`snowplow-assets manifest resolve` lets it be
processed again, as after any failure), and the run's pool slots are freed at once, not 30 seconds later by
the monitoring daemon, which a CLI-only deployment may not run. Runs whose process may still run (it does,
or it ran on another host or in another container) are left alone: failing a live run would let a second
run shred its folder beside it.
"""

from __future__ import annotations

from collections.abc import Callable

import dagster as dg
from dagster._core.storage.tags import PARTITION_NAME_TAG

from snowplow_assets.processes import ProcessIdentity

# The host apart from the rest, so that one query finds the runs this host's processes started.
CLI_HOST_TAG = "snowplow/cli_host"
CLI_PROCESS_TAG = "snowplow/cli_process"

# Every status a run has before it records its end; a CLI run is never queued, but one killed between its
# creation and its start stays NOT_STARTED. CANCELING: the UI's Terminate of a CLI run reports it, then finds
# no process it can reach and leaves it so; until 2026-11-28 such a run whose process died stayed CANCELING,
# its item Processing and its pool slot taken, wherever no daemon's run monitoring ended it.
_IN_FLIGHT = [
    dg.DagsterRunStatus.NOT_STARTED,
    dg.DagsterRunStatus.STARTING,
    dg.DagsterRunStatus.STARTED,
    dg.DagsterRunStatus.CANCELING,
]


def cli_run_tags() -> dict[str, str]:
    """The tags that name this process as the one executing a run."""
    me = ProcessIdentity.current()
    return {CLI_HOST_TAG: me.host, CLI_PROCESS_TAG: me.text()}


def fail_abandoned_runs(instance: dg.DagsterInstance, echo: Callable[[str], None]) -> list[str]:
    """Fail the in-flight runs of CLI processes on this host that have ended, free their pool slots, say so
    through `echo`, and return their ids."""
    me = ProcessIdentity.current()
    failed = []
    for run in instance.get_runs(dg.RunsFilter(statuses=_IN_FLIGHT, tags={CLI_HOST_TAG: me.host})):
        try:
            owner = ProcessIdentity.parse(run.tags[CLI_HOST_TAG], run.tags[CLI_PROCESS_TAG])
        except (KeyError, ValueError):
            continue  # not tagged by cli_run_tags: no process to ask after
        if not owner.gone():
            continue
        instance.report_run_failed(
            run,
            f"The snowplow-assets process that executed this run (pid {owner.pid} on {owner.host}) ended without "
            f"recording the run's end (killed?); marked failed by pid {me.pid}.",
        )
        if instance.event_log_storage.supports_global_concurrency_limits:
            instance.event_log_storage.free_concurrency_slots_for_run(run.run_id)
        partition = run.tags.get(PARTITION_NAME_TAG)
        echo(
            f"failed run {run.run_id} of {run.job_name}{f' ({partition})' if partition else ''}: "
            f"its process, pid {owner.pid}, ended without recording the run's end"
        )
        failed.append(run.run_id)
    return failed
