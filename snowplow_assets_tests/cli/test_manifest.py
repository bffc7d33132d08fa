import importlib
import json
import shutil
from pathlib import Path

import click
import dagster as dg
import pytest
from click.testing import CliRunner

from snowplow_assets.cdc.staging import ingestion_owner
from snowplow_assets.cli import main
from snowplow_assets.cli.process import process_enriched_runs
from snowplow_assets.cli.process_request import ProcessRequest
from snowplow_assets.defs.manifests.processing_manifest import RUN_FOLDERS, ProcessingManifest
from snowplow_assets.events import shred_batch
from snowplow_assets.events.shred_batch import ShredOptions, shred_run_folder
from snowplow_assets.manifest.base import ConcurrentManifestWrite
from snowplow_assets.manifest.lake_event_manifest import LakeEventManifest
from snowplow_assets.processing import State
from snowplow_assets.settings import Settings
from snowplow_assets_tests.cdc.builders import write_landing
from snowplow_assets_tests.conftest import write_run_folder
from snowplow_assets_tests.defs.manifest_runs import create_run, fail, succeed
from snowplow_assets_tests.manifest.conftest import B2, ETL, X, Y, line

DONE, BROKEN, FRESH = "run=2026-03-05-00-00-00", "run=2026-03-05-01-00-00", "run=2026-03-05-02-00-00"


@pytest.fixture
def dagster_home(tmp_path, monkeypatch, lake) -> Path:
    home = tmp_path / "dagster_home"
    home.mkdir()
    (home / "dagster.yaml").write_text("telemetry:\n  enabled: false\n")
    monkeypatch.setenv("DAGSTER_HOME", str(home))
    monkeypatch.setenv("SNOWPLOW_LAKE", lake.root)
    return home


@pytest.fixture
def history(dagster_home):
    """A processed, a failed and a new run folder in the instance of DAGSTER_HOME."""
    from snowplow_assets.definitions import defs

    job = defs().resolve_job_def("shred_enriched_run")
    with dg.DagsterInstance.get() as instance:
        instance.add_dynamic_partitions("enriched_runs", [DONE, BROKEN, FRESH])
        succeed(instance, create_run(instance, job, DONE), DONE, {"good": 4, "bad": 2})
        fail(instance, create_run(instance, job, BROKEN), "shred", "ValueError: a line too long")


def invoke(*args: str):
    return CliRunner().invoke(main, ["manifest", *args])


def test_manifest_lists_every_item_with_its_records_and_failure_reason(history):
    listed = invoke()
    assert listed.exit_code == 0, listed.output
    lines = listed.output.splitlines()
    assert (
        f"enriched/{DONE}  Processed" in lines
        and f"enriched/{BROKEN}  Failed" in lines
        and f"enriched/{FRESH}  New" in lines
    )
    failed_at = lines.index(f"enriched/{BROKEN}  Failed")
    failure = lines[failed_at + 3]
    assert "Failed" in failure and "shred_enriched_run" in failure
    assert "step=shred" in failure and "error=ValueError: a line too long" in failure
    assert lines[-1] == "3 items: 1 New, 1 Processed, 1 Failed; 0 invalid"

    document = json.loads(invoke("--json").output)
    assert document["summary"] == {"total": 3, "states": {"New": 1, "Processed": 1, "Failed": 1}, "invalid": 0}
    by_id = {item["item"]: item for item in document["items"]}
    processed = by_id[f"enriched/{DONE}"]["records"][-1]
    assert (processed["state"], processed["payload"]["good"], processed["application"]) == (
        "Processed",
        4,
        "shred_enriched_run",
    )
    assert processed["run_id"] and processed["time"].endswith("Z")

    only_failed = json.loads(invoke("--json", "--state", "failed").output)
    assert [item["item"] for item in only_failed["items"]] == [f"enriched/{BROKEN}"]


def test_operator_actions_from_the_command_line(history, lake):
    resolved = invoke("resolve", f"enriched/{BROKEN}", "--reason", "truncated upstream, re-sent")
    assert resolved.exit_code == 0, resolved.output
    assert resolved.output.strip() == f"enriched/{BROKEN} is now Resolved"
    with dg.DagsterInstance.get() as instance:
        [record] = instance.fetch_observations(
            dg.AssetRecordsFilter(dg.AssetKey("enriched_batch"), asset_partitions=[BROKEN]), limit=5
        ).records
        assert record.asset_observation.metadata["reason"].value == "truncated upstream, re-sent"

    refused = invoke("resolve", DONE, "--reason", "why not")
    assert refused.exit_code == 1 and "only Failed or Skipped items can be resolved" in refused.output
    assert invoke("skip", "enriched/../../etc", "--reason", "x").exit_code == 2
    assert invoke("skip", DONE).exit_code == 2, "a reason is required"

    unknown = invoke("skip", "run=2026-03-05-09-00-00", "--reason", "bad batch")
    assert unknown.exit_code == 1 and "not registered" in unknown.output
    write_run_folder(lake, "run=2026-03-05-09-00-00", ["x"])
    known = invoke("skip", "run=2026-03-05-09-00-00", "--reason", "bad batch")
    assert known.exit_code == 0 and "is now Skipped" in known.output, "a folder in the lake is registered and skipped"
    assert "Skipped" in invoke("--state", "Skipped").output


def test_a_skip_removes_what_the_items_killed_runs_staged(history, lake):
    """A killed run's staging is removed by the item's next run; a skipped item has none, and until 2026-11-28 a
    parsed copy of a skipped batch stayed under shredded/.staging/ for good."""
    landing = "landing=2026-03-05-09-00-00"
    write_landing(lake, landing, ["{}"])
    staged = {
        "skipped run": lake.shred_staging(BROKEN, "0123456789abcdef"),
        "another run": lake.shred_staging(DONE, "fedcba9876543210"),
        "skipped landing": lake.cdc_staging(ingestion_owner(landing), "0123456789abcdef"),
        "another landing": lake.cdc_staging(ingestion_owner(f"{landing}-2"), "0123456789abcdef"),
    }
    for folder in staged.values():
        Path(folder).mkdir(parents=True)
        (Path(folder) / "part-00000").write_text("staged")
    assert invoke("skip", f"enriched/{BROKEN}", "--reason", "re-sent as another folder").exit_code == 0
    assert invoke("skip", f"cdc/landing/{landing}", "--reason", "a test topic").exit_code == 0
    assert {what for what, folder in staged.items() if Path(folder).exists()} == {"another run", "another landing"}


def test_process_respects_locks_and_picks_up_resolved_folders(history, lake):
    """Registered folders whose files are missing fail fast, without Spark: enough to watch the locks."""
    outputs: list[str] = []
    settings = Settings()

    def process(reprocess=None):
        with dg.DagsterInstance.get() as instance:
            return process_enriched_runs(
                instance, settings, outputs.append, ProcessRequest(runs=tuple(reprocess or ()))
            )

    [first] = process()
    assert (first.partition, first.success) == (FRESH, False), "only the New folder is started"
    assert any(f"not started: enriched/{BROKEN} is Failed" in line for line in outputs)
    outputs.clear()
    assert process() == [] and "nothing to shred" in outputs

    folder = write_run_folder(lake, BROKEN, ["x"])
    with pytest.raises(click.ClickException, match="is Failed and stays locked.*manifest resolve"):
        process([BROKEN])
    shutil.rmtree(folder)  # so that the next run fails fast again, without Spark
    assert invoke("resolve", BROKEN, "--reason", "files restored").exit_code == 0
    outputs.clear()
    [again] = process()
    assert (again.partition, again.success) == (BROKEN, False), "a resolved folder is picked up again"
    assert again.run_id != first.run_id


def _fail_after_check_and_set(spark, fs, lake, run, manifest):
    """Shred `run`'s folder with `manifest`, the run failing after its check-and-set: entries, no output."""
    write_run_folder(lake, run, [line(X, "fpX", ETL[B2]), line(Y, "fpY", ETL[B2])])
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(shred_batch, "write_outputs", lambda *_: 1 / 0)
        with pytest.raises(ZeroDivisionError):
            shred_run_folder(spark, fs, lake, run, ShredOptions(event_manifest=manifest))


def test_skip_leaves_the_event_manifest_only_what_the_batch_published(history, spark, lake, fs, monkeypatch):
    """manifest/skipped_batch.py: until 2026-11-28 a skipped batch's entries stayed for their ttl."""
    monkeypatch.setenv("SNOWPLOW_EVENT_MANIFEST_TTL_DAYS", "3650")  # the run folders are from March
    manifest = LakeEventManifest(fs, lake, ttl_days=3650)
    _fail_after_check_and_set(spark, fs, lake, BROKEN, manifest)
    assert manifest.read_index().batches[BROKEN].folder is not None, "the failed run's entries"

    skipped = invoke("skip", f"enriched/{BROKEN}", "--reason", "re-sent as another folder")
    assert skipped.exit_code == 0, skipped.output
    lines = skipped.output.splitlines()
    assert lines[0] == f"enriched/{BROKEN} is now Skipped"
    assert f"the entries of {BROKEN} rewritten" in lines[1] and "process --run" in lines[-1]
    assert manifest.read_index().batches[BROKEN].folder is None, "no published output, no entries"


def test_the_skip_is_recorded_before_the_release_so_that_no_run_starts_the_batch_meanwhile(history, monkeypatch):
    """Released first, a rerun the sensor started meanwhile lost the keys it had just written, and a later
    copy of its events was loaded twice (review of 2026-11-28)."""
    states = []

    def release(*_args, **_kwargs):
        with dg.DagsterInstance.get() as instance:
            states.append(ProcessingManifest(instance).item(RUN_FOLDERS, BROKEN).state)

    monkeypatch.setattr(importlib.import_module("snowplow_assets.cli.manifest"), "release_skipped_batch", release)
    assert invoke("skip", f"enriched/{BROKEN}", "--reason", "re-sent as another folder").exit_code == 0
    assert states == [State.SKIPPED]


def test_a_skip_whose_release_fails_stays_recorded_and_running_it_again_retries(history, lake):
    Path(lake.event_manifest_index).parent.mkdir(parents=True, exist_ok=True)
    Path(lake.event_manifest_index).write_text("not json")
    failed = invoke("skip", f"enriched/{BROKEN}", "--reason", "re-sent as another folder")
    assert failed.exit_code == 1 and "unreadable" in failed.output
    assert f"{BROKEN} is Skipped, but its event manifest entries are not released" in failed.output
    assert "run the skip again" in failed.output
    assert f"enriched/{BROKEN}  Skipped" in invoke().output.splitlines()

    Path(lake.event_manifest_index).unlink()
    again = invoke("skip", f"enriched/{BROKEN}", "--reason", "re-sent as another folder")
    assert again.exit_code == 0 and "is Skipped already: its event manifest entries are released again" in again.output
    assert invoke("skip", DONE, "--reason", "x").exit_code == 0, "a Processed folder, without entries"


def test_a_skip_that_loses_the_lake_manifests_index_to_a_shred_says_to_run_it_again(history, monkeypatch):
    """The release runs outside the run queue, so a shred may rewrite the index meanwhile; the release published
    nothing. Until the review of 2026-11-28 this was a traceback telling the operator to rerun the batch."""

    def lost_the_race(*_args, **_kwargs):
        raise ConcurrentManifestWrite("the event manifest index changed while this batch was being checked")

    # The module, not the `manifest` command the package exports under the same name.
    monkeypatch.setattr(importlib.import_module("snowplow_assets.cli.manifest"), "release_skipped_batch", lost_the_race)
    refused = invoke("skip", f"enriched/{BROKEN}", "--reason", "re-sent as another folder")
    assert refused.exit_code == 1 and "another run rewrote the event manifest index" in refused.output
    assert "run the skip again" in refused.output and "Traceback" not in refused.output


def test_process_leaves_a_resolved_folder_still_being_written_for_later(history, lake):
    """Its run would refuse the folder and leave the item Failed again (CDC operator audit, 2026-11-28)."""
    write_run_folder(lake, BROKEN, ["x"], success_marker=False)  # sent again just now
    assert invoke("resolve", BROKEN, "--reason", "file sent again").exit_code == 0
    outputs: list[str] = []
    with dg.DagsterInstance.get() as instance:
        outcomes = process_enriched_runs(instance, Settings(), outputs.append)
    assert [o.partition for o in outcomes] == [FRESH], "the New folder only (it fails fast: no files)"
    assert any(line.startswith(f"waiting: run folder {BROKEN} is not ready yet: changed") for line in outputs)
