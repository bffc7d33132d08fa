import os
import re
from pathlib import Path

import dagster as dg
import pytest
from click.testing import CliRunner

from snowplow_assets.cli import main
from snowplow_assets.defs.manifests.cli_run_processes import CLI_PROCESS_TAG
from snowplow_assets.defs.manifests.instance_lake import InstanceOfAnotherLake, claim_instance_for_lake
from snowplow_assets.lake import Lake
from snowplow_assets_tests.cdc.builders import write_landing
from snowplow_assets_tests.conftest import write_run_folder
from snowplow_assets_tests.events.test_shred_batch import GOLDEN_INPUT, RUN


@pytest.fixture
def dagster_home(tmp_path, monkeypatch) -> Path:
    home = tmp_path / "dagster_home"
    home.mkdir()
    (home / "dagster.yaml").write_text("telemetry:\n  enabled: false\n")
    monkeypatch.setenv("DAGSTER_HOME", str(home))
    return home


def shred_runs(home: Path) -> list[dg.DagsterRun]:
    assert os.environ["DAGSTER_HOME"] == str(home)
    with dg.DagsterInstance.get() as instance:
        return [r.dagster_run for r in instance.get_run_records(dg.RunsFilter(job_name="shred_enriched_run"))]


@pytest.fixture
def shredding_only(monkeypatch) -> None:
    """`process` without the web models, which it builds after shredding: they have tests of their own
    (test_web_models.py runs them through `process`), and these tests are about the run folders."""
    monkeypatch.setenv("SNOWPLOW_WEB_MODELS", "")


def test_process_skips_done_folders_and_reprocesses_on_request(lake, dagster_home, monkeypatch, spark, shredding_only):
    monkeypatch.setenv("SNOWPLOW_LAKE", lake.root)
    write_run_folder(lake, RUN, GOLDEN_INPUT)
    runner = CliRunner()
    first = runner.invoke(main, ["process"])
    assert first.exit_code == 0, first.output
    [run] = shred_runs(dagster_home)
    assert run.tags[CLI_PROCESS_TAG].startswith(f"{os.getpid()}/"), "a run names the process executing it"
    again = runner.invoke(main, ["process"])
    assert again.exit_code == 0 and "nothing to shred" in again.output
    assert len(shred_runs(dagster_home)) == 1
    forced = runner.invoke(main, ["process", "--run", RUN])
    assert forced.exit_code == 0, forced.output
    assert len(shred_runs(dagster_home)) == 2


def test_process_exits_non_zero_when_a_run_fails(lake, dagster_home, monkeypatch, spark, shredding_only):
    monkeypatch.setenv("SNOWPLOW_LAKE", lake.root)
    # Registered (say by the sensor) and then removed before it was processed.
    with dg.DagsterInstance.get() as instance:
        instance.add_dynamic_partitions("enriched_runs", [RUN])
    result = CliRunner().invoke(main, ["process"])
    assert result.exit_code == 1
    assert "FAILED" in result.output and "does not exist" in result.output
    [run] = shred_runs(dagster_home)
    assert run.status == dg.DagsterRunStatus.FAILURE


def test_process_refuses_a_named_folder_that_is_not_ready_and_starts_nothing(lake, dagster_home, monkeypatch):
    """Its run would fail it as being written (enriched_batch) and leave it Failed, to be resolved."""
    monkeypatch.setenv("SNOWPLOW_LAKE", lake.root)
    write_run_folder(lake, RUN, GOLDEN_INPUT, success_marker=False)  # written just now, no marker
    result = CliRunner().invoke(main, ["process", "--run", RUN])
    assert result.exit_code == 1
    assert re.search(rf"run folder {RUN} is not ready: changed \d+s ago, waiting for \d+s of quiet", result.output)
    assert "a _SUCCESS written after its files" in result.output
    assert shred_runs(dagster_home) == []
    with dg.DagsterInstance.get() as instance:
        assert RUN not in instance.get_dynamic_partitions("enriched_runs")


def test_process_refuses_a_named_folder_holding_only_a_writers_staged_files(lake, dagster_home, monkeypatch):
    """Read as empty, it was marked Processed and its data, once moved into place, never shredded."""
    monkeypatch.setenv("SNOWPLOW_LAKE", lake.root)
    staged = Path(lake.enriched_run(RUN)) / "_temporary" / "0" / "part-00000"
    staged.parent.mkdir(parents=True)
    staged.write_text("\n".join(GOLDEN_INPUT) + "\n")
    result = CliRunner().invoke(main, ["process", "--run", RUN])
    assert result.exit_code == 1
    assert f"run folder {RUN} is not ready: no data files yet, only a writer's staged files" in result.output
    assert shred_runs(dagster_home) == []


@pytest.mark.parametrize(
    ("landing", "refusal"),
    [
        ("landing=2026-03-01-10-30-00", "CDC landing landing=2026-03-01-10-30-00 is not ready"),
        ("landing=2026-03-01-11-00-00", "no such CDC landing"),
    ],
)
def test_process_refuses_a_named_landing_before_it_shreds_anything(lake, dagster_home, monkeypatch, landing, refusal):
    """The CDC step comes last: until 2026-11-28 a landing it refused was refused after every run folder was
    registered and shredded and the web models built, and the command failed all the same."""
    monkeypatch.setenv("SNOWPLOW_LAKE", lake.root)
    write_run_folder(lake, RUN, GOLDEN_INPUT)
    write_landing(lake, "landing=2026-03-01-10-30-00", ['{"key": 1}'], marker=False)  # written just now
    result = CliRunner().invoke(main, ["process", "--ingest", landing])
    assert result.exit_code == 1 and refusal in result.output, result.output
    assert shred_runs(dagster_home) == []
    with dg.DagsterInstance.get() as instance:
        assert instance.get_dynamic_partitions("enriched_runs") == []


@pytest.mark.parametrize("name", ["../etc", "run=2026"])
def test_process_rejects_bad_folder_names(lake, dagster_home, monkeypatch, name):
    monkeypatch.setenv("SNOWPLOW_LAKE", lake.root)
    result = CliRunner().invoke(main, ["process", "--run", name])
    assert result.exit_code == 2 and "run=YYYY-MM-DD-hh-mm-ss" in result.output


def test_process_takes_a_run_folder_as_the_manifest_names_it(lake, dagster_home, monkeypatch):
    monkeypatch.setenv("SNOWPLOW_LAKE", lake.root)
    result = CliRunner().invoke(main, ["process", "--run", "enriched/run=2026-03-06-00-00-00"])
    assert result.exit_code == 1 and f"no such run folder: {lake.enriched_run('run=2026-03-06-00-00-00')}" in (
        result.output
    )


def test_a_models_file_that_cannot_be_read_stops_process_before_it_registers_anything(lake, dagster_home, monkeypatch):
    """The definitions every run loads need it: a missing file failed the command with a 243-line traceback,
    after it had registered the new folders."""
    monkeypatch.setenv("SNOWPLOW_LAKE", lake.root)
    monkeypatch.setenv("SNOWPLOW_CDC_MODELS", str(lake.root) + "/missing.yaml")
    write_run_folder(lake, RUN, GOLDEN_INPUT)
    result = CliRunner().invoke(main, ["process"])
    assert result.exit_code == 1
    assert result.output.strip().splitlines()[-1].startswith("Error: CDC models file not found: ")
    with dg.DagsterInstance.get() as instance:
        assert instance.get_dynamic_partitions("enriched_runs") == []


def test_an_instance_serves_the_lake_that_first_used_it(tmp_path, dagster_home, monkeypatch, shredding_only):
    """Its manifest is keyed by folder names, which every lake repeats: pointed at a new lake, `process` took the
    new lake's folders for the old lake's, processed already, and shredded nothing, exiting 0."""
    first, second = Lake(str(tmp_path / "first")), Lake(str(tmp_path / "second"))
    monkeypatch.setenv("SNOWPLOW_LAKE", first.root)
    assert CliRunner().invoke(main, ["process"]).exit_code == 0
    monkeypatch.setenv("SNOWPLOW_LAKE", second.root)
    write_run_folder(second, RUN, GOLDEN_INPUT)
    refused = CliRunner().invoke(main, ["process"])
    assert refused.exit_code == 1 and "note: the lake" not in refused.output
    assert f"holds the processing manifest of the lake {first.root}, and SNOWPLOW_LAKE is {second.root}" in (
        refused.output
    )
    skipped = CliRunner().invoke(main, ["manifest", "skip", f"enriched/{RUN}", "--reason", "not wanted"])
    assert skipped.exit_code == 1 and "holds the processing manifest of the lake" in skipped.output
    with dg.DagsterInstance.get() as instance:
        assert instance.get_dynamic_partitions("enriched_runs") == [], "neither process nor skip registered it"
    monkeypatch.setenv("SNOWPLOW_LAKE", str(tmp_path / "typo"))
    assert (
        "note: the lake " + str(tmp_path / "typo") + " does not exist" in CliRunner().invoke(main, ["process"]).output
    )

    # The first lake moved to where the second is: said with `manifest lake-moved`, which checks where it was.
    monkeypatch.setenv("SNOWPLOW_LAKE", second.root)
    assert f"lake-moved --from {first.root}" in refused.output
    wrong = CliRunner().invoke(main, ["manifest", "lake-moved", "--from", str(tmp_path / "elsewhere")])
    assert wrong.exit_code == 1 and f"holds the processing manifest of the lake {first.root}, not" in wrong.output
    moved = CliRunner().invoke(main, ["manifest", "lake-moved", "--from", first.root])
    assert moved.exit_code == 0, moved.output
    with dg.DagsterInstance.get() as instance:
        claim_instance_for_lake(instance, second.root)
        with pytest.raises(InstanceOfAnotherLake, match="lake-moved"):
            claim_instance_for_lake(instance, first.root)
