"""`process` builds the web models after shredding, through the project's code location and instance, and
the models built from real shred output agree with the events in it."""

import json
from pathlib import Path

import dagster as dg
from click.testing import CliRunner

from snowplow_assets.cli import main
from snowplow_assets.datagen.enriched import GenerationOptions, generate_run_folder
from snowplow_assets.defs.manifests.web_manifest import read_web_manifest
from snowplow_assets.events.enriched_schema import ATOMIC_FIELDS
from snowplow_assets.lake import Lake
from snowplow_assets.storage import LocalFileSystem
from snowplow_assets.web.pipeline import TABLES
from snowplow_assets.web.upsert import read_table
from snowplow_assets.web.variables import MODELS, PAGE_VIEWS, SESSIONS, USERS
from snowplow_assets_tests.web.shredded import ts

RUN = "run=2026-03-01-11-00-00"


def shredded_events(lake: Lake, run: str) -> list[dict[str, str]]:
    """The atomic events of a shredded run folder as dicts, each with the page view id of its web_page context."""
    good = Path(lake.shredded_good(run))
    page_ids: dict[str, str] = {}
    for part in (good / "shredded-types").glob("vendor=*/name=web_page/format=jsonschema/version=1-*/part-*"):
        for text in part.read_text().splitlines():
            entity = json.loads(text)
            root = entity["hierarchy"]["rootId"]
            page_ids[root] = min(page_ids.get(root, entity["data"]["id"]), entity["data"]["id"])
    events = []
    for part in (good / "atomic-events").glob("part-*"):
        for text in part.read_text().splitlines():
            values = dict(zip((f.name for f in ATOMIC_FIELDS), text.split("\t"), strict=True))
            events.append({**values, "page_view_id": page_ids.get(values["event_id"], "")})
    return events


def test_process_shreds_then_builds_web_models_that_agree_with_the_events(tmp_path, monkeypatch, spark):
    lake, fs = Lake(str(tmp_path / "lake")), LocalFileSystem()
    home = tmp_path / "dagster_home"
    home.mkdir()
    (home / "dagster.yaml").write_text("telemetry:\n  enabled: false\n")
    monkeypatch.setenv("SNOWPLOW_LAKE", lake.root)
    monkeypatch.setenv("DAGSTER_HOME", str(home))
    monkeypatch.setenv("SNOWPLOW_EVENT_MANIFEST", "none")  # cross-batch deduplication is not the subject here
    monkeypatch.setenv("SNOWPLOW_WEB_START_DATE", "2026-02-01")
    generate_run_folder(
        Path(lake.enriched_run(RUN)), GenerationOptions(events=400, seed=11, start=ts("2026-03-01 10:00:00"))
    )

    result = CliRunner().invoke(main, ["process"])
    assert result.exit_code == 0, result.output
    assert f"shredding {RUN} ..." in result.output and "building web models ..." in result.output
    assert (
        "  sessions_lifecycle: " in result.output
        and "(first run; Processing data between 2026-02-01 00:00:00" in result.output
    )

    events = [e for e in shredded_events(lake, RUN) if e["domain_sessionid"] and e["domain_userid"]]
    with dg.DagsterInstance.get() as instance:
        [run] = instance.get_run_records(dg.RunsFilter(job_name="web_models"))
        assert run.dagster_run.status == dg.DagsterRunStatus.SUCCESS
        # The job selects every check of its models, so its runs evaluate them all (a run evaluates only the
        # checks it selects).
        evaluated = instance.all_logs(run.dagster_run.run_id, of_type=dg.DagsterEventType.ASSET_CHECK_EVALUATION)
        assert sorted(
            (e.dagster_event.event_specific_data.asset_key.path[-1], e.dagster_event.event_specific_data.check_name)
            for e in evaluated
            if e.dagster_event.event_specific_data.passed
        ) == sorted(
            [(f"web_{m}", "unique_keys") for m in MODELS]
            + [("web_sessions", "page_view_counts_agree"), ("web_sessions", "quarantined_sessions_gain_no_events")]
        )
        latest = max(ts(e["collector_tstamp"]) for e in events)
        assert set(read_web_manifest(instance).values()) == {latest}
        [record] = instance.fetch_materializations(dg.AssetKey("web_sessions_lifecycle"), limit=1).records
        counts = {k: v.value for k, v in record.asset_materialization.metadata.items()}
    assert (counts["valid"], counts["late"], counts["duplicate"]) == (len(events), 0, 0)

    by_session: dict[str, list[dict[str, str]]] = {}
    for e in events:
        by_session.setdefault(e["domain_sessionid"], []).append(e)
    views = {
        (e["domain_sessionid"], e["page_view_id"]) for e in events if e["event"] == "page_view" and e["page_view_id"]
    }
    pings = sum(1 for e in events if e["event"] == "page_ping" and (e["domain_sessionid"], e["page_view_id"]) in views)
    sessions = {r.session_id: r for r in read_table(spark, fs, lake, TABLES[SESSIONS]).collect()}
    assert {s: (r.total_events, r.page_views) for s, r in sessions.items()} == {
        s: (len(es), len({e["page_view_id"] for e in es if e["event"] == "page_view" and e["page_view_id"]}))
        for s, es in by_session.items()
    }
    page_views = read_table(spark, fs, lake, TABLES[PAGE_VIEWS]).collect()
    assert {r.page_view_id for r in page_views} == {view for _, view in views}
    assert sum(r.page_pings for r in page_views) == pings > 0
    users = read_table(spark, fs, lake, TABLES[USERS]).collect()
    assert {(r.domain_userid, r.sessions) for r in users} == {
        (u, len({e["domain_sessionid"] for e in events if e["domain_userid"] == u}))
        for u in {e["domain_userid"] for e in events}
    }

    # dbt's --full-refresh: each model is reset outside the run, then rebuilt from start_date to the same rows.
    again = CliRunner().invoke(main, ["process", "--full-refresh"])
    assert again.exit_code == 0, again.output
    assert "nothing to shred" in again.output and "building web models from scratch (full refresh) ..." in again.output
    assert "(first run; Processing data between 2026-02-01 00:00:00" in again.output
    with dg.DagsterInstance.get() as instance:
        runs = instance.get_run_records(
            dg.RunsFilter(job_name="web_models"), order_by="create_timestamp", ascending=True
        )
        refresh = runs[-1].dagster_run
        assert refresh.run_config["ops"] == {"build_web_models": {"config": {"full_refresh": True}}}
        records = instance.fetch_materializations(dg.AssetKey("web_sessions"), limit=2).records
        assert [r.run_id for r in records] == [refresh.run_id, ""], "the rebuild, after the reset outside the run"
        assert set(read_web_manifest(instance).values()) == {latest}
    assert {r.session_id: r for r in read_table(spark, fs, lake, TABLES[SESSIONS]).collect()} == sessions
