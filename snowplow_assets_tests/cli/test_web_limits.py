"""`snowplow-assets web-limits`: the state and window the next web-models run would process, read from the
manifest in the project's Dagster instance (no Spark)."""

import json
from datetime import UTC, datetime

import dagster as dg
import pytest
from click.testing import CliRunner

from snowplow_assets.cli import main
from snowplow_assets.defs.manifests.web_manifest import LAST_SUCCESS, web_asset_key
from snowplow_assets.web.variables import MODELS


def record_last_success(instance: dg.DagsterInstance, model: str, moment: datetime) -> None:
    """What a build of the model leaves in the event log: a materialisation carrying its last_success."""
    metadata = {LAST_SUCCESS: dg.MetadataValue.timestamp(moment)}
    instance.report_runless_asset_event(dg.AssetMaterialization(asset_key=web_asset_key(model), metadata=metadata))


@pytest.fixture
def dagster_home(tmp_path, monkeypatch):
    home = tmp_path / "dagster_home"
    home.mkdir()
    (home / "dagster.yaml").write_text("telemetry:\n  enabled: false\n")
    monkeypatch.setenv("DAGSTER_HOME", str(home))
    monkeypatch.setenv("SNOWPLOW_WEB_START_DATE", "2021-01-01")
    with dg.DagsterInstance.get() as instance:
        yield instance


def test_an_empty_manifest_is_a_first_run(dagster_home):
    result = CliRunner().invoke(main, ["web-limits"])
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert lines[0] == "Snowplow: No data in manifest. Processing data from start_date"
    assert lines[1] == "Snowplow: Processing data between 2021-01-01 00:00:00 and 2021-01-31 00:00:00"
    assert [line.split()[0] for line in lines[2:]] == list(MODELS)
    assert all("last_success never" in line and "processes the window" in line for line in lines[2:])


def test_models_out_of_sync_show_which_ones_catch_up(dagster_home):
    ahead, behind = datetime(2021, 1, 8, 11, 59, 30, tzinfo=UTC), datetime(2021, 1, 8, 10, 59, 40, tzinfo=UTC)
    for model in MODELS:
        record_last_success(dagster_home, model, behind if model in ("sessions", "users") else ahead)

    text = CliRunner().invoke(main, ["web-limits"]).output.splitlines()
    assert text[:2] == [
        "Snowplow: Snowplow incremental models out of sync. Syncing",
        "Snowplow: Processing data between 2021-01-08 04:59:40 and 2021-01-08 11:59:30",
    ]
    assert "last_success 2021-01-08 11:59:30  up to date, writes nothing" in text[2]
    assert "last_success 2021-01-08 10:59:40  processes the window" in text[-1]

    document = json.loads(CliRunner().invoke(main, ["web-limits", "--json"]).output)
    assert (document["state"], document["lower_limit"], document["upper_limit"]) == (
        "models out of sync", "2021-01-08T04:59:40+00:00", "2021-01-08T11:59:30+00:00",
    )  # fmt: skip
    assert document["models"]["page_views"] == {"last_success": "2021-01-08T11:59:30+00:00", "runs": False}
    assert document["models"]["users"] == {"last_success": "2021-01-08T10:59:40+00:00", "runs": True}


def test_only_the_enabled_models_count(dagster_home, monkeypatch):
    record_last_success(dagster_home, "sessions_lifecycle", datetime(2021, 1, 8, tzinfo=UTC))
    monkeypatch.setenv("SNOWPLOW_WEB_MODELS", "sessions_lifecycle")
    document = json.loads(CliRunner().invoke(main, ["web-limits", "--json"]).output)
    assert document["state"] == "standard run" and list(document["models"]) == ["sessions_lifecycle"]
    assert document["lower_limit"] == "2021-01-07T18:00:00+00:00"


def test_no_enabled_model_means_no_window(dagster_home, monkeypatch):
    """An empty SNOWPLOW_WEB_MODELS turns the web models off: no run, so no state or window, and no traceback."""
    monkeypatch.setenv("SNOWPLOW_WEB_MODELS", "")
    result = CliRunner().invoke(main, ["web-limits"])
    assert (result.exit_code, result.output) == (0, "web models: none enabled (SNOWPLOW_WEB_MODELS)\n")
    result = CliRunner().invoke(main, ["web-limits", "--json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.output) == {"state": None, "lower_limit": None, "upper_limit": None, "models": {}}
