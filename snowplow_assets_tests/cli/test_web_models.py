"""`process` builds the web models after shredding, through the project's code location and instance."""

import dagster as dg
from click.testing import CliRunner

from snowplow_assets.cli import main
from snowplow_assets.cli.process import FOLLOW_UP_STEPS
from snowplow_assets.cli.web_models import build_web_models
from snowplow_assets.defs.manifests.web_manifest import read_web_manifest
from snowplow_assets.lake import Lake
from snowplow_assets_tests.web.shredded import Event, ts, write_shredded_run


def test_process_builds_the_web_models_after_shredding(tmp_path, monkeypatch, spark):
    assert build_web_models in FOLLOW_UP_STEPS
    lake = Lake(str(tmp_path / "lake"))
    home = tmp_path / "dagster_home"
    home.mkdir()
    (home / "dagster.yaml").write_text("telemetry:\n  enabled: false\n")
    monkeypatch.setenv("SNOWPLOW_LAKE", lake.root)
    monkeypatch.setenv("DAGSTER_HOME", str(home))
    monkeypatch.setenv("SNOWPLOW_WEB_START_DATE", "2026-03-01")
    at = ts("2026-03-01 08:00:00")
    write_shredded_run(lake, "run=2026-03-01-09-00-00", [
        Event("a", at, "s1", "u1", page_view="p1"),
        Event("b", at.replace(minute=30), "s2", "u2", page_view="p2"),
    ])  # fmt: skip

    result = CliRunner().invoke(main, ["process"])
    assert result.exit_code == 0, result.output
    assert "nothing to shred" in result.output and "building web models ..." in result.output
    assert "  sessions_lifecycle: 2 rows upserted from 2026-01-30 on (first run; Processing data between " in result.output
    assert "  users: 2 rows upserted" in result.output
    with dg.DagsterInstance.get() as instance:
        assert set(read_web_manifest(instance).values()) == {at.replace(minute=30)}
        [run] = instance.get_run_records(dg.RunsFilter(job_name="web_models"))
        assert run.dagster_run.status == dg.DagsterRunStatus.SUCCESS
