import dagster as dg

from snowplow_assets.defs.ops.populate_event_manifest import populate_event_manifest_op
from snowplow_assets.defs.resources import event_manifest_run_tags
from snowplow_assets.settings import Settings


# Tagged like the shred job: the run queue lets one writer of a lake event manifest run at a time.
@dg.job(
    tags=event_manifest_run_tags(Settings()),
    description="Back-fill the event manifest from existing shredded output, so cross-batch deduplication does not "
    "start cold. Config: ops.populate_event_manifest_op.config.since = YYYY-MM-DD.",
)
def populate_event_manifest() -> None:
    populate_event_manifest_op()
