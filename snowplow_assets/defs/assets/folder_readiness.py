"""A run's second look at the folder it is about to read, which a sensor or `process` found ready earlier."""

import dagster as dg

from snowplow_assets.lake import Lake
from snowplow_assets.run_folders import still_being_written
from snowplow_assets.settings import Settings
from snowplow_assets.storage import LakeFileSystem


def fail_unless_still_ready(fs: LakeFileSystem, folder: str, noun: str, name: str, metadata: dict) -> None:
    """Fail the step if `folder` (the `noun` `name`) is not ready by the readiness rule (run_folders.py).

    It was found ready when it was registered, but its run may start hours later, and the folder may have been
    written since (landed again under its name, or a copy a tick took for complete): read so, part of its data
    would be shredded or ingested and the item marked Processed."""
    if why := still_being_written(fs, folder, fs.clock(folder), Settings().ready_after_seconds):
        raise dg.Failure(
            f"{noun} {name} is not ready: {why}. It is being written again since it was found ready (landed again "
            "under its name, or a copy still under way): resolve it once it is complete",
            metadata=metadata,
        )


def fail_unless_run_folder_ready(fs: LakeFileSystem, lake: Lake, run_folder: str) -> str:
    """The path of the enriched run folder `run_folder`, once it exists and is still ready.

    Both steps that read the folder ask: `enriched_batch`, and `shred`, which runs without it when the UI
    re-executes a failed shred run from its failure or materialises the shred assets alone. Until 2026-11-28
    only `enriched_batch` asked, and such a run shredded a folder still being copied and marked it Processed.
    """
    folder = lake.enriched_run(run_folder)
    metadata = {"path": folder, "run_folder": run_folder}
    if not fs.exists(folder):
        raise dg.Failure(f"run folder {folder} does not exist", metadata=metadata)
    fail_unless_still_ready(fs, folder, "run folder", run_folder, metadata)
    return folder
