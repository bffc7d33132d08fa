"""What the processing manifest reads from Dagster's SQL storage, and how: read-only queries and event decoding.

Records are selected straight from the SQL tables behind Dagster's storages (`runs` and `run_tags`;
`event_logs` and `dynamic_partitions` through the event log's index connection, which for the run-sharded
SQLite storage is the index shard, where Dagster mirrors asset and run-status events), taking only the
columns needed and decoding event JSON only for payloads. Going through Dagster's Python API deserialises
every run and event (0.1–0.5 ms each): about a minute for 100,000 items. Queries for given partitions
filter on them (event_logs by asset key, type and partition; runs by run id; dynamic partitions by name,
all indexed); a listing (names None) makes a fixed number of queries, whatever the number of items.

The price is a dependency on Dagster's storage schema (versioned and migrated by Dagster, the same for its
SQLite, Postgres and MySQL storages) and on its serialisation of events; the tests compare what is read
here with Dagster's API on real runs.
"""

import json
from collections import defaultdict
from collections.abc import Collection, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import dagster as dg
import sqlalchemy as db
from dagster._core.storage.event_log.schema import DynamicPartitionsTable, SqlEventLogStorageTable
from dagster._core.storage.event_log.sql_event_log import SqlEventLogStorage
from dagster._core.storage.runs.schema import RunsTable, RunTagsTable
from dagster._core.storage.runs.sql_run_storage import SqlRunStorage
from dagster._core.storage.sqlalchemy_compat import db_select
from dagster._core.storage.tags import BACKFILL_ID_TAG
from dagster._serdes import deserialize_value
from dagster._utils.error import SerializableErrorInfo

from snowplow_assets.defs.step_errors import raised_error_reason

_IN_CHUNK = 500  # values per SQL IN (...): well under SQLite's bound-parameter limit

_PLANNED = dg.DagsterEventType.ASSET_MATERIALIZATION_PLANNED.value
_MATERIALIZATION = dg.DagsterEventType.ASSET_MATERIALIZATION.value
_OBSERVATION = dg.DagsterEventType.ASSET_OBSERVATION.value
_RUN_FAILURE = dg.DagsterEventType.RUN_FAILURE.value
_RUN_CANCELED = dg.DagsterEventType.RUN_CANCELED.value


@dataclass(frozen=True)
class StoredRun:
    run_id: str
    job: str
    status: str  # a DagsterRunStatus name
    created: Any  # as stored; converted by `epoch` only when used (a listing would convert 100,000s)
    started: float | None
    ended: float | None
    updated: Any
    backfill: str | None  # the id of the backfill that launched it


@dataclass(frozen=True)
class StoredOutput:
    """A materialisation of an asset partition by a run (run id "" when reported outside a run)."""

    storage_id: int
    stored_at: Any  # the event's timestamp column, as stored
    event: str | None  # the event as stored; None when its payload was not asked for

    def payload(self, head: dict[str, Any]) -> Mapping[str, Any]:
        """`head` and, when the event was read, the materialisation's metadata."""
        return head if self.event is None else _MaterializationPayload(head, self.event)


class _MaterializationPayload(Mapping[str, Any]):
    """A materialisation's metadata, decoded from its event when first read.

    Reading the states of 100,000 items needs none of it; decoding 100,000 events of a few kB each costs
    more than every query of the listing together, so only what is shown is decoded."""

    __slots__ = ("_decoded", "_event", "_head")

    def __init__(self, head: dict[str, Any], event: str) -> None:
        self._head, self._event = head, event
        self._decoded: dict[str, Any] | None = None

    def _data(self) -> dict[str, Any]:
        if self._decoded is None:
            self._decoded = {**self._head, **event_metadata(self._event, "materialization")}
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
class StoredObservation:
    storage_id: int
    partition: str
    stored_at: Any
    metadata: dict[str, Any]  # plain JSON values


_EPOCH = datetime(1970, 1, 1)


def epoch(value: Any) -> float | None:
    """A time as Dagster stores it (epoch seconds, or a naive UTC datetime or its text) as epoch seconds."""
    if value is None:
        return None
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, str):
        value = datetime.fromisoformat(value)
    if value.tzinfo is None:
        return (value - _EPOCH).total_seconds()
    return value.timestamp()


def _plain(value: Any) -> Any:
    """A value of Dagster's serialised JSON as plain JSON: a serialised object with one field is that field
    (IntMetadataValue → its int, TextMetadataValue → its text), a table is its records, enums their names.

    A listing decodes millions of these: a table's schema is never walked, only the records it keeps."""
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if not isinstance(value, dict):
        return value
    if "__class__" not in value:
        if "__enum__" in value:
            return value["__enum__"].rsplit(".", 1)[-1]
        return {k: _plain(v) for k, v in value.items()}
    if "records" in value and "schema" in value:
        return _plain(value["records"])
    fields = [k for k in value if k != "__class__"]
    if not fields:
        return None
    if len(fields) == 1:
        return _plain(value[fields[0]])
    return {k: _plain(value[k]) for k in fields}


def _entries(body: Mapping[str, Any]) -> dict[str, Any]:
    """The metadata of a serialised event body or failure, in the current or the legacy (entries) form."""
    if "metadata_entries" in body:
        return {e["label"]: _plain(e["entry_data"]) for e in body["metadata_entries"]}
    return {label: _plain(v) for label, v in (body.get("metadata") or {}).items()}


def event_metadata(event_json: str, body_field: str) -> dict[str, Any]:
    """The metadata of a materialisation (`materialization`) or observation (`asset_observation`) event."""
    return _entries(json.loads(event_json)["dagster_event"]["event_specific_data"][body_field])


def _error_text(error: Mapping[str, Any]) -> str:
    # Failures are few: their errors are read back into Dagster's own type, not interpreted here.
    return raised_error_reason(deserialize_value(json.dumps(error), SerializableErrorInfo))


def failure_payload(event_json: str) -> dict[str, Any]:
    """Why a run failed, from its failure event: Dagster's failure reason, the step that failed and its
    error, and the metadata of a `dg.Failure` the step raised (e.g. the run folder it was shredding).

    A run failed or canceled from outside (the UI's termination, `instance.report_run_failed`, the CLI's
    abandoned runs) has an event without data: its message says why."""
    event = json.loads(event_json)["dagster_event"]
    data = event.get("event_specific_data") or {}
    payload: dict[str, Any] = {}
    if data.get("failure_reason"):
        payload["failure_reason"] = _plain(data["failure_reason"])
    error = data.get("error")
    step_event = data.get("first_step_failure_event")
    if step_event:
        payload["step"] = step_event.get("step_key")
        step_failure = step_event.get("event_specific_data") or {}
        error = step_failure.get("error") or error
        user_failure = step_failure.get("user_failure_data") or {}
        payload.update({k: v for k, v in _entries(user_failure).items() if k not in payload})
    if error:
        payload["error"] = _error_text(error)
    elif not payload and event.get("message"):
        payload["message"] = event["message"]
    return payload


def _planned_partitions(event_json: str) -> list[str]:
    """The partitions of a plan that names a subset of them instead of one partition: what Dagster logs for a
    run over a partition range when DAGSTER_EMIT_PARTITION_SUBSET_IN_PLANNED_EVENTS is set (by default it
    logs one plan per partition, as for a single-partition run)."""
    subset = json.loads(event_json)["dagster_event"]["event_specific_data"].get("partitions_subset")
    if subset is None:
        return []
    return list(deserialize_value(json.dumps(subset)).get_partition_keys())  # type: ignore[attr-defined]


def _filtered(query: Any, column: Any, values: Collection[str] | None) -> Iterator[Any]:
    """The query as is (values None), or once per chunk of values with `column IN (chunk)`."""
    if values is None:
        yield query
        return
    ordered = sorted(values)
    for start in range(0, len(ordered), _IN_CHUNK):
        yield query.where(column.in_(ordered[start : start + _IN_CHUNK]))


class DagsterStorage:
    """The SQL behind an instance's run storage and event log, one connection to each per `connected()`.

    Every read takes `names` (partitions, or run ids for runs): None reads all of them."""

    def __init__(self, instance: dg.DagsterInstance) -> None:
        events, runs = instance.event_log_storage, instance.run_storage
        if not isinstance(events, SqlEventLogStorage) or not isinstance(runs, SqlRunStorage):
            raise TypeError(
                "the processing manifest reads Dagster's SQL storage (SQLite, Postgres, MySQL); this instance "
                f"uses {type(events).__name__} and {type(runs).__name__}"
            )
        self._events_storage, self._runs_storage = events, runs
        self._open: tuple[Any, Any] | None = None

    @contextmanager
    def connected(self) -> Iterator[None]:
        # Opening a SQLite connection costs a few milliseconds: more than an indexed query.
        with self._events_storage.index_connection() as events, self._runs_storage.connect() as runs:
            self._open = (events, runs)
            try:
                yield
            finally:
                self._open = None

    def _events(self, query: Any) -> Sequence[Any]:
        assert self._open is not None, "query inside connected()"
        return self._open[0].execute(query).fetchall()

    def _runs(self, query: Any) -> Sequence[Any]:
        assert self._open is not None, "query inside connected()"
        return self._open[1].execute(query).fetchall()

    def registrations(self, partitions_def: str, names: Collection[str] | None) -> dict[str, float | None]:
        """Partition → when it was added to the dynamic partitions definition."""
        table = DynamicPartitionsTable
        query = db_select([table.c.partition, table.c.create_timestamp]).where(
            table.c.partitions_def_name == partitions_def
        )
        return {row[0]: epoch(row[1]) for q in _filtered(query, table.c.partition, names) for row in self._events(q)}

    def unclaimed(self, partitions_def: str, processing_asset: dg.AssetKey, operator_asset: dg.AssetKey) -> list[str]:
        """The partitions of `partitions_def`, sorted, for which no run planned or materialised `processing_asset`
        after their latest observation of `operator_asset`, or ever.

        One query, whatever the number of partitions: for each, a few seeks of the covering (asset, type,
        partition, id) index for the newest event of each kind, compared by storage id, which orders events
        as they were stored. A run's plan is stored when the run is created, queued or not, so a partition
        with a run in flight is never among them.
        """
        events, partitions = SqlEventLogStorageTable, DynamicPartitionsTable

        def newest(asset: dg.AssetKey, event_type: str) -> Any:
            latest = (
                db_select([db.func.max(events.c.id)])
                .where(events.c.asset_key == asset.to_string())
                .where(events.c.dagster_event_type == event_type)
                .where(events.c.partition == partitions.c.partition)
                .scalar_subquery()
            )
            return db.func.coalesce(latest, 0)

        observed = newest(operator_asset, _OBSERVATION)
        query = (
            db_select([partitions.c.partition])
            .where(partitions.c.partitions_def_name == partitions_def)
            .where(newest(processing_asset, _PLANNED) <= observed)
            .where(newest(processing_asset, _MATERIALIZATION) <= observed)
            .order_by(partitions.c.partition)
        )
        return [row[0] for row in self._events(query)]

    def _asset_events(
        self, asset: dg.AssetKey, event_type: str, columns: list[Any], names: Collection[str] | None
    ) -> list[Any]:
        """Rows of the asset's partition events of one type, in storage order; the first column must be the id."""
        table = SqlEventLogStorageTable
        query = (
            db_select(columns)
            .where(table.c.asset_key == asset.to_string())
            .where(table.c.dagster_event_type == event_type)
        )
        # No ORDER BY in SQL: SQLite would then walk the (asset, type, id) index over every partition instead of
        # seeking the (asset, type, partition) one. For the same reason `IN (names)` stands alone.
        if names is None:
            query = query.where(table.c.partition.isnot(None))
        rows = [row for q in _filtered(query, table.c.partition, names) for row in self._events(q)]
        return sorted(rows, key=lambda row: row[0])

    def planned(self, asset: dg.AssetKey, names: Collection[str] | None) -> dict[str, set[str]]:
        """Partition → the ids of the runs that planned to materialise it, however Dagster logged the plan."""
        t = SqlEventLogStorageTable
        planned: dict[str, set[str]] = defaultdict(set)
        for _, run_id, partition in self._asset_events(asset, _PLANNED, [t.c.id, t.c.run_id, t.c.partition], names):
            planned[partition].add(run_id)
        ranged = (
            db_select([t.c.run_id, t.c.event])
            .where(t.c.asset_key == asset.to_string())
            .where(t.c.dagster_event_type == _PLANNED)
            .where(t.c.partition.is_(None))
        )
        for run_id, event in self._events(ranged):
            for partition in _planned_partitions(event):
                if names is None or partition in names:
                    planned[partition].add(run_id)
        return planned

    def materializations(
        self, asset: dg.AssetKey, names: Collection[str] | None, payloads: bool
    ) -> dict[tuple[str, str], StoredOutput]:
        """(partition, run id) → the run's last materialisation of the asset partition."""
        t = SqlEventLogStorageTable
        columns = [t.c.id, t.c.run_id, t.c.partition, t.c.timestamp] + ([t.c.event] if payloads else [])
        return {
            (row[2], row[1]): StoredOutput(row[0], row[3], row[4] if payloads else None)
            for row in self._asset_events(asset, _MATERIALIZATION, columns, names)
        }

    def observations(self, asset: dg.AssetKey, names: Collection[str] | None) -> list[StoredObservation]:
        """The asset's partition observations, oldest first, with their metadata."""
        t = SqlEventLogStorageTable
        columns = [t.c.id, t.c.partition, t.c.timestamp, t.c.event]
        return [
            StoredObservation(storage_id, partition, time, event_metadata(event, "asset_observation"))
            for storage_id, partition, time, event in self._asset_events(asset, _OBSERVATION, columns, names)
        ]

    def runs(self, run_ids: Collection[str] | None) -> dict[str, StoredRun]:
        t = RunsTable
        query = db_select(
            [
                t.c.run_id,
                t.c.pipeline_name,
                t.c.status,
                t.c.create_timestamp,
                t.c.start_time,
                t.c.end_time,
                t.c.update_timestamp,
            ]
        )
        rows = [row for q in _filtered(query, t.c.run_id, run_ids) for row in self._runs(q)]
        tags = RunTagsTable
        backfill_query = db_select([tags.c.run_id, tags.c.value]).where(tags.c.key == BACKFILL_ID_TAG)
        backfills = dict(row for q in _filtered(backfill_query, tags.c.run_id, run_ids) for row in self._runs(q))
        return {
            row[0]: StoredRun(
                row[0], row[1], row[2], row[3], epoch(row[4]), epoch(row[5]), row[6], backfills.get(row[0])
            )
            for row in rows
        }

    def failures(self, run_ids: Collection[str] | None) -> dict[str, dict[str, Any]]:
        """Run id → why the run failed or was canceled (`failure_payload`)."""
        t = SqlEventLogStorageTable
        query = db_select([t.c.run_id, t.c.event]).where(t.c.dagster_event_type.in_([_RUN_FAILURE, _RUN_CANCELED]))
        return {
            run_id: failure_payload(event)
            for q in _filtered(query, t.c.run_id, run_ids)
            for run_id, event in self._events(q)
        }
