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
    assert "lines_read=" in result.output and "good: " in result.output
    [good] = list((lake / "shredded" / "good").iterdir())
    assert (good / "shredding_complete.json").exists()
    assert any((good / "atomic-events").glob("part-*"))
