"""Dagster concurrency pools: steps that must never run at the same time, whatever run they are in.

dagster.yaml gives every pool a limit of 1 at op granularity, so a step claims its pool's slot in the
instance's storage before it starts; runs launched from the CLI, sensors, the UI and backfills alike.
"""

# Steps that write shredded output or the lake event manifest. A single-run backfill of a range of run
# folders carries no per-partition tag that a tag concurrency limit could hold back, and an asset backfill
# does not carry the jobs' `snowplow/event-manifest` tag either, so only this pool keeps a ranged shred from
# overlapping a shred of the same folders, or a populate of the event manifest, whose lake backend's
# check-and-set is read, join, write.
SHRED_POOL = "shred"

# The web models step: two runs at once would compute their windows from the same incremental manifest and
# swap the same day partitions.
WEB_MODELS_POOL = "web_models"

# The CDC cut and the latest view: steps of two runs at once (the schedule's and one from `process` or the UI,
# or a cut that outlasts the schedule's interval) would swap the same folders, and on S3, where a folder
# moves one object at a time, both writers' part files end up in one batch or view: every row twice. A cut
# also expires the batches that another run's cut or latest view may be reading.
CDC_BATCHES_POOL = "cdc_batches"
