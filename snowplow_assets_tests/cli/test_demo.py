import os
import subprocess
import sys
from pathlib import Path

from click.testing import CliRunner

from snowplow_assets.cli import main


def test_demo_generates_and_processes_end_to_end(tmp_path, monkeypatch, spark):
    lake = tmp_path / "lake"
    home = tmp_path / "dagster_home"
    home.mkdir()
    monkeypatch.setenv("SNOWPLOW_LAKE", str(lake))
    monkeypatch.setenv("DAGSTER_HOME", str(home))
    result = CliRunner().invoke(main, ["demo", "--runs", "1", "--events", "200"])
    assert result.exit_code == 0, result.output
    assert_processed_end_to_end(result.output, lake)


def test_the_demo_on_a_spark_connect_server(tmp_path, spark_connect_server):
    """Every job of the project (shredding, the CDC ingestion and batches, the web models) as clients of a
    long-lived server, in a process that starts no JVM of its own."""
    lake, home = tmp_path / "lake", tmp_path / "dagster_home"
    home.mkdir()
    env = {**os.environ, "SNOWPLOW_LAKE": str(lake), "DAGSTER_HOME": str(home), "SNOWPLOW_SPARK_REMOTE": spark_connect_server.url}
    command = [str(Path(sys.executable).parent / "snowplow-assets"), "demo", "--runs", "1", "--events", "200"]
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=900, cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert_processed_end_to_end(done.stdout, lake)
    # A JVM announces the default options' compiler directives as it starts (jvm/driver_options.py).
    assert "compiler directives" not in done.stderr


def assert_processed_end_to_end(output: str, lake: Path) -> None:
    assert "lines_read=" in output and "good: " in output
    [good] = list((lake / "shredded" / "good").iterdir())
    assert (good / "shredding_complete.json").exists()
    assert any((good / "atomic-events").glob("part-*"))
    # The CDC model of the packaged models file: two landings ingested, a batch cut, the latest view written.
    assert output.count("cdc_ingest_landing: ok") == 2 and "cdc_batch: ok" in output
    assert (lake / "cdc" / "latest" / "customers" / "_latest.json").exists()
    assert "snowplow-assets latest customers" in output
    # The web models: one web_models run over the shredded events, from a start date just before them.
    assert "web_models: ok" in output and "(first run; Processing data between " in output
    for model in ("sessions_lifecycle", "page_views", "sessions", "users"):
        assert any((lake / "web" / model).glob("start_date=*/*.parquet")), model
