"""A run folder is judged ready when a sensor registers it, and read when its run starts, which may be hours
later behind the `shred` pool's queue. A folder that is being written again by then (deleted and landed again
under its name, a copy still under way) fails its run rather than be shredded with part of its data, whichever
of the steps that read it the run holds: a re-execution from failure, or a Materialize of the shred assets, runs
`shred` without `enriched_batch`."""

import shutil
import time

import dagster as dg
import pytest
from dagster_pyspark import LazyPySparkResource

from snowplow_assets.defs.assets.enriched_batch import enriched_batch
from snowplow_assets.defs.assets.shredded import shred
from snowplow_assets.defs.resources import EventManifestResource, LakeResource, ShredResource, WebModelsResource
from snowplow_assets.spark import spark_session_config
from snowplow_assets_tests.conftest import TEST_SPARK_CONFIG, write_run_folder

RUN = "run=2026-03-04-00-00-00"


def materialise(instance, lake, step=enriched_batch) -> dg.ExecuteInProcessResult:
    resources = {
        "lake": LakeResource(root=lake.root),
        "spark": LazyPySparkResource(spark_config=spark_session_config(TEST_SPARK_CONFIG)),
        "shredder": ShredResource(),
        "event_manifest_backend": EventManifestResource(backend="none"),
        "web": WebModelsResource(),
    }
    return dg.materialize([step], partition_key=RUN, resources=resources, instance=instance, raise_on_error=False)


@pytest.mark.parametrize("step", [enriched_batch, shred], ids=["enriched_batch", "shred"])
def test_a_run_folder_written_again_after_it_was_found_ready_fails_its_run(lake, monkeypatch, step):
    monkeypatch.setenv("SNOWPLOW_READY_AFTER_SECONDS", "1")
    folder = write_run_folder(lake, RUN, ["x"])
    with dg.instance_for_test() as instance:
        instance.add_dynamic_partitions("enriched_runs", [RUN])  # found ready: a part file, then _SUCCESS
        # Deleted and landed again by a copy in key order: its marker first, then its part files, one so far.
        shutil.rmtree(folder)
        folder.mkdir()
        (folder / "_SUCCESS").touch()
        time.sleep(0.05)
        (folder / "part-00000").write_text("x\n")
        failed = materialise(instance, lake, step)
        assert not failed.success
        [failure] = [e for e in failed.all_events if e.is_step_failure]
        message = failure.step_failure_data.error.message
        assert f"run folder {RUN} is not ready" in message and "changed" in message, message

        time.sleep(1.1)  # the copy is done, and the folder quiet for the ready time
        assert materialise(instance, lake).success  # the recorded files: shredding it proves nothing more
