"""How fast the processing manifest reads a big Dagster instance: the full listing, and one item at a time.

    /tmp/venv/bin/python benchmarks/processing_manifest.py [--items 1000 100000] [--lookups 200] [--rebuild]

For each size it builds (once; cached under benchmarks/work/) a real SQLite Dagster instance, configured as
the project's dagster.yaml configures it (`storage: sqlite`, the run-sharded event log), holding that many
enriched run folders with their runs and events:

    90% Processed (one successful run)          3% Failed (one failed run, with its step failure)
     2% Failed, then Resolved, then Processed    1% Skipped by an operator
     1% Processing (a run queued or started)     3% New (registered, never run)

Each run has what Dagster writes for a shred run where the manifest reads: a materialisation plan and a
materialisation for each of enriched_batch, atomic_events, shredded_types and event_manifest (with the
metadata the shred assets record), and its start and end events, all in the event log's index shard;
and its row and tags in the run storage. Rows are inserted in bulk through the storages' own connections,
from events serialised by Dagster's own code. What the benchmark leaves out is each run's own SQLite file
of step logs: the manifest never reads those, and 100,000 of them would be 100,000 files.

It then times, on the instance as a user would open it (results in benchmarks/results/processing_manifest.json,
with the machine's load average before and after):
- the states of every item, as `process` reads them (`read_manifest(payloads=False)`);
- the full listing (`read_manifest`: every item, state and record), and rendering it as `manifest --json`
  (which decodes every payload);
- one item's state (`ProcessingManifest.item`) for randomly chosen items;
- the lock check of a sensor tick for 100 items (`startable_runs`).
and checks that the listing found the states it was built with. Comparing the sizes shows what grows with
the number of items and what does not.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import statistics
import sys
import time
import uuid
from collections import Counter
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import dagster as dg
from dagster._core.events import (
    AssetMaterializationPlannedData,
    AssetObservationData,
    DagsterEvent,
    DagsterEventType,
    JobFailureData,
    RunFailureReason,
    StepFailureData,
    StepMaterializationData,
)
from dagster._core.events.log import EventLogEntry
from dagster._core.storage.event_log.schema import SqlEventLogStorageTable
from dagster._core.storage.runs.schema import RunsTable, RunTagsTable
from dagster._utils.error import SerializableErrorInfo

from snowplow_assets.defs.manifests.manifest_locks import startable_runs
from snowplow_assets.defs.manifests.processing_manifest import RUN_FOLDERS, ProcessingManifest, read_manifest
from snowplow_assets.processing import State

WORK = Path(__file__).resolve().parent / "work"
RESULTS = Path(__file__).resolve().parent / "results"
JOB = "shred_enriched_run"
ASSETS = ["enriched_batch", "atomic_events", "shredded_types", "event_manifest"]
T0 = datetime(2026, 1, 1, tzinfo=timezone.utc).timestamp()
BATCH = 2000  # runs per insert transaction

ENTITY_TYPES = dg.MetadataValue.table(
    records=[
        dg.TableRecord({"schema": f"iglu:com.acme/entity_{i}/jsonschema/1-0-0", "kind": "CONTEXT", "count": 1000 + i})
        for i in range(6)
    ],
    schema=dg.TableSchema(
        columns=[dg.TableColumn("schema", "string"), dg.TableColumn("kind", "string"), dg.TableColumn("count", "int")]
    ),
)
COUNTS = {
    "lines_read": 120000,
    "good": 118500,
    "bad": 300,
    "natural_duplicates_removed": 1100,
    "synthetic_duplicates_renamed": 100,
    "cross_batch_duplicates_removed": 40,
    "cross_batch_synthetic_duplicates_renamed": 2,
    "event_manifest_runtime_errors": 0,
    "input_files": 8,
}


def plan_items(count: int) -> list[tuple[str, str]]:
    """(run folder name, scenario) for `count` items, in the proportions of the module docstring."""
    scenarios = ["processed"] * 90 + ["failed"] * 3 + ["resolved"] * 2 + ["skipped"] + ["processing"] + ["new"] * 3
    items = []
    for i in range(count):
        minute = int(T0 // 60) + i
        name = datetime.fromtimestamp(minute * 60, timezone.utc).strftime("run=%Y-%m-%d-%H-%M-%S")
        items.append((name, scenarios[i % len(scenarios)]))
    return items


EXPECTED = {
    "processed": State.PROCESSED,
    "failed": State.FAILED,
    "resolved": State.PROCESSED,
    "skipped": State.SKIPPED,
    "processing": State.PROCESSING,
    "new": State.NEW,
}


class Writer:
    """Rows for the run storage and the event log's index shard, as Dagster would write them."""

    def __init__(self, instance: dg.DagsterInstance) -> None:
        self.instance = instance
        self.events: list[dict[str, Any]] = []
        self.runs: list[dict[str, Any]] = []
        self.tags: list[dict[str, Any]] = []

    def event(self, run_id: str, at: float, dagster_event: DagsterEvent) -> None:
        entry = EventLogEntry(
            error_info=None,
            level=10,
            user_message="",
            run_id=run_id,
            timestamp=at,
            step_key=dagster_event.step_key,
            job_name=dagster_event.job_name,
            dagster_event=dagster_event,
        )
        self.events.append(self.instance.event_log_storage._event_to_row(entry))  # type: ignore[attr-defined]

    def run(
        self, name: str, status: dg.DagsterRunStatus, created: float, started: float | None, ended: float | None
    ) -> str:
        run = dg.DagsterRun(job_name=JOB, run_id=str(uuid.uuid4()), tags={"dagster/partition": name}, status=status)
        values = self.instance.run_storage._get_run_insertion_values(  # type: ignore[attr-defined]
            run, datetime.fromtimestamp(created, timezone.utc)
        )
        values.update(
            start_time=started,
            end_time=ended,
            update_timestamp=datetime.fromtimestamp(ended or started or created, timezone.utc),
        )
        self.runs.append(values)
        self.tags.extend({"run_id": run.run_id, "key": k, "value": v} for k, v in run.tags_for_storage().items())
        for asset in ASSETS:
            planned = AssetMaterializationPlannedData(dg.AssetKey(asset), partition=name)
            self.event(
                run.run_id, created, DagsterEvent.build_asset_materialization_planned_event(JOB, "shred", planned)
            )
        if started is not None:
            self.event(run.run_id, started, DagsterEvent(DagsterEventType.RUN_START.value, job_name=JOB))
        return run.run_id

    def succeed(self, run_id: str, name: str, at: float) -> None:
        for asset in ASSETS:
            metadata: dict[str, Any] = {**COUNTS, "path": dg.MetadataValue.path(f"/lake/shredded/good/{name}/{asset}")}
            if asset == "shredded_types":
                metadata["entity_types"] = ENTITY_TYPES
            materialization = dg.AssetMaterialization(asset, partition=name, metadata=metadata)
            event = DagsterEvent(
                DagsterEventType.ASSET_MATERIALIZATION.value,
                job_name=JOB,
                step_key="shred",
                event_specific_data=StepMaterializationData(materialization),
            )
            self.event(run_id, at - 1, event)
        self.event(run_id, at, DagsterEvent(DagsterEventType.RUN_SUCCESS.value, job_name=JOB))

    def fail(self, run_id: str, at: float) -> None:
        error = SerializableErrorInfo("ValueError: the run folder holds a truncated gzip file\n", [], "ValueError")
        step = DagsterEvent(
            DagsterEventType.STEP_FAILURE.value,
            job_name=JOB,
            step_key="shred",
            event_specific_data=StepFailureData(error=error, user_failure_data=None),
        )
        data = JobFailureData(error=None, failure_reason=RunFailureReason.STEP_FAILURE, first_step_failure_event=step)
        self.event(run_id, at, DagsterEvent(DagsterEventType.RUN_FAILURE.value, job_name=JOB, event_specific_data=data))

    def observe(self, name: str, at: float, metadata: dict[str, str]) -> None:
        observation = dg.AssetObservation("enriched_batch", partition=name, metadata=metadata)
        self.event(
            "",
            at,
            DagsterEvent(
                DagsterEventType.ASSET_OBSERVATION.value,
                job_name="",
                event_specific_data=AssetObservationData(observation),
            ),
        )

    def flush(self) -> None:
        if self.runs:
            with self.instance.run_storage.connect() as conn:  # type: ignore[attr-defined]
                conn.execute(RunsTable.insert(), self.runs)
                conn.execute(RunTagsTable.insert(), self.tags)
        if self.events:
            with self.instance.event_log_storage.index_transaction() as conn:  # type: ignore[attr-defined]
                conn.execute(SqlEventLogStorageTable.insert(), self.events)
        self.events, self.runs, self.tags = [], [], []


def build(home: Path, count: int) -> None:
    """A DAGSTER_HOME holding `count` run folders and their history."""
    if home.exists():
        shutil.rmtree(home)
    home.mkdir(parents=True)
    (home / "dagster.yaml").write_text(
        f"storage:\n  sqlite:\n    base_dir: {home / 'storage'}\ntelemetry:\n  enabled: false\n"
    )
    items = plan_items(count)
    with dg.DagsterInstance.from_config(str(home)) as instance:
        instance.add_dynamic_partitions(RUN_FOLDERS.partitions_def, [name for name, _ in items])
        writer = Writer(instance)
        # Observation ids must follow the events they refer to: resolutions are written after all runs.
        resolutions: list[tuple[str, str, float]] = []
        for i, (name, scenario) in enumerate(items):
            at = T0 + i * 60 + 300
            if scenario in ("processed", "resolved"):
                if scenario == "resolved":
                    failed = writer.run(name, dg.DagsterRunStatus.FAILURE, at, at + 5, at + 20)
                    writer.fail(failed, at + 20)
                    resolutions.append((name, failed, at + 3000))
                    at += 4000
                run_id = writer.run(name, dg.DagsterRunStatus.SUCCESS, at, at + 5, at + 65)
                writer.succeed(run_id, name, at + 65)
            elif scenario == "failed":
                run_id = writer.run(name, dg.DagsterRunStatus.FAILURE, at, at + 5, at + 20)
                writer.fail(run_id, at + 20)
            elif scenario == "processing":
                writer.run(name, dg.DagsterRunStatus.STARTED, at, at + 5, None)
            elif scenario == "skipped":
                writer.observe(name, at, {"manifest_action": "skip", "reason": "test data", "by": "benchmark"})
            if len(writer.runs) >= BATCH:
                writer.flush()
        writer.flush()
        for name, failed, at in resolutions:
            previous = f"run:{failed}:failed"
            writer.observe(
                name, at, {"manifest_action": "resolve", "reason": "re-sent", "by": "benchmark", "resolves": previous}
            )
        writer.flush()
    (home / "built").write_text(str(count))


def timed(fn: Any) -> tuple[float, Any]:
    started = time.perf_counter()
    result = fn()
    return time.perf_counter() - started, result


def best_of(times: int, fn: Any) -> tuple[float, Any]:
    """The fastest of a few runs: the first one also pays for reading the database files into the page cache,
    and other processes on the machine slow some runs down."""
    runs = [timed(fn) for _ in range(times)]
    return min(seconds for seconds, _ in runs), runs[-1][1]


def measure(home: Path, count: int, lookups: int) -> dict[str, Any]:
    names = [name for name, _ in plan_items(count)]
    with dg.DagsterInstance.from_config(str(home)) as instance:
        states, _ = best_of(3, lambda: read_manifest(instance, payloads=False))  # what `process` reads
        listing, items = best_of(3, lambda: read_manifest(instance))
        # What `manifest --json` adds: decoding every payload and writing the document.
        rendering, text = timed(lambda: json.dumps([i.as_dict() for i in items], default=str))
        built = {name: EXPECTED[scenario] for name, scenario in plan_items(count)}
        found = {i.id.removeprefix("enriched/"): i.state for i in items}
        if found != built or not all(i.valid for i in items):
            raise SystemExit(
                f"the listing does not match what was built: {Counter(found.values())} vs {Counter(built.values())}"
            )
        manifest = ProcessingManifest(instance)
        sample = random.Random(7).sample(names, min(lookups, count))
        singles = []
        for name in sample:
            seconds, item = timed(lambda name=name: manifest.item(RUN_FOLDERS, name))
            assert item.state is built[name]
            singles.append(seconds)
        chunk = sample[:100]
        tick, _ = timed(lambda: startable_runs(instance, RUN_FOLDERS, chunk))
    return {
        "items": count,
        "records": sum(len(i.records) for i in items),
        "states": dict(Counter(i.state.value for i in items)),
        "states_s": round(states, 2),
        "listing_s": round(listing, 2),
        "json_s": round(rendering, 2),
        "json_mb": round(len(text) / 1e6, 1),
        "item_median_ms": round(statistics.median(singles) * 1000, 1),
        "item_p95_ms": round(sorted(singles)[int(len(singles) * 0.95) - 1] * 1000, 1),
        "sensor_check_100_ms": round(tick * 1000, 1),
    }


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--items", type=int, nargs="+", default=[1000, 100000])
    parser.add_argument("--lookups", type=int, default=200)
    parser.add_argument("--rebuild", action="store_true", help="Build the instances again even if cached.")
    args = parser.parse_args(argv)
    results = []
    for count in args.items:
        home = WORK / f"processing_manifest_{count}"
        if args.rebuild or not (home / "built").exists():
            seconds, _ = timed(lambda home=home, count=count: build(home, count))
            print(f"built {count} items in {seconds:.0f} s", flush=True)
        # Other work on the machine slows every figure down: the load is part of the result.
        load_before = [round(x, 1) for x in os.getloadavg()]
        measured = measure(home, count, args.lookups)
        measured["load_average"] = {
            "before": load_before,
            "after": [round(x, 1) for x in os.getloadavg()],
            "cores": os.cpu_count(),
        }
        print(json.dumps(measured), flush=True)
        results.append(measured)
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "processing_manifest.json").write_text(json.dumps(results, indent=2) + "\n")


if __name__ == "__main__":
    main(sys.argv[1:])
