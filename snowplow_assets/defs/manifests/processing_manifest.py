"""The processing manifest, read from Dagster's own storage: every item of the lake, its records and its state.

Snowplow keeps its processing manifest in a table of its own (seed 001, FORMATS.md §6). Here there is no
second table: each record is something Dagster already stores, and snowplow_assets/processing/records.py
derives the state from the records. This module is Dagster glue (it reads Dagster's storage, so it cannot
live in a domain package): where the records come from, operator actions, and the one lock check that
sensors and `snowplow-assets process` share (`startable_runs`, `item`).

| record | where Dagster keeps it |
|---|---|
| New | the item's dynamic partition (`enriched_runs`, `cdc_landings`); time = when it was added |
| Processing | a run that planned a materialisation of the item's *processing asset* partition (Dagster logs the plan when it creates the run, queued or not); time = the run's start, or its creation while it has not started |
| Processed | that run ended in SUCCESS; payload = the metadata of its materialisation of the processing asset for the item (counts, entity types, paths) |
| Failed | that run ended in FAILURE or CANCELED, or succeeded without materialising the item; payload = the failing step and error from the run's failure event, and Dagster's failure reason |
| Skipped, Resolved | an `AssetObservation` of the item's *operator asset* partition with `manifest_action` = `skip` / `resolve` (from `snowplow-assets manifest skip|resolve`), visible in the UI |

Processing assets: `shredded_types` for run folders (the shred step; a run that only records
`enriched_batch` does not process the item) and `cdc_history` for CDC landings. Operator assets:
`enriched_batch` and `cdc_history`. Item ids are lake paths: `enriched/run=…`, `cdc/landing/<folder>`.

**How it reads, and why so.** Records are selected straight from the SQL tables behind Dagster's storages
(`runs`; `event_logs` and `dynamic_partitions` through the event log's index connection, which for the
run-sharded SQLite storage is the index shard, where Dagster mirrors asset and run-status events),
taking only the columns needed and decoding event JSON only for payloads. Going through Dagster's
Python API deserialises every run and event (0.1–0.5 ms each): about a minute for 100,000 items. One
item's records come from queries filtered on that item (event_logs by asset key, type and partition;
runs by run id; dynamic partitions by name, all indexed); the full listing makes a fixed number of
queries per kind of item, whatever their number. The price is a dependency on Dagster's storage schema
(versioned and migrated by Dagster, the same for its SQLite, Postgres and MySQL storages) and on its
serialisation of events; the tests compare what is read here with Dagster's API on real runs.
"""

import gc
import getpass
import json
import re
from collections import defaultdict
from collections.abc import Collection, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import dagster as dg
import sqlalchemy as db
from dagster._core.storage.event_log.schema import DynamicPartitionsTable, SqlEventLogStorageTable
from dagster._core.storage.event_log.sql_event_log import SqlEventLogStorage
from dagster._core.storage.runs.schema import RunsTable
from dagster._core.storage.runs.sql_run_storage import SqlRunStorage
from dagster._core.storage.sqlalchemy_compat import db_select

from snowplow_assets.defs.partitions import cdc_landings, enriched_runs
from snowplow_assets.lake import CDC_LANDING_FOLDER, RUN_FOLDER
from snowplow_assets.processing import Item, Record, State, derive_item

MANIFEST_ACTION = "manifest_action"
ACTIONS = {"skip": State.SKIPPED, "resolve": State.RESOLVED}
OPERATOR = "operator"
MAX_REASON = 2000
_IN_CHUNK = 500  # values per SQL IN (...): well under SQLite's bound-parameter limit

_PLANNED = dg.DagsterEventType.ASSET_MATERIALIZATION_PLANNED.value
_MATERIALIZATION = dg.DagsterEventType.ASSET_MATERIALIZATION.value
_OBSERVATION = dg.DagsterEventType.ASSET_OBSERVATION.value
_RUN_FAILURE = dg.DagsterEventType.RUN_FAILURE.value
_RUN_CANCELED = dg.DagsterEventType.RUN_CANCELED.value
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


RUN_FOLDERS = ItemKind("enriched", enriched_runs.name, RUN_FOLDER, dg.AssetKey("shredded_types"), dg.AssetKey("enriched_batch"))
CDC_LANDINGS = ItemKind("cdc/landing", cdc_landings.name, CDC_LANDING_FOLDER, dg.AssetKey("cdc_history"), dg.AssetKey("cdc_history"))
KINDS = (RUN_FOLDERS, CDC_LANDINGS)


def parse_item(text: str) -> tuple[ItemKind, str]:
    """`enriched/run=…` (or just `run=…`) or `cdc/landing/<folder>`, checked against its kind's name rule."""
    for kind in KINDS:
        if text.startswith(kind.prefix + "/"):
            name = text[len(kind.prefix) + 1 :]
            break
    else:
        kind, name = RUN_FOLDERS, text
        if not RUN_FOLDER.match(text):
            raise ValueError(f"not an item: {text!r}; expected enriched/run=YYYY-MM-DD-hh-mm-ss or cdc/landing/<folder>")
    if not kind.pattern.match(name):
        raise ValueError(f"not a {kind.prefix} item name: {name!r} in {text!r}")
    return kind, name


# --- reading -----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Run:
    run_id: str
    job: str
    status: str
    created: Any  # as stored; converted by _epoch only when used (a listing would convert 100,000s)
    started: float | None
    ended: float | None
    updated: Any


class _Storage:
    """The SQL behind the instance's run storage and event log, one connection to each per read."""

    def __init__(self, instance: dg.DagsterInstance) -> None:
        events, runs = instance.event_log_storage, instance.run_storage
        if not isinstance(events, SqlEventLogStorage) or not isinstance(runs, SqlRunStorage):
            raise TypeError(
                "the processing manifest reads Dagster's SQL storage (SQLite, Postgres, MySQL); this instance "
                f"uses {type(events).__name__} and {type(runs).__name__}"
            )
        self._events, self._runs = events, runs
        self._open: tuple[Any, Any] | None = None

    @contextmanager
    def connected(self) -> Iterator[None]:
        # Opening a SQLite connection costs a few milliseconds: more than an indexed query.
        with self._events.index_connection() as events, self._runs.connect() as runs:
            self._open = (events, runs)
            try:
                yield
            finally:
                self._open = None

    def events(self, query: Any) -> Sequence[Any]:
        assert self._open is not None, "query inside connected()"
        return self._open[0].execute(query).fetchall()

    def runs(self, query: Any) -> Sequence[Any]:
        assert self._open is not None, "query inside connected()"
        return self._open[1].execute(query).fetchall()


def _filtered(query: Any, column: Any, values: Collection[str] | None) -> Iterator[Any]:
    """The query as is (values None), or once per chunk of values with `column IN (chunk)`."""
    if values is None:
        yield query
        return
    ordered = sorted(values)
    for start in range(0, len(ordered), _IN_CHUNK):
        yield query.where(column.in_(ordered[start : start + _IN_CHUNK]))


_EPOCH = datetime(1970, 1, 1)


def _epoch(value: Any) -> float | None:
    if value is None:
        return None
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, str):
        value = datetime.fromisoformat(value)
    if value.tzinfo is None:  # Dagster stores naive UTC datetimes
        return (value - _EPOCH).total_seconds()
    return value.timestamp()


def _plain(value: Any) -> Any:
    """A value of Dagster's serialised JSON as plain JSON: a serialised object with one field is that field
    (IntMetadataValue → its int, TextMetadataValue → its text), a table is its records, enums their names."""
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if not isinstance(value, dict):
        return value
    if "__enum__" in value:
        return value["__enum__"].rsplit(".", 1)[-1]
    fields = {k: _plain(v) for k, v in value.items() if k != "__class__"}
    if "__class__" not in value:
        return fields
    if "records" in fields and "schema" in fields:
        return fields["records"]
    if not fields:
        return None
    if len(fields) == 1:
        return next(iter(fields.values()))
    return fields


def _metadata(event_json: str, body_field: str) -> dict[str, Any]:
    """The metadata of a materialisation (`materialization`) or observation (`asset_observation`) event."""
    body = json.loads(event_json)["dagster_event"]["event_specific_data"][body_field]
    if "metadata_entries" in body:
        return {e["label"]: _plain(e["entry_data"]) for e in body["metadata_entries"]}
    return {label: _plain(v) for label, v in (body.get("metadata") or {}).items()}


def _error_text(error: Mapping[str, Any]) -> str:
    # The innermost cause is the error the code raised; Dagster wraps it in its own execution errors.
    while error.get("cause"):
        error = error["cause"]
    return str(error.get("message", "")).strip()


def _failure(event_json: str) -> dict[str, Any]:
    data = json.loads(event_json)["dagster_event"]["event_specific_data"]
    payload: dict[str, Any] = {}
    if data.get("failure_reason"):
        payload["failure_reason"] = _plain(data["failure_reason"])
    error = data.get("error")
    step_event = data.get("first_step_failure_event")
    if step_event:
        payload["step"] = step_event.get("step_key")
        error = (step_event.get("event_specific_data") or {}).get("error") or error
    if error:
        payload["error"] = _error_text(error)
    return payload


@dataclass(frozen=True)
class _Output:
    storage_id: int
    stored_at: Any  # the event's timestamp column, as stored
    event: str | None  # the materialisation event as stored; None when payloads were not asked for

    def payload(self, asset: dg.AssetKey) -> Mapping[str, Any]:
        head = {"asset": asset.to_user_string()}
        return head if self.event is None else _MaterializationPayload(head, self.event)


class _MaterializationPayload(Mapping[str, Any]):
    """A Processed record's payload: the materialisation's metadata, decoded from its event when first read.

    Reading the states of 100,000 items needs none of it; decoding 100,000 events of a few kB each costs
    more than every query of the listing together, so only what is shown is decoded."""

    __slots__ = ("_decoded", "_event", "_head")

    def __init__(self, head: dict[str, Any], event: str) -> None:
        self._head, self._event = head, event
        self._decoded: dict[str, Any] | None = None

    def _data(self) -> dict[str, Any]:
        if self._decoded is None:
            self._decoded = {**self._head, **_metadata(self._event, "materialization")}
        return self._decoded

    def __getitem__(self, key: str) -> Any:
        return self._data()[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._data())

    def __len__(self) -> int:
        return len(self._data())

    def __repr__(self) -> str:
        return repr(self._data())


@dataclass(frozen=True)
class _Found:
    """What one read of the storage found for a kind of item, keyed by partition (item name)."""

    registered: dict[str, float | None]  # → registration time
    planned: dict[str, set[str]]  # → ids of the runs that planned the processing asset
    materialised: dict[tuple[str, str], _Output]  # (partition, run id) → the processing asset's materialisation
    observed: dict[str, list[Record]]  # → operator records
    runs: dict[str, _Run]
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
        self.instance = instance
        self._storage = _Storage(instance)

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

    def _read(self, kind: ItemKind, names: Collection[str] | None, payloads: bool) -> _Found:
        planned = self._planned(kind, names)
        materialised = self._materializations(kind, names, payloads)
        run_ids = {r for runs in planned.values() for r in runs} | {r for (_, r) in materialised if r}
        runs = self._run_rows(None if names is None else run_ids)
        failed = [r for r in run_ids if r in runs and runs[r].status in (_FAILURE, _CANCELED)]
        failures = self._failures(None if names is None else failed) if failed else {}
        return _Found(self._registrations(kind, names), planned, materialised, self._observations(kind, names), runs, failures)

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
                    Record("registered", kind.item_id(name), kind.partitions_def, None, found.registered[name], State.NEW, {})
                )
            elif name in discovered:
                records[name].append(
                    Record("registered", kind.item_id(name), discovered[name], None, None, State.NEW, {"discovered": True})
                )
        for name, run_ids in found.planned.items():
            for run_id in run_ids:
                if run_id in found.runs:  # a deleted run takes its events along; a leftover plan is half a deletion
                    records[name].extend(self._run_records(kind, name, found.runs[run_id], found.materialised, found.failures))
        for (name, run_id), output in found.materialised.items():
            if run_id not in found.planned.get(name, ()):
                # Reported outside a run (or by a run that did not plan it): it closes no Processing record.
                job = found.runs[run_id].job if run_id in found.runs else "reported"
                records[name].append(
                    Record(f"materialization:{output.storage_id}", kind.item_id(name), job, run_id or None,
                           _epoch(output.stored_at), State.PROCESSED, output.payload(kind.processing_asset))
                )
        for name, observations in found.observed.items():
            records[name].extend(observations)
        return {name: derive_item(kind.item_id(name), recs) for name, recs in records.items()}

    def _run_records(
        self, kind: ItemKind, name: str, run: _Run, materialised: Mapping[tuple[str, str], _Output],
        failures: Mapping[str, dict[str, Any]],
    ) -> list[Record]:
        item_id = kind.item_id(name)
        opened = f"run:{run.run_id}:processing"
        start = run.started if run.started is not None else _epoch(run.created)
        asset = kind.processing_asset.to_user_string()
        records = [Record(opened, item_id, run.job, run.run_id, start, State.PROCESSING, {"asset": asset, "status": run.status})]
        if run.status not in (_SUCCESS, _FAILURE, _CANCELED):
            return records
        end = run.ended if run.ended is not None else _epoch(run.updated)
        output = materialised.get((name, run.run_id))
        if run.status == _SUCCESS and output is not None:
            payload = output.payload(kind.processing_asset)
            records.append(Record(f"run:{run.run_id}:processed", item_id, run.job, run.run_id, end, State.PROCESSED, payload, opened))
            return records
        if run.status == _SUCCESS:
            reason = {"error": f"the run succeeded without materialising {asset} for {name}"}
        else:
            reason = failures.get(run.run_id, {})
        payload = {"asset": asset, "status": run.status, **reason}
        records.append(Record(f"run:{run.run_id}:failed", item_id, run.job, run.run_id, end, State.FAILED, payload, opened))
        return records

    def _registrations(self, kind: ItemKind, names: Collection[str] | None) -> dict[str, float | None]:
        table = DynamicPartitionsTable
        query = db_select([table.c.partition, table.c.create_timestamp]).where(table.c.partitions_def_name == kind.partitions_def)
        return {row[0]: _epoch(row[1]) for q in _filtered(query, table.c.partition, names) for row in self._storage.events(q)}

    def _asset_events(self, asset: dg.AssetKey, event_type: str, columns: list[Any], names: Collection[str] | None) -> list[Any]:
        """Rows of the asset's events of one type, in storage order; the first column must be the storage id."""
        table = SqlEventLogStorageTable
        query = db_select(columns).where(table.c.asset_key == asset.to_string()).where(table.c.dagster_event_type == event_type)
        # No ORDER BY in SQL: SQLite would then walk the (asset, type, id) index over every partition instead of
        # seeking the (asset, type, partition) one. For the same reason `IN (names)` stands alone.
        if names is None:
            query = query.where(table.c.partition.isnot(None))
        rows = [row for q in _filtered(query, table.c.partition, names) for row in self._storage.events(q)]
        return sorted(rows, key=lambda row: row[0])

    def _planned(self, kind: ItemKind, names: Collection[str] | None) -> dict[str, set[str]]:
        t = SqlEventLogStorageTable
        planned: dict[str, set[str]] = defaultdict(set)
        for _, run_id, partition in self._asset_events(kind.processing_asset, _PLANNED, [t.c.id, t.c.run_id, t.c.partition], names):
            planned[partition].add(run_id)
        return planned

    def _materializations(
        self, kind: ItemKind, names: Collection[str] | None, payloads: bool
    ) -> dict[tuple[str, str], _Output]:
        """(partition, run id) → the last materialisation of the processing asset."""
        t = SqlEventLogStorageTable
        columns = [t.c.id, t.c.run_id, t.c.partition, t.c.timestamp] + ([t.c.event] if payloads else [])
        return {
            (row[2], row[1]): _Output(row[0], row[3], row[4] if payloads else None)
            for row in self._asset_events(kind.processing_asset, _MATERIALIZATION, columns, names)
        }

    def _observations(self, kind: ItemKind, names: Collection[str] | None) -> dict[str, list[Record]]:
        t = SqlEventLogStorageTable
        columns = [t.c.id, t.c.partition, t.c.timestamp, t.c.event]
        found: dict[str, list[Record]] = defaultdict(list)
        for storage_id, partition, time, event in self._asset_events(kind.operator_asset, _OBSERVATION, columns, names):
            metadata = _metadata(event, "asset_observation")
            state = ACTIONS.get(metadata.get(MANIFEST_ACTION))  # other observations of the asset are not records
            if state is None:
                continue
            payload = {k: v for k, v in metadata.items() if k not in (MANIFEST_ACTION, "resolves")}
            previous = metadata.get("resolves") if state is State.RESOLVED else None
            found[partition].append(
                Record(f"observation:{storage_id}", kind.item_id(partition), OPERATOR, None, _epoch(time), state, payload, previous)
            )
        return found

    def _run_rows(self, run_ids: Collection[str] | None) -> dict[str, _Run]:
        t = RunsTable
        query = db_select([t.c.run_id, t.c.pipeline_name, t.c.status, t.c.create_timestamp, t.c.start_time, t.c.end_time, t.c.update_timestamp])
        rows = [row for q in _filtered(query, t.c.run_id, run_ids) for row in self._storage.runs(q)]
        return {
            row[0]: _Run(row[0], row[1], row[2], row[3], _epoch(row[4]), _epoch(row[5]), row[6])
            for row in rows
        }

    def _failures(self, run_ids: Collection[str] | None) -> dict[str, dict[str, Any]]:
        t = SqlEventLogStorageTable
        query = db_select([t.c.run_id, t.c.event]).where(t.c.dagster_event_type.in_([_RUN_FAILURE, _RUN_CANCELED]))
        return {run_id: _failure(event) for q in _filtered(query, t.c.run_id, run_ids) for run_id, event in self._storage.events(q)}


def read_manifest(instance: dg.DagsterInstance, kinds: Iterable[ItemKind] = KINDS, payloads: bool = True) -> list[Item]:
    """Every item of every kind, sorted by item id."""
    manifest = ProcessingManifest(instance)
    items = [item for kind in kinds for item in manifest.items(kind, payloads=payloads).values()]
    return sorted(items, key=lambda i: i.id)


# --- operator actions --------------------------------------------------------------------------------------


def _operator_name() -> str:
    try:
        return getpass.getuser()
    except (OSError, KeyError):  # no login name in the environment nor in the password database
        return "unknown"


def record_operator_action(
    instance: dg.DagsterInstance, kind: ItemKind, name: str, action: str, reason: str, register: bool = False
) -> Item:
    """Record `skip` or `resolve` for an item as an AssetObservation of its operator asset; return the item after.

    `skip` applies to any item no run holds (an unregistered one is registered first when `register`);
    `resolve` only to a Failed or Skipped item, and refers to the record it clears.
    """
    if action not in ACTIONS:
        raise ValueError(f"unknown manifest action {action!r}; expected one of {', '.join(ACTIONS)}")
    reason = reason.strip()
    if not reason:
        raise ValueError("a reason is required")
    if len(reason) > MAX_REASON:
        raise ValueError(f"the reason is longer than {MAX_REASON} characters")
    manifest = ProcessingManifest(instance)
    item = manifest.item(kind, name)
    registered = any(r.state is State.NEW for r in item.records)
    metadata: dict[str, Any] = {MANIFEST_ACTION: action, "reason": reason, "by": _operator_name()}
    if item.state is State.PROCESSING:
        raise ValueError(f"cannot {action} {item.id}: it is Processing (run {', '.join(item.open_runs)} holds it)")
    if action == "skip":
        if item.state is State.SKIPPED:
            raise ValueError(f"{item.id} is already Skipped")
        if not registered:
            if not register:
                raise ValueError(f"no such item: {item.id} is not registered")
            instance.add_dynamic_partitions(kind.partitions_def, [name])
    else:
        current = item.current
        if item.state not in (State.FAILED, State.SKIPPED) or current is None:
            raise ValueError(f"cannot resolve {item.id}: it is {item.state.value}; only Failed or Skipped items can be resolved")
        if not item.valid:
            raise ValueError(f"cannot resolve {item.id}: it is invalid ({'; '.join(item.problems)}); skip it instead")
        metadata["resolves"] = current.id
    instance.report_runless_asset_event(dg.AssetObservation(asset_key=kind.operator_asset, partition=name, metadata=metadata))
    return manifest.item(kind, name)


# --- the lock check of sensors and `process` ---------------------------------------------------------------


@dataclass(frozen=True)
class StartableRun:
    name: str
    run_key: str  # unique per start: a resolved item gets a key naming its Resolved record


@dataclass(frozen=True)
class LockCheck:
    startable: list[StartableRun]  # in the order asked
    refused: dict[str, str]  # name → why no run may start


def run_key(item: Item, name: str) -> str:
    """The first run of an item is keyed by its name; a run after a Resolved record by that record too, so
    Dagster's run-key deduplication does not take it for the first one."""
    current = item.current
    if item.state is State.RESOLVED and current is not None:
        return f"{name}#{current.id}"
    return name


def startable_runs(
    instance: dg.DagsterInstance, kind: ItemKind, names: Sequence[str], discovered: Mapping[str, str] | None = None
) -> LockCheck:
    """Which of `names` may get a run now: New or Resolved, and valid. What every sensor and `process` call.

    `discovered` names are about to be registered by the caller (name → the application, e.g. the sensor).
    """
    items = ProcessingManifest(instance).items(kind, names, discovered, payloads=False)
    startable, refused = [], {}
    for name in names:
        item = items[name]
        if item.may_start:
            startable.append(StartableRun(name, run_key(item, name)))
        else:
            refused[name] = item.why_not_startable() or f"{item.id} is {item.state.value}"
    return LockCheck(startable, refused)


def resolved_since(
    instance: dg.DagsterInstance, kind: ItemKind, after_storage_id: int | None, limit: int
) -> tuple[list[str], int | None]:
    """Items an operator resolved after the observation `after_storage_id`, oldest first, and the new cursor."""
    result = instance.fetch_observations(
        dg.AssetRecordsFilter(asset_key=kind.operator_asset, after_storage_id=after_storage_id), limit=limit, ascending=True
    )
    names: list[str] = []
    for record in result.records:
        observation = record.asset_observation
        action = observation.metadata.get(MANIFEST_ACTION) if observation else None
        if observation is not None and observation.partition and action is not None and action.value == "resolve":
            names.append(observation.partition)
    cursor = result.records[-1].storage_id if result.records else after_storage_id
    return list(dict.fromkeys(names)), cursor
