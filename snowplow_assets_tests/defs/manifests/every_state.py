"""An instance holding one run folder in each state of the processing manifest, and two invalid ones."""

import dagster as dg

from snowplow_assets.defs.manifests.operator_actions import record_operator_action
from snowplow_assets.defs.manifests.processing_manifest import RUN_FOLDERS
from snowplow_assets_tests.defs.manifest_runs import create_run, fail, start, succeed

NEW, RUNNING, DONE, BROKEN, RESOLVED, SKIPPED = (f"run=2026-03-02-0{h}-00-00" for h in range(6))
REPORTED, ORPHANED = "run=2026-03-02-07-00-00", "run=2026-03-02-08-00-00"


def write_every_state(instance: dg.DagsterInstance, job: dg.JobDefinition) -> None:
    """REPORTED has a materialisation reported outside any run; ORPHANED lost its registration."""
    instance.add_dynamic_partitions(
        "enriched_runs", [NEW, RUNNING, DONE, BROKEN, RESOLVED, SKIPPED, REPORTED, ORPHANED]
    )
    start(instance, create_run(instance, job, RUNNING))
    succeed(instance, create_run(instance, job, DONE), DONE, {"good": 4, "bad": 2})
    fail(instance, create_run(instance, job, BROKEN), "shred", "ValueError: boom")
    fail(instance, create_run(instance, job, RESOLVED), "enriched_batch", "Failure: run folder missing")
    record_operator_action(instance, RUN_FOLDERS, RESOLVED, "resolve", "copied the folder again")
    record_operator_action(instance, RUN_FOLDERS, SKIPPED, "skip", "test data")
    instance.report_runless_asset_event(dg.AssetMaterialization("shredded_types", partition=REPORTED))
    fail(instance, create_run(instance, job, ORPHANED), "shred", "ValueError: boom")
    instance.delete_dynamic_partition("enriched_runs", ORPHANED)
