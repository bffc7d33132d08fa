import os
import subprocess
import sys
from pathlib import Path


def test_the_demo_on_a_spark_connect_server(tmp_path, spark_connect_server):
    """`snowplow-assets demo`, every job of the project (shredding, the CDC ingestion and batches, the web
    models), as clients of a long-lived server, in a process that starts no JVM of its own.

    The demo is not run again in this process's classic session: it is `process` after generating data,
    and each of its jobs runs through `process` in this process in test_process.py, test_process_cdc.py and
    test_web_models.py; `process` as a subprocess is in test_shared_spark_server.py, and a command with a JVM of
    its own in jvm/test_driver_options.py."""
    lake, home = tmp_path / "lake", tmp_path / "dagster_home"
    home.mkdir()
    env = {
        **os.environ,
        "SNOWPLOW_LAKE": str(lake),
        "DAGSTER_HOME": str(home),
        "SNOWPLOW_SPARK_REMOTE": spark_connect_server.url,
    }
    command = [str(Path(sys.executable).parent / "snowplow-assets"), "demo", "--runs", "1", "--events", "200"]
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=900, cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "lines_read=" in done.stdout and "good: " in done.stdout
    [good] = list((lake / "shredded" / "good").iterdir())
    assert (good / "shredding_complete.json").exists()
    assert any((good / "atomic-events").glob("part-*"))
    # The CDC model of the packaged models file: two landings ingested, a batch cut, the latest view written.
    assert done.stdout.count("cdc_ingest_landing: ok") == 2 and "cdc_batch: ok" in done.stdout
    assert (lake / "cdc" / "latest" / "customers" / "_latest.json").exists()
    assert "snowplow-assets latest customers" in done.stdout
    # The web models: one web_models run over the shredded events, from a start date just before them.
    assert "web_models: ok" in done.stdout and "(first run; Processing data between " in done.stdout
    # That start date is kept where the settings read it, so later runs and a full refresh start there too.
    [start] = [line.split("=")[1] for line in (tmp_path / ".env").read_text().splitlines() if "WEB_START_DATE" in line]
    assert f"Processing data between {start} 00:00:00" in done.stdout
    for model in ("sessions_lifecycle", "page_views", "sessions", "users"):
        assert any((lake / "web" / model).glob("start_date=*/*.parquet")), model
    # A JVM announces the default options' compiler directives as it starts (jvm/driver_options.py).
    assert "compiler directives" not in done.stderr
