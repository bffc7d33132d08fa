import dagster as dg

from snowplow_assets.defs.assets.folder_readiness import fail_unless_run_folder_ready
from snowplow_assets.defs.partitions import enriched_runs
from snowplow_assets.defs.resources import LakeResource
from snowplow_assets.events.reader import run_folder_files


@dg.asset(
    partitions_def=enriched_runs,
    backfill_policy=dg.BackfillPolicy.single_run(),
    group_name="events",
    kinds={"tsv"},
    description="An enriched run folder (131-column TSV parts): the input of one shred run. Records its files.",
)
def enriched_batch(context: dg.AssetExecutionContext, lake: LakeResource) -> dg.MaterializeResult:
    """Each run folder of the run (one, or a backfilled range) records its own files on its own partition."""
    fs = lake.filesystem()
    for run_folder in sorted(context.partition_keys):
        folder = fail_unless_run_folder_ready(fs, lake.lake, run_folder)
        files = run_folder_files(fs, folder)
        if not files:
            context.log.warning(f"{folder} holds no data files; its shredded output will be empty")
        metadata = {
            "path": dg.MetadataValue.path(folder),
            "files": len(files),
            "bytes": sum(f.size for f in files),
            "gzip_files": sum(f.name.endswith(".gz") for f in files),
        }
        context.add_asset_metadata(metadata, partition_key=run_folder)
    return dg.MaterializeResult()
