"""Items, records and states of the processing manifest, after Snowplow's design (seed 001, FORMATS.md §6).

An *item* is a precisely defined volume of data: an enriched run folder, a CDC landing folder. A *record*
is one append-only change of an item's state, written by an application (a Dagster job, the operator)
with a run id, a time, an optional payload and, for records that close or clear another one, the id of
that record (`previous`, Snowplow's previousRecordId). The item is nothing but its records: its state and
its validity are derived here, the same way every time.

**States.** `New` (discovered), `Processing` (lock taken), `Processed` (lock released), `Failed`
(fail-lock: an operator must look), `Skipped` (no application may touch the item), `Resolved` (an operator
cleared a `Failed` or `Skipped`).

**Derivation.** Records are taken in time order (`New` always first; at equal times Processing before its
close and operator records last). While any `Processing` record is not yet closed, the item is
`Processing`: a run holds the lock. Otherwise the item is in the state of its latest record. So a run
started on a `Failed` item by hand (a re-execution from the Dagster UI, `process --run`) supersedes the
failure once it ends; the sensors never start one (`may_start`).

**Contradictions** make an item *invalid*; each is reported with the record at fault:

1. the first record is not `New`, or there is more than one `New` (the item was never registered, or its
   registration was removed while its history remained);
2. a `Processed` or `Failed` record refers to no record, to a record that is not `Processing`, to a
   `Processing` record of another run or to one that an earlier record already closed;
3. a `Resolved` record refers to anything but the record that put the item in its current `Failed` or
   `Skipped` state (including when a run holds the lock at that moment);
4. two runs processed the item at the same time: the intervals from `Processing` to its close overlap.
   (Runs still queued or running are not compared: one of them may legitimately wait for the other. Nor is a
   run that ended without ever starting, its `Processing` record marked `NEVER_STARTED`: cancelled while it
   waited in the queue behind the other, it processed nothing. Until 2026-11-28 it made the item invalid for
   good.)

An invalid item is never started by an application: something wrote records by hand, or two writers
raced, and an operator should look (`skip` it to park it). The state of an invalid item is still derived
by the rules above, for display.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timezone
from enum import StrEnum
from typing import Any


class State(StrEnum):
    NEW = "New"
    PROCESSING = "Processing"
    PROCESSED = "Processed"
    FAILED = "Failed"
    SKIPPED = "Skipped"
    RESOLVED = "Resolved"


CLOSING = (State.PROCESSED, State.FAILED)
# In a Processing record's payload: its run ended without ever starting (contradiction 4).
NEVER_STARTED = "never_started"
CLEARABLE = (State.FAILED, State.SKIPPED)
# Applications may start processing an item only from these states (and only if it is valid).
STARTABLE = (State.NEW, State.RESOLVED)

# Order of records that carry the same time: a run's close after its start, operator actions last.
_RANK = {
    State.NEW: 0,
    State.PROCESSING: 1,
    State.PROCESSED: 2,
    State.FAILED: 2,
    State.SKIPPED: 3,
    State.RESOLVED: 3,
}


def iso_time(epoch_seconds: float | None) -> str | None:
    """UTC ISO 8601 with microseconds and a Z, as records are shown."""
    if epoch_seconds is None:
        return None
    return datetime.fromtimestamp(epoch_seconds, timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


@dataclass(frozen=True, slots=True)
class Record:
    id: str
    item: str
    application: str
    run_id: str | None
    time: float | None  # epoch seconds
    state: State
    payload: Mapping[str, Any] = field(default_factory=dict)
    previous: str | None = None  # the record this one closes (Processed, Failed) or clears (Resolved)

    def as_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "state": self.state.value,
            "application": self.application,
            "run_id": self.run_id,
            "time": iso_time(self.time),
            "previous": self.previous,
            "payload": dict(self.payload),
        }


@dataclass(frozen=True, slots=True)
class Item:
    id: str
    state: State
    records: tuple[Record, ...]
    problems: tuple[str, ...] = ()
    # The Processing records still open, oldest first: the runs that hold the lock.
    open_runs: tuple[str, ...] = ()

    @property
    def valid(self) -> bool:
        return not self.problems

    @property
    def may_start(self) -> bool:
        """May an application (a sensor, `process`) start processing this item now?"""
        return self.valid and self.state in STARTABLE

    @property
    def current(self) -> Record | None:
        """The latest record other than a Processing one: what the item's state rests on when no run holds it."""
        for record in reversed(self.records):
            if record.state is not State.PROCESSING:
                return record
        return None

    def why_not_startable(self) -> str | None:
        """A sentence saying why no application may start this item, or None when it may."""
        if not self.valid:
            return f"{self.id} is invalid: " + "; ".join(self.problems)
        if self.state is State.PROCESSING:
            return f"{self.id} is Processing: run {', '.join(self.open_runs)} holds it"
        if self.state is State.PROCESSED:
            return f"{self.id} is Processed"
        if self.state is State.FAILED:
            return f"{self.id} is Failed and stays locked until an operator resolves it"
        if self.state is State.SKIPPED:
            return f"{self.id} is Skipped"
        return None

    def as_dict(self) -> dict[str, Any]:
        return {
            "item": self.id,
            "state": self.state.value,
            "valid": self.valid,
            "problems": list(self.problems),
            "records": [r.as_dict() for r in self.records],
        }


def _order(record: Record) -> tuple[int, float, int, str]:
    first = 0 if record.state is State.NEW else 1
    time = record.time if record.time is not None else float("-inf")
    return first, time, _RANK[record.state], record.id


def derive_item(item_id: str, records: Iterable[Record]) -> Item:
    """The item `item_id` as its records make it: state, validity (with every contradiction), open runs."""
    ordered = sorted(records, key=_order)
    problems: list[str] = []
    foreign = [r.id for r in ordered if r.item != item_id]
    if foreign:
        raise ValueError(f"records {foreign} do not belong to item {item_id}")

    news = [r for r in ordered if r.state is State.NEW]
    if not news:
        problems.append("it has no New record (it is not registered, or its registration was removed)")
    elif len(news) > 1:
        problems.append(f"it has {len(news)} New records: {', '.join(r.id for r in news)}")

    by_id = {r.id: r for r in ordered}
    open_processing: dict[str, Record] = {}
    closed: dict[str, Record] = {}  # Processing id -> its closing record
    settled: Record | None = None  # latest record that is not Processing

    for record in ordered:
        if record.state is State.PROCESSING:
            open_processing[record.id] = record
            continue
        if record.state in CLOSING:
            problem = _closing_problem(record, by_id, open_processing, closed)
            if problem:
                problems.append(problem)
            else:
                closed[record.previous] = record  # type: ignore[index]
                del open_processing[record.previous]  # type: ignore[arg-type]
        elif record.state is State.RESOLVED:
            problem = _resolve_problem(record, settled, open_processing)
            if problem:
                problems.append(problem)
        settled = record

    problems.extend(_overlaps(by_id, closed))
    if open_processing:
        state = State.PROCESSING
    else:
        state = settled.state if settled is not None else State.NEW
    open_runs = tuple(r.run_id or r.id for r in open_processing.values())
    return Item(item_id, state, tuple(ordered), tuple(problems), open_runs)


def _closing_problem(
    record: Record, by_id: Mapping[str, Record], open_processing: Mapping[str, Record], closed: Mapping[str, Record]
) -> str | None:
    name = f"{record.state.value} record {record.id}"
    if record.previous is None:
        return f"{name} closes no Processing record"
    target = by_id.get(record.previous)
    if target is None:
        return f"{name} refers to {record.previous}, which does not exist"
    if target.state is not State.PROCESSING:
        return f"{name} refers to {target.id}, a {target.state.value} record, not a Processing one"
    if target.run_id != record.run_id:
        return f"{name} of run {record.run_id} closes {target.id} of run {target.run_id}"
    if target.id in closed:
        return f"{name} closes {target.id}, which {closed[target.id].id} already closed"
    if target.id not in open_processing:
        return f"{name} closes {target.id} before it was opened"
    return None


def _resolve_problem(record: Record, settled: Record | None, open_processing: Mapping[str, Record]) -> str | None:
    name = f"Resolved record {record.id}"
    if open_processing:
        return f"{name} was written while run {', '.join(r.run_id or r.id for r in open_processing.values())} held the lock"
    if settled is None or settled.state not in CLEARABLE:
        current = settled.state.value if settled is not None else "nothing"
        return f"{name} clears a {current} item; only Failed or Skipped items can be resolved"
    if record.previous != settled.id:
        return f"{name} refers to {record.previous}, not to the {settled.state.value} record {settled.id} it must clear"
    return None


def _overlaps(by_id: Mapping[str, Record], closed: Mapping[str, Record]) -> list[str]:
    if len(closed) < 2:
        return []
    intervals = sorted(
        (
            (by_id[opened].time, closing.time, by_id[opened])
            for opened, closing in closed.items()
            if by_id[opened].time is not None
            and closing.time is not None
            and not by_id[opened].payload.get(NEVER_STARTED)
        ),
        key=lambda interval: (interval[0], interval[1], interval[2].id),
    )
    problems = []
    latest_end, latest = float("-inf"), None
    for start, end, opened in intervals:
        if latest is not None and start < latest_end:
            problems.append(f"runs {latest.run_id} and {opened.run_id} processed it at the same time")
        if end > latest_end:
            latest_end, latest = end, opened
    return problems
