
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
    assert "lines_read=" in result.output and "good: " in result.output
    [good] = list((lake / "shredded" / "good").iterdir())
    assert (good / "shredding_complete.json").exists()
    assert any((good / "atomic-events").glob("part-*"))
    # The CDC model of the packaged models file: two landings ingested, a batch cut, the latest view written.
    assert result.output.count("cdc_ingest_landing: ok") == 2 and "cdc_batch: ok" in result.output
    assert (lake / "cdc" / "latest" / "customers" / "_latest.json").exists()
    assert "snowplow-assets latest customers" in result.output
    # The web models: one web_models run over the shredded events, from a start date just before them.
    assert "web_models: ok" in result.output and "(first run; Processing data between " in result.output
    for model in ("sessions_lifecycle", "page_views", "sessions", "users"):
        assert any((lake / "web" / model).glob("start_date=*/*.parquet")), model
