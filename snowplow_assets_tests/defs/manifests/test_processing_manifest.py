import dagster as dg
import pytest
import sqlalchemy
from dagster._core.events import DagsterEventType, StepMaterializationData
from dagster._core.storage.tags import (
    ASSET_PARTITION_RANGE_END_TAG,
    ASSET_PARTITION_RANGE_START_TAG,
    PARTITION_NAME_TAG,
)

from snowplow_assets.defs.manifests.operator_actions import record_operator_action
from snowplow_assets.defs.manifests.processing_manifest import (
    CDC_LANDINGS,
    RUN_FOLDERS,
    ProcessingManifest,
    parse_item,
    read_manifest,
)
from snowplow_assets.processing import NEVER_STARTED, State
from snowplow_assets_tests.defs.manifest_runs import SHREDDED_TYPES, create_run, fail, report, start
from snowplow_assets_tests.defs.manifests.every_state import (
    BROKEN,
    DONE,
    NEW,
    ORPHANED,
    REPORTED,
    RESOLVED,
    RUNNING,
    SKIPPED,
)


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
    assert (failed.state, failed.payload["step"], failed.payload["error"]) == (
        State.FAILED,
        "shred",
        "ValueError: boom",
    )
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
    reads = [s.replace("\n", " ") for s in _reads(statements)]
    # Each read is filtered by the item, except the one for plans that name a range of partitions instead of
    # one (one row per ranged run, never per item; none unless Dagster is told to log plans so).
    unfiltered = [s for s in reads if " IN (" not in s]
    assert reads and len(unfiltered) == 1 and "event_logs.partition IS NULL" in unfiltered[0], reads


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


@pytest.mark.parametrize(
    "text", ["enriched/run=2026", "enriched/../x", "cdc/landing/../etc", "cdc/landing/", "orders", ""]
)
def test_bad_item_names_are_refused(text):
    with pytest.raises(ValueError, match="not a"):
        parse_item(text)


def test_a_real_failed_run_shows_its_step_error_and_failure_metadata(definitions, instance, job):
    """On the run-sharded SQLite storage of a real instance; test_shredded.py reads real successful runs."""
    missing = "run=2026-03-01-11-00-00"
    instance.add_dynamic_partitions("enriched_runs", [missing])
    bad = job.execute_in_process(partition_key=missing, instance=instance, raise_on_error=False)
    failed = ProcessingManifest(instance).item(RUN_FOLDERS, missing)
    assert failed.state is State.FAILED and failed.records[-1].run_id == bad.run_id
    [step_failure] = instance.get_records_for_run(bad.run_id, of_type=dg.DagsterEventType.STEP_FAILURE).records
    reason = failed.records[-1].payload
    assert reason["step"] == step_failure.event_log_entry.step_key == "enriched_batch"
    assert reason["error"] == step_failure.event_log_entry.dagster_event.step_failure_data.error.message.strip()
    assert "does not exist" in reason["error"]
    assert (reason["run_folder"], reason["path"]) == (missing, definitions.resources["lake"].lake.enriched_run(missing))
    assert reason["failure_reason"] == "STEP_FAILURE" and "backfill" not in reason
    assert instance.get_run_record_by_id(bad.run_id).dagster_run.tags[PARTITION_NAME_TAG] == missing


def test_runs_failed_or_canceled_from_outside_are_failed_with_their_message(memory_instance, job):
    """The UI's termination of a run that no longer answers, the CLI's abandoned runs and Dagster's own daemons
    end a run with an event that carries a message and no data."""
    instance = memory_instance
    failed_name, canceled_name = "run=2026-03-09-00-00-00", "run=2026-03-09-01-00-00"
    instance.add_dynamic_partitions("enriched_runs", [failed_name, canceled_name])
    failed, canceled = create_run(instance, job, failed_name), create_run(instance, job, canceled_name)
    start(instance, failed)
    instance.report_run_failed(failed, "its process is gone")
    instance.report_run_canceled(canceled)
    items = ProcessingManifest(instance).items(RUN_FOLDERS, [failed_name, canceled_name])
    assert items[failed_name].state is items[canceled_name].state is State.FAILED
    assert items[failed_name].current.payload["message"] == "its process is gone"
    canceled_reason = items[canceled_name].current.payload["message"]
    assert canceled_reason == "This run has been marked as canceled from outside the execution context."


def test_a_run_cancelled_in_the_queue_behind_the_items_run_processed_nothing_and_overlaps_nothing(memory_instance, job):
    """A second run of the item waits in the queue (Dagster's limit on runs of one partition) and is cancelled
    before it starts, while the first shreds the item. Dated from its creation to its cancellation, inside the
    first run, it made the item invalid for good (until 2026-11-28); it processed nothing."""
    instance, name = memory_instance, "run=2026-03-09-02-00-00"
    instance.add_dynamic_partitions("enriched_runs", [name])
    first = create_run(instance, job, name)
    start(instance, first)
    queued = create_run(instance, job, name)
    instance.report_run_canceled(queued, "a duplicate, cancelled by the operator")
    shredded = dg.AssetMaterialization(SHREDDED_TYPES, partition=name)
    materialised = StepMaterializationData(shredded)
    report(instance, first, DagsterEventType.ASSET_MATERIALIZATION, step_key="shred", event_specific_data=materialised)
    report(instance, first, DagsterEventType.RUN_SUCCESS)
    item = ProcessingManifest(instance).item(RUN_FOLDERS, name)
    assert item.valid, item.problems
    assert item.state is State.PROCESSED and item.may_start is False
    never_started = [r for r in item.records if r.run_id == queued.run_id and r.state is State.PROCESSING]
    assert [r.payload.get(NEVER_STARTED) for r in never_started] == [True]


def test_a_plan_naming_a_range_holds_each_item_of_the_range(job, memory_instance, monkeypatch):
    """Told to (DAGSTER_EMIT_PARTITION_SUBSET_IN_PLANNED_EVENTS), Dagster logs one plan for a whole range, with no
    partition; by default it logs one plan per partition, which the other tests cover."""
    instance = memory_instance
    names = [f"run=2026-03-08-0{h}-00-00" for h in range(4)]
    instance.add_dynamic_partitions("enriched_runs", names)
    monkeypatch.setenv("DAGSTER_EMIT_PARTITION_SUBSET_IN_PLANNED_EVENTS", "true")
    run = instance.create_run_for_job(
        job,
        tags={ASSET_PARTITION_RANGE_START_TAG: names[1], ASSET_PARTITION_RANGE_END_TAG: names[2]},
        status=dg.DagsterRunStatus.NOT_STARTED,
    )
    [plan] = instance.get_records_for_run(
        run.run_id, of_type=dg.DagsterEventType.ASSET_MATERIALIZATION_PLANNED
    ).records[:1]
    assert plan.event_log_entry.dagster_event.event_specific_data.partition is None, "one plan for the range"

    manifest = ProcessingManifest(instance)
    assert {n: i.state for n, i in manifest.items(RUN_FOLDERS).items()} == {
        names[0]: State.NEW,
        names[1]: State.PROCESSING,
        names[2]: State.PROCESSING,
        names[3]: State.NEW,
    }
    assert manifest.item(RUN_FOLDERS, names[2]).open_runs == (run.run_id,)
    start(instance, run)
    for name in names[1:3]:
        report(
            instance,
            run,
            DagsterEventType.ASSET_MATERIALIZATION,
            step_key="shred",
            event_specific_data=StepMaterializationData(dg.AssetMaterialization("shredded_types", partition=name)),
        )
    report(instance, run, DagsterEventType.RUN_SUCCESS)
    done = manifest.items(RUN_FOLDERS, names[1:3])
    assert all((i.state, i.valid) == (State.PROCESSED, True) for i in done.values()), done


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
