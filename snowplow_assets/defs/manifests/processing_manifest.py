"""The processing manifest, read from Dagster's own storage: every item of the lake, its records and its state.

Snowplow keeps its processing manifest in a table of its own (seed 001, FORMATS.md §6). Here there is no
second table: each record is something Dagster already stores (read by `dagster_storage.py`), and
snowplow_assets/processing/records.py derives the state from the records. Operator actions are in
`operator_actions.py`, the lock check of sensors and `snowplow-assets process` in `manifest_locks.py`.

| record | where Dagster keeps it |
|---|---|
| New | the item's dynamic partition (`enriched_runs`, `cdc_landings`); time = when it was added |
| Processing | a run that planned a materialisation of the item's *processing asset* partition (Dagster logs the plan when it creates the run, queued or not, for a single partition or for each partition of a range); time = the run's start, or its creation while it has not started |
| Processed | that run ended in SUCCESS; payload = the metadata of its materialisation of the processing asset for the item (counts, entity types, paths) |
| Failed | that run ended in FAILURE or CANCELED, or succeeded without materialising the item; payload = the failing step and error from the run's failure event, Dagster's failure reason and the metadata of a `dg.Failure` the step raised; for a run ended from outside, the message that ended it |
| Skipped, Resolved | an `AssetObservation` of the item's *operator asset* partition with `manifest_action` = `skip` / `resolve` (from `snowplow-assets manifest skip|resolve`), visible in the UI |

Processing assets: `shredded_types` for run folders (the shred step; a run that only records
`enriched_batch` does not process the item) and `cdc_history` for CDC landings. Operator assets:
`enriched_batch` and `cdc_history`. Item ids are lake paths: `enriched/run=…`, `cdc/landing/<folder>`.

**Runs over a range of partitions** (a single-run backfill from the UI) hold every item of the range: one
run, one Processing record per item, closed per item by the run's outcome. Such a run succeeds or fails
as a whole, as Dagster itself sees it, so all its items end Processed, or all Failed with the run's
reason. A record of a run shows the job as its application, or the processing asset for runs of Dagster's
implicit asset job (materialisations and backfills launched from the asset graph), and carries the id
of the backfill that launched the run.
"""

import gc
import re
from collections import defaultdict
from collections.abc import Collection, Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import dagster as dg
from dagster._core.remote_representation.code_location import is_implicit_asset_job_name

from snowplow_assets.defs.manifests.dagster_storage import DagsterStorage, StoredOutput, StoredRun, epoch
from snowplow_assets.defs.partitions import cdc_landings, enriched_runs
from snowplow_assets.lake import CDC_LANDING_FOLDER, RUN_FOLDER
from snowplow_assets.processing import NEVER_STARTED, Item, Record, State, derive_item

# How operator records are written as observations (operator_actions.py) and read back here.
MANIFEST_ACTION = "manifest_action"
RESOLVES = "resolves"  # the id of the record a `resolve` clears
ACTIONS = {"skip": State.SKIPPED, "resolve": State.RESOLVED}
OPERATOR = "operator"

_SUCCESS, _FAILURE, _CANCELED = "SUCCESS", "FAILURE", "CANCELED"


@dataclass(frozen=True)
class ItemKind:
    prefix: str  # the lake folder of the items, as item ids show it
    partitions_def: str
    pattern: re.Pattern[str]
    processing_asset: dg.AssetKey
    operator_asset: dg.AssetKey

    def item_id(self, name: str) -> str:
        return f"{self.prefix}/{name}"


RUN_FOLDERS = ItemKind(
    "enriched", enriched_runs.name, RUN_FOLDER, dg.AssetKey("shredded_types"), dg.AssetKey("enriched_batch")
)
CDC_LANDINGS = ItemKind(
    "cdc/landing", cdc_landings.name, CDC_LANDING_FOLDER, dg.AssetKey("cdc_history"), dg.AssetKey("cdc_history")
)
KINDS = (RUN_FOLDERS, CDC_LANDINGS)


def parse_item(text: str) -> tuple[ItemKind, str]:
    """`enriched/run=…` (or just `run=…`) or `cdc/landing/<folder>`, checked against its kind's name rule."""
    for kind in KINDS:
        if text.startswith(kind.prefix + "/"):
            name = text[len(kind.prefix) + 1 :]
            break
    else:
        kind, name = RUN_FOLDERS, text
        if not RUN_FOLDER.fullmatch(text):
            raise ValueError(
                f"not an item: {text!r}; expected enriched/run=YYYY-MM-DD-hh-mm-ss or cdc/landing/<folder>"
            )
    if not kind.pattern.fullmatch(name):
        raise ValueError(f"not a {kind.prefix} item name: {name!r} in {text!r}")
    return kind, name


@dataclass(frozen=True)
class _Found:
    """What one read of the storage found for a kind of item, keyed by partition (item name)."""

    registered: dict[str, float | None]  # → registration time
    planned: dict[str, set[str]]  # → ids of the runs that planned the processing asset
    materialised: dict[tuple[str, str], StoredOutput]  # (partition, run id) → the processing asset's materialisation
    observed: dict[str, list[Record]]  # → operator records
    runs: dict[str, StoredRun]
    failures: dict[str, dict[str, Any]]  # run id → why it failed


@contextmanager
def _bulk() -> Iterator[None]:
    """Without the cyclic garbage collector: a listing allocates millions of objects that all stay alive,
    and each full collection would walk every one of them again."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


class ProcessingManifest:
    """Reads items and records from an instance. `items(kind)` lists all; `items(kind, names)` only those."""

    def __init__(self, instance: dg.DagsterInstance) -> None:
        self._storage = DagsterStorage(instance)

    def item(self, kind: ItemKind, name: str, payloads: bool = True) -> Item:
        return self.items(kind, [name], payloads=payloads)[name]

    def items(
        self,
        kind: ItemKind,
        names: Collection[str] | None = None,
        discovered: Mapping[str, str] | None = None,
        payloads: bool = True,
    ) -> dict[str, Item]:
        """Items of `kind` by name: every registered item and every partition with records (names None), or
        just `names` (each of them, even with no record). `discovered` maps names that are about to be
        registered to the application registering them, so they count as New. Without `payloads`, Processed
        records carry only their asset: enough for states, without reading a materialisation event."""
        with _bulk():
            with self._storage.connected():
                found = self._read(kind, names, payloads)
            return self._assemble(kind, names, discovered or {}, found)

    def unclaimed(self, kind: ItemKind) -> list[str]:
        """Registered items, sorted by name, that no run has taken up since they were registered or since an
        operator last acted on them: New ones that were never processed (or whose every run was deleted),
        Resolved ones still waiting for their run, and Skipped ones. Every registered item that may start is
        among them; `items` says which of them may. One query, which reads no item's records."""
        with self._storage.connected():
            return self._storage.unclaimed(kind.partitions_def, kind.processing_asset, kind.operator_asset)

    def _read(self, kind: ItemKind, names: Collection[str] | None, payloads: bool) -> _Found:
        storage = self._storage
        planned = storage.planned(kind.processing_asset, names)
        materialised = storage.materializations(kind.processing_asset, names, payloads)
        run_ids = {r for runs in planned.values() for r in runs} | {r for (_, r) in materialised if r}
        runs = storage.runs(None if names is None else run_ids)
        failed = [r for r in run_ids if r in runs and runs[r].status in (_FAILURE, _CANCELED)]
        failures = storage.failures(None if names is None else failed) if failed else {}
        registered = storage.registrations(kind.partitions_def, names)
        return _Found(registered, planned, materialised, self._operator_records(kind, names), runs, failures)

    def _operator_records(self, kind: ItemKind, names: Collection[str] | None) -> dict[str, list[Record]]:
        found: dict[str, list[Record]] = defaultdict(list)
        for observation in self._storage.observations(kind.operator_asset, names):
            metadata = observation.metadata
            state = ACTIONS.get(metadata.get(MANIFEST_ACTION))  # other observations of the asset are not records
            if state is None:
                continue
            payload = {k: v for k, v in metadata.items() if k not in (MANIFEST_ACTION, RESOLVES)}
            previous = metadata.get(RESOLVES) if state is State.RESOLVED else None
            found[observation.partition].append(
                Record(
                    f"observation:{observation.storage_id}",
                    kind.item_id(observation.partition),
                    OPERATOR,
                    None,
                    epoch(observation.stored_at),
                    state,
                    payload,
                    previous,
                )
            )
        return found

    def _assemble(
        self, kind: ItemKind, names: Collection[str] | None, discovered: Mapping[str, str], found: _Found
    ) -> dict[str, Item]:
        if names is not None:
            wanted = set(names)
        else:
            wanted = {*found.registered, *found.planned, *found.observed, *(name for name, _ in found.materialised)}
        records: dict[str, list[Record]] = {name: [] for name in wanted}
        for name in wanted:
            if name in found.registered:
                records[name].append(
                    Record(
                        "registered",
                        kind.item_id(name),
                        kind.partitions_def,
                        None,
                        found.registered[name],
                        State.NEW,
                        {},
                    )
                )
            elif name in discovered:
                records[name].append(
                    Record(
                        "registered", kind.item_id(name), discovered[name], None, None, State.NEW, {"discovered": True}
                    )
                )
        for name, run_ids in found.planned.items():
            for run_id in run_ids:
                if run_id in found.runs:  # a deleted run takes its events along; a leftover plan is half a deletion
                    records[name].extend(
                        self._run_records(kind, name, found.runs[run_id], found.materialised, found.failures)
                    )
        for (name, run_id), output in found.materialised.items():
            if run_id not in found.planned.get(name, ()):
                # Reported outside a run (or by a run that did not plan it): it closes no Processing record.
                run = found.runs.get(run_id)
                application = _application(kind, run.job) if run else "reported"
                records[name].append(
                    Record(
                        f"materialization:{output.storage_id}",
                        kind.item_id(name),
                        application,
                        run_id or None,
                        epoch(output.stored_at),
                        State.PROCESSED,
                        output.payload(_head(kind, run)),
                    )
                )
        for name, observations in found.observed.items():
            records[name].extend(observations)
        return {name: derive_item(kind.item_id(name), recs) for name, recs in records.items()}

    def _run_records(
        self,
        kind: ItemKind,
        name: str,
        run: StoredRun,
        materialised: Mapping[tuple[str, str], StoredOutput],
        failures: Mapping[str, dict[str, Any]],
    ) -> list[Record]:
        item_id = kind.item_id(name)
        application = _application(kind, run.job)
        opened = f"run:{run.run_id}:processing"
        start = run.started if run.started is not None else epoch(run.created)
        head = _head(kind, run)
        ended = run.status in (_SUCCESS, _FAILURE, _CANCELED)
        # A run that ended without starting (cancelled in the queue) processed nothing (records.py, contradiction 4).
        never_started = {NEVER_STARTED: True} if ended and run.started is None else {}
        records = [
            Record(
                opened,
                item_id,
                application,
                run.run_id,
                start,
                State.PROCESSING,
                {**head, "status": run.status, **never_started},
            )
        ]
        if not ended:
            return records
        end = run.ended if run.ended is not None else epoch(run.updated)
        output = materialised.get((name, run.run_id))
        if run.status == _SUCCESS and output is not None:
            payload = output.payload(head)
            records.append(
                Record(
                    f"run:{run.run_id}:processed",
                    item_id,
                    application,
                    run.run_id,
                    end,
                    State.PROCESSED,
                    payload,
                    opened,
                )
            )
            return records
        if run.status == _SUCCESS:
            reason = {"error": f"the run succeeded without materialising {head['asset']} for {name}"}
        else:
            reason = failures.get(run.run_id, {})
        payload = {**head, "status": run.status, **reason}
        records.append(
            Record(f"run:{run.run_id}:failed", item_id, application, run.run_id, end, State.FAILED, payload, opened)
        )
        return records


def _application(kind: ItemKind, job: str) -> str:
    """A run's job, or for Dagster's implicit asset job (runs launched from the asset graph) the asset."""
    return kind.processing_asset.to_user_string() if is_implicit_asset_job_name(job) else job


def _head(kind: ItemKind, run: StoredRun | None) -> dict[str, Any]:
    """What every record of a run carries first: the processing asset, and the backfill that launched the run."""
    head: dict[str, Any] = {"asset": kind.processing_asset.to_user_string()}
    if run is not None and run.backfill:
        head["backfill"] = run.backfill
    return head


def read_manifest(instance: dg.DagsterInstance, kinds: Iterable[ItemKind] = KINDS, payloads: bool = True) -> list[Item]:
    """Every item of every kind, sorted by item id."""
    manifest = ProcessingManifest(instance)
    items = [item for kind in kinds for item in manifest.items(kind, payloads=payloads).values()]
    return sorted(items, key=lambda i: i.id)
