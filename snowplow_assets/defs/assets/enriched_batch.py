import dagster as dg

from snowplow_assets.defs.partitions import enriched_runs
from snowplow_assets.defs.resources import LakeResource
from snowplow_assets.events.reader import run_folder_files


@dg.asset(
    partitions_def=enriched_runs,
    group_name="events",
    kinds={"tsv"},
    description="An enriched run folder (131-column TSV parts): the input of one shred run. Records its files.",
)
def enriched_batch(context: dg.AssetExecutionContext, lake: LakeResource) -> dg.MaterializeResult:
    folder = lake.lake.enriched_run(context.partition_key)
    fs = lake.filesystem()
    if not fs.exists(folder):
        raise dg.Failure(f"run folder {folder} does not exist", metadata={"path": folder})
    files = run_folder_files(fs, folder)
    if not files:
        context.log.warning(f"{folder} holds no data files; its shredded output will be empty")
    return dg.MaterializeResult(
        metadata={
            "path": dg.MetadataValue.path(folder),
            "files": len(files),
            "bytes": sum(f.size for f in files),
            "gzip_files": sum(f.name.endswith(".gz") for f in files),
        }
    )
