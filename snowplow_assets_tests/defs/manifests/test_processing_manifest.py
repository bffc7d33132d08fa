import dagster as dg
import pytest
import sqlalchemy
from dagster._core.storage.tags import PARTITION_NAME_TAG

from snowplow_assets.defs.manifests.processing_manifest import (
    CDC_LANDINGS,
    RUN_FOLDERS,
    ProcessingManifest,
    parse_item,
    read_manifest,
    record_operator_action,
    resolved_since,
    startable_runs,
)
from snowplow_assets.processing import State
from snowplow_assets_tests.conftest import write_run_folder
from snowplow_assets_tests.defs.manifest_runs import create_run, fail, start, succeed
from snowplow_assets_tests.events.test_shred_batch import GOLDEN_INPUT, RUN

NEW, RUNNING, DONE, BROKEN, RESOLVED, SKIPPED = (f"run=2026-03-02-0{h}-00-00" for h in range(6))
REPORTED, ORPHANED = "run=2026-03-02-07-00-00", "run=2026-03-02-08-00-00"


@pytest.fixture
def job(definitions) -> dg.JobDefinition:
    return definitions.resolve_job_def("shred_enriched_run")


@pytest.fixture
def memory_instance():
    """An in-memory instance: the same SQL tables without the run-sharded SQLite's file per run, whose fsyncs
    make each recorded event cost ~0.1 s. test_real_runs_read_as_dagster_reports_them covers that storage."""
    instance = dg.DagsterInstance.ephemeral()
    yield instance
    instance.dispose()


@pytest.fixture
def every_state(memory_instance, job) -> dg.DagsterInstance:
    """One run folder in each state, and two whose records contradict each other."""
    instance = memory_instance
    instance.add_dynamic_partitions("enriched_runs", [NEW, RUNNING, DONE, BROKEN, RESOLVED, SKIPPED, REPORTED, ORPHANED])
    start(instance, create_run(instance, job, RUNNING))
    succeed(instance, create_run(instance, job, DONE), DONE, {"good": 4, "bad": 2})
    fail(instance, create_run(instance, job, BROKEN), "shred", "ValueError: boom")
    fail(instance, create_run(instance, job, RESOLVED), "enriched_batch", "Failure: run folder missing")
    record_operator_action(instance, RUN_FOLDERS, RESOLVED, "resolve", "copied the folder again")
    record_operator_action(instance, RUN_FOLDERS, SKIPPED, "skip", "test data")
    instance.report_runless_asset_event(dg.AssetMaterialization("shredded_types", partition=REPORTED))
    fail(instance, create_run(instance, job, ORPHANED), "shred", "ValueError: boom")
    instance.delete_dynamic_partition("enriched_runs", ORPHANED)
    return instance


def test_every_state_is_derived_from_runs_materialisations_and_observations(every_state):
    items = ProcessingManifest(every_state).items(RUN_FOLDERS)
    assert {name: (i.state, i.valid) for name, i in items.items()} == {
        NEW: (State.NEW, True),
        RUNNING: (State.PROCESSING, True),
        DONE: (State.PROCESSED, True),
        BROKEN: (State.FAILED, True),
        RESOLVED: (State.RESOLVED, True),
        SKIPPED: (State.SKIPPED, True),
        REPORTED: (State.PROCESSED, False),
        ORPHANED: (State.FAILED, False),
    }
    assert [r.state for r in items[DONE].records] == [State.NEW, State.PROCESSING, State.PROCESSED]
    processed = items[DONE].records[-1]
    assert processed.application == "shred_enriched_run" and processed.previous == items[DONE].records[1].id
    assert processed.payload == {"asset": "shredded_types", "good": 4, "bad": 2}
    failed = items[BROKEN].records[-1]
    assert (failed.state, failed.payload["step"], failed.payload["error"]) == (State.FAILED, "shred", "ValueError: boom")
    assert failed.payload["failure_reason"] == "STEP_FAILURE"
    resolve = items[RESOLVED].records[-1]
    assert (resolve.application, resolve.previous) == ("operator", items[RESOLVED].records[-2].id)
    assert resolve.payload["reason"] == "copied the folder again" and resolve.payload["by"]
    assert "closes no Processing record" in items[REPORTED].problems[0]
    assert "no New record" in items[ORPHANED].problems[0]
    assert items[NEW].records[0].time is not None and items[RUNNING].open_runs
    assert items[RUNNING].records[-1].payload == {"asset": "shredded_types", "status": "STARTED"}


def test_one_item_reads_the_same_as_the_listing(every_state):
    manifest = ProcessingManifest(every_state)
    listed = manifest.items(RUN_FOLDERS)
    for name, item in listed.items():
        assert manifest.item(RUN_FOLDERS, name) == item
    assert manifest.item(RUN_FOLDERS, "run=2030-01-01-00-00-00").problems, "an unknown item has no New record"
    everything = read_manifest(every_state)
    assert [i.id for i in everything] == sorted(f"enriched/{n}" for n in listed)


@pytest.fixture
def statements():
    seen: list[str] = []

    def capture(conn, cursor, statement, parameters, context, executemany):
        seen.append(statement)

    sqlalchemy.event.listen(sqlalchemy.engine.Engine, "before_cursor_execute", capture)
    yield seen
    sqlalchemy.event.remove(sqlalchemy.engine.Engine, "before_cursor_execute", capture)


def _reads(statements: list[str]) -> list[str]:
    return [s for s in statements if s.lstrip().upper().startswith("SELECT") and "sqlite_master" not in s]


def test_one_item_is_read_by_indexed_filters_and_the_listing_does_not_grow_with_items(memory_instance, job, statements):
    instance = memory_instance

    def add(hours):
        names = [f"run=2026-03-03-{h:02d}-00-00" for h in hours]
        instance.add_dynamic_partitions("enriched_runs", names)
        for name in names:
            fail(instance, create_run(instance, job, name), "shred", "ValueError: x")

    add(range(3))
    manifest = ProcessingManifest(instance)
    statements.clear()
    manifest.items(RUN_FOLDERS)
    few = len(_reads(statements))
    add(range(3, 23))
    statements.clear()
    assert len(manifest.items(RUN_FOLDERS)) == 23
    assert len(_reads(statements)) == few, "the listing makes the same queries for 3 items as for 23"

    statements.clear()
    assert manifest.item(RUN_FOLDERS, "run=2026-03-03-05-00-00").state is State.FAILED
    reads = _reads(statements)
    assert reads and all(" IN (" in s.replace("\n", " ") for s in reads), reads


def test_operator_actions_are_observations_and_are_validated(every_state):
    instance = every_state
    [observation] = [
        r.asset_observation
        for r in instance.fetch_observations(
            dg.AssetRecordsFilter(dg.AssetKey("enriched_batch"), asset_partitions=[SKIPPED]), limit=5
        ).records
    ]
    assert observation.metadata["manifest_action"].value == "skip" and observation.metadata["reason"].value == "test data"

    for name, action, message in [
        (NEW, "resolve", "only Failed or Skipped"),
        (DONE, "resolve", "it is Processed"),
        (RUNNING, "skip", "it is Processing"),
        (SKIPPED, "skip", "already Skipped"),
        (ORPHANED, "resolve", "it is invalid"),
        ("run=2030-01-01-00-00-00", "skip", "not registered"),
    ]:
        with pytest.raises(ValueError, match=message):
            record_operator_action(instance, RUN_FOLDERS, name, action, "because")
    with pytest.raises(ValueError, match="reason is required"):
        record_operator_action(instance, RUN_FOLDERS, BROKEN, "resolve", "  ")
    with pytest.raises(ValueError, match="unknown manifest action"):
        record_operator_action(instance, RUN_FOLDERS, BROKEN, "retry", "because")

    unskipped = record_operator_action(instance, RUN_FOLDERS, SKIPPED, "resolve", "not test data after all")
    assert unskipped.state is State.RESOLVED and unskipped.may_start
    parked = record_operator_action(instance, RUN_FOLDERS, REPORTED, "skip", "reported by hand, look later")
    assert parked.state is State.SKIPPED and not parked.valid
    late = record_operator_action(instance, RUN_FOLDERS, "run=2030-01-01-00-00-00", "skip", "known bad", register=True)
    assert [r.state for r in late.records] == [State.NEW, State.SKIPPED] and late.valid


def test_only_new_and_resolved_valid_items_may_start(every_state):
    names = [NEW, RUNNING, DONE, BROKEN, RESOLVED, SKIPPED, REPORTED, ORPHANED, "run=2030-01-01-00-00-00"]
    check = startable_runs(every_state, RUN_FOLDERS, names, discovered={"run=2030-01-01-00-00-00": "a_sensor"})
    resolve_id = ProcessingManifest(every_state).item(RUN_FOLDERS, RESOLVED).records[-1].id
    assert [(s.name, s.run_key) for s in check.startable] == [
        (NEW, NEW),
        (RESOLVED, f"{RESOLVED}#{resolve_id}"),
        ("run=2030-01-01-00-00-00", "run=2030-01-01-00-00-00"),
    ]
    assert set(check.refused) == {RUNNING, DONE, BROKEN, SKIPPED, REPORTED, ORPHANED}
    assert "locked until an operator resolves it" in check.refused[BROKEN]
    assert "holds it" in check.refused[RUNNING]
    assert "is invalid" in check.refused[ORPHANED]


def test_resolved_since_follows_the_operator_observations(every_state):
    names, cursor = resolved_since(every_state, RUN_FOLDERS, None, limit=10)
    assert names == [RESOLVED] and cursor is not None
    assert resolved_since(every_state, RUN_FOLDERS, cursor, limit=10) == ([], cursor)
    record_operator_action(every_state, RUN_FOLDERS, BROKEN, "resolve", "fixed upstream")
    later, newer = resolved_since(every_state, RUN_FOLDERS, cursor, limit=10)
    assert later == [BROKEN] and newer > cursor


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("enriched/run=2026-03-01-10-00-00", (RUN_FOLDERS, "run=2026-03-01-10-00-00")),
        ("run=2026-03-01-10-00-00", (RUN_FOLDERS, "run=2026-03-01-10-00-00")),
        ("cdc/landing/orders-0001", (CDC_LANDINGS, "orders-0001")),
    ],
)
def test_items_are_named_by_their_lake_path(text, expected):
    assert parse_item(text) == expected


@pytest.mark.parametrize("text", ["enriched/run=2026", "enriched/../x", "cdc/landing/../etc", "cdc/landing/", "orders", ""])
def test_bad_item_names_are_refused(text):
    with pytest.raises(ValueError, match="not a"):
        parse_item(text)


def test_real_runs_read_as_dagster_reports_them(definitions, instance, lake, job, spark):
    write_run_folder(lake, RUN, GOLDEN_INPUT)
    missing = "run=2026-03-01-11-00-00"
    instance.add_dynamic_partitions("enriched_runs", [RUN, missing])
    ok = job.execute_in_process(partition_key=RUN, instance=instance)
    bad = job.execute_in_process(partition_key=missing, instance=instance, raise_on_error=False)
    items = ProcessingManifest(instance).items(RUN_FOLDERS)

    done = items[RUN]
    assert (done.state, done.valid) == (State.PROCESSED, True)
    _, processing, processed = done.records
    run = instance.get_run_record_by_id(ok.run_id)
    assert (processing.run_id, processing.time, processed.time) == (ok.run_id, run.start_time, run.end_time)
    assert processing.application == processed.application == "shred_enriched_run"
    [materialization] = instance.fetch_materializations(
        dg.AssetRecordsFilter(dg.AssetKey("shredded_types"), asset_partitions=[RUN]), limit=5
    ).records
    metadata = materialization.asset_materialization.metadata
    expected = {k: v.value for k, v in metadata.items() if k != "entity_types"}
    assert {k: processed.payload[k] for k in expected} == expected
    assert processed.payload["entity_types"] == [r.data for r in metadata["entity_types"].value.records]
    assert processed.payload["good"] == 4 and len(processed.payload["entity_types"]) == 4

    failed = items[missing]
    assert failed.state is State.FAILED and failed.records[-1].run_id == bad.run_id
    [step_failure] = instance.get_records_for_run(bad.run_id, of_type=dg.DagsterEventType.STEP_FAILURE).records
    reason = failed.records[-1].payload
    assert reason["step"] == step_failure.event_log_entry.step_key == "enriched_batch"
    assert reason["error"] == step_failure.event_log_entry.dagster_event.step_failure_data.error.message.strip()
    assert "does not exist" in reason["error"]
    assert instance.get_run_record_by_id(bad.run_id).dagster_run.tags[PARTITION_NAME_TAG] == missing


def test_cdc_landings_are_items_too(definitions, memory_instance):
    instance = memory_instance
    instance.add_dynamic_partitions("cdc_landings", ["orders-0001", "orders-0002"])
    instance.create_run_for_job(
        definitions.resolve_job_def("cdc_ingest_landing"),
        tags={"dagster/partition": "orders-0002"},
        status=dg.DagsterRunStatus.NOT_STARTED,
    )
    items = {i.id: i for i in read_manifest(instance)}
    assert items["cdc/landing/orders-0001"].state is State.NEW
    landing = items["cdc/landing/orders-0002"]
    assert landing.state is State.PROCESSING and landing.records[-1].application == "cdc_ingest_landing"
    assert landing.records[-1].payload["asset"] == "cdc_history"
    skipped = record_operator_action(instance, CDC_LANDINGS, "orders-0001", "skip", "replayed topic")
    assert skipped.state is State.SKIPPED and skipped.id == "cdc/landing/orders-0001"
