"""Synthetic CDC landings: Kafka records of one model's topics, each in its topic's contract (FORMATS.md §7).

The generator plays the model's true history and writes it as landing folders
(`cdc/landing/landing=YYYY-MM-DD-hh-mm-ss/`). Landing 1 inserts every key (on Debezium topics as snapshot
reads, `op: r`); every later landing updates a share of the live keys, deletes a share of them and inserts
again a share of the deleted ones. Each change goes to one of the model's topics at random and is written
in that topic's contract: partial rows and null deletes, Debezium envelopes (wrapped in `payload` or bare;
a delete followed by its tombstone), or OMG events with `changeType` and `deletedID`. Each key changes at
most once per landing, and each landing covers its own `interval` of time, so the history has one order.

Defects a consolidation must handle come in exact numbers:
- late records: a share of a landing's records is held back and landed with the next one, keeping its
  timestamp, which is older than that landing's own records (the last landing holds nothing back);
- duplicates: a share of a landing's records is landed again (same topic, partition, offset) with the
  next landing (the last landing's duplicates stay in it);
- out-of-order lines: every landing's lines are shuffled;
- both `__timestamp` forms (epoch milliseconds, ISO-8601) and all `__value` forms (JSON object, JSON
  text; JSON null and the string `"null"` for partial deletes and Debezium tombstones) are mixed.

A model keyed by several columns gets keys of as many parts, an order's lines (`_key_parts`), written where
each contract expects them: in the rows, as an object in the Kafka key, and as `deletedID`'s object.

`CdcGeneration.expected` is the state the model must end in: the row of every live key (its `__key` text,
models.key_text), as landed.
Generation is deterministic for a seed.
"""

from __future__ import annotations

import gzip
import json
import random
from collections import Counter
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path

from snowplow_assets.cdc.models import ModelSpec, TopicSpec, key_text
from snowplow_assets.run_folders import SUCCESS_MARKER

STATES = ("active", "invited")
COUNTRIES = ("DE", "FR", "GB", "NL", "US", "JP", "BR")
NAMES = ("Ada", "Grace", "Alan", "Edsger", "Barbara", "Donald", "Margaret", "Ken", "Frances", "John")
NEW_COLUMN = "loyalty_tier"


@dataclass(frozen=True)
class CdcGenerationOptions:
    keys: int = 1000
    landings: int = 2
    update_rate: float = 0.2  # share of live keys updated in each landing after the first
    delete_rate: float = 0.05  # share of live keys deleted in each landing after the first
    reinsert_rate: float = 0.3  # share of deleted keys inserted again in each later landing
    late_rate: float = 0.02  # share of a landing's records landed with the next landing instead
    duplicate_rate: float = 0.01  # share of a landing's records landed a second time
    partitions: int = 3
    files: int = 1
    gzip: bool = False
    seed: int = 1
    start: datetime = datetime(2026, 3, 1, 10, 0, 0, tzinfo=UTC)
    interval: timedelta = timedelta(minutes=10)
    contracts: tuple[str, ...] = ()  # only the model's topics of these contracts; () for all
    new_column_from: int | None = None  # from this landing (1-based) rows carry an extra column

    def __post_init__(self) -> None:
        for name in ("keys", "landings", "partitions", "files"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be at least 1: {getattr(self, name)}")
        for name in ("update_rate", "delete_rate", "reinsert_rate", "late_rate", "duplicate_rate"):
            if not 0 <= getattr(self, name) <= 1:
                raise ValueError(f"{name} is a share, between 0 and 1: {getattr(self, name)}")
        if self.update_rate + self.delete_rate > 1:
            raise ValueError("update_rate + delete_rate must not exceed 1: a key changes once per landing")
        if self.interval < timedelta(seconds=1):
            raise ValueError(f"interval must be at least a second (landing folders are named by it): {self.interval}")
        start = self.start if self.start.tzinfo else self.start.replace(tzinfo=UTC)
        object.__setattr__(self, "start", start.astimezone(UTC))


@dataclass
class LandingStats:
    folder: Path
    records: int = 0
    inserts: int = 0
    updates: int = 0
    deletes: int = 0
    tombstones: int = 0
    late: int = 0  # records of the previous landing landed here
    duplicates: int = 0  # second copies landed here
    by_contract: dict[str, int] = field(default_factory=dict)
    files: list[Path] = field(default_factory=list)


@dataclass
class CdcGeneration:
    landings: list[LandingStats]
    expected: dict[str, dict]  # live key -> its row, as the last change wrote it


def landing_folder_name(start: datetime) -> str:
    return start.astimezone(UTC).strftime("landing=%Y-%m-%d-%H-%M-%S")


def _iso(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


class _Writer:
    """Kafka coordinates and contract rendering of one model's topics."""

    def __init__(self, model: ModelSpec, topics: list[TopicSpec], options: CdcGenerationOptions, rng: random.Random):
        self.model, self.topics, self.options, self.rng = model, topics, options, rng
        self.offsets: dict[tuple[str, int], int] = {}

    def _envelope(self, topic: TopicSpec, key: int, kafka_key: str, ts: int, value: object) -> str:
        partition = key % self.options.partitions
        offset = self.offsets.get((topic.topic, partition), 0)
        self.offsets[(topic.topic, partition)] = offset + 1
        # Every form a value may take: an object or its JSON text; a null as JSON null or the string "null".
        if self.rng.random() < 0.5:
            value = "null" if value is None else json.dumps(value, separators=(",", ":"))
        return json.dumps(
            {
                "__topic": topic.topic,
                "__partition": partition,
                "__offset": offset,
                "__timestamp": ts if self.rng.random() < 0.5 else _iso(ts),
                "__key": kafka_key,
                "__value": value,
            },
            separators=(",", ":"),
        )

    def change(
        self, topic: TopicSpec, kind: str, key: int, ts: int, row: dict | None, before: dict | None, snapshot: bool
    ) -> list[str]:
        """The landed lines of one change: one line, or a Debezium delete and its tombstone."""
        # A one-field key as it is, a key of several fields as an object naming them (contracts.py).
        fields = _key_fields(key, self.model.id_field(topic))
        single = len(fields) == 1
        as_object = json.dumps(fields, separators=(",", ":"))
        if topic.contract == "partial":
            return [self._envelope(topic, key, str(key) if single else as_object, ts, row)]
        if topic.contract == "event":
            value = (
                {"changeType": "DELETE", "deletedID": key if single else fields}
                if kind == "delete"
                else {"changeType": kind.upper(), "data": row}
            )
            return [self._envelope(topic, key, str(key), ts, value)]
        op = {"insert": "r" if snapshot else "c", "update": "u", "delete": "d"}[kind]
        payload = {"op": op, "before": before, "after": row, "source": {"ts_ms": ts}, "ts_ms": ts}
        kafka_key = as_object
        value = {"payload": payload} if self.rng.random() < 0.5 else payload
        lines = [self._envelope(topic, key, kafka_key, ts, value)]
        if kind == "delete":
            lines.append(self._envelope(topic, key, kafka_key, ts, None))
        return lines


def _key_parts(key: int, parts: int) -> list[int]:
    """The generated key `key` as the values of a key of `parts` fields. For several, an order's lines: the
    order (`key // 10`) and the line (`key % 10`), so that many rows share each part and only the whole key
    tells them apart; further parts are remainders."""
    if parts == 1:
        return [key]
    return [key // 10, key % 10, *(key % (10 + index) for index in range(2, parts))]


def _key_fields(key: int, id_fields: tuple[str, ...]) -> dict[str, int]:
    return dict(zip(id_fields, _key_parts(key, len(id_fields)), strict=True))


def _row(rng: random.Random, key: int, id_fields: tuple[str, ...], extra: bool) -> dict:
    name = rng.choice(NAMES)
    row = {
        **_key_fields(key, id_fields),
        "email": f"{name.lower()}.{key}@example.com",
        "name": f"{name} {key}",
        "state": rng.choice(STATES),
        "country": rng.choice(COUNTRIES),
        "lifetime_value": round(rng.uniform(0, 5000), 2),
        "orders": rng.randint(0, 40),
        "marketing_opt_in": rng.random() < 0.4,
    }
    if extra:
        row[NEW_COLUMN] = rng.choice(("bronze", "silver", "gold"))
    return row


def generate_cdc_landings(landing_root: Path, model: ModelSpec, options: CdcGenerationOptions) -> CdcGeneration:
    """Write `options.landings` landing folders under `landing_root` (the lake's cdc/landing)."""
    topics = [t for t in model.topics if not options.contracts or t.contract in options.contracts]
    if not topics:
        raise ValueError(f"model {model.name} has no topic of the contracts {list(options.contracts)}")
    rng = random.Random(options.seed)
    writer = _Writer(model, topics, options, rng)
    live: dict[int, dict] = {}  # key -> last row (as landed, with its topic's id field)
    deleted: set[int] = set()
    carried: list[tuple[str, str]] = []  # late records and duplicates for the next landing: (contract, line)
    carried_late = carried_duplicates = 0
    results: list[LandingStats] = []
    interval_ms = int(options.interval.total_seconds() * 1000)
    folders = [
        Path(landing_root) / landing_folder_name(options.start + i * options.interval) for i in range(options.landings)
    ]
    existing = [str(folder) for folder in folders if folder.exists()]
    if existing:
        raise FileExistsError(f"landing folders already exist, not overwriting them: {existing}")

    for index in range(options.landings):
        span_start = options.start + index * options.interval
        stats = LandingStats(folders[index])
        base_ms = int(span_start.timestamp() * 1000)
        extra = options.new_column_from is not None and index + 1 >= options.new_column_from
        changes: list[tuple[int, str]] = []
        if index == 0:
            changes = [(key, "insert") for key in range(1, options.keys + 1)]
        else:
            for key in sorted(live):
                draw = rng.random()
                if draw < options.update_rate:
                    changes.append((key, "update"))
                elif draw < options.update_rate + options.delete_rate:
                    changes.append((key, "delete"))
            changes += [(key, "insert") for key in sorted(deleted) if rng.random() < options.reinsert_rate]

        own: list[tuple[str, str]] = []  # (contract, line)
        for key, kind in changes:
            topic = rng.choice(topics)
            ts = base_ms + rng.randrange(interval_ms)
            before = live.get(key)
            row = None if kind == "delete" else _row(rng, key, model.id_field(topic), extra)
            lines = writer.change(topic, kind, key, ts, row, before, snapshot=index == 0)
            own += [(topic.contract, line) for line in lines]
            setattr(stats, f"{kind}s", getattr(stats, f"{kind}s") + 1)
            stats.tombstones += len(lines) - 1
            if kind == "delete":
                live.pop(key, None)
                deleted.add(key)
            else:
                live[key] = row  # type: ignore[assignment]
                deleted.discard(key)

        last = index == options.landings - 1
        held = set() if last else set(rng.sample(range(len(own)), round(len(own) * options.late_rate)))
        copies = rng.sample(own, round(len(own) * options.duplicate_rate))
        lines = [line for i, line in enumerate(own) if i not in held] + carried
        stats.late, stats.duplicates = carried_late, carried_duplicates
        if last:
            lines += copies
            stats.duplicates += len(copies)
            carried = []
        else:
            carried = [own[i] for i in sorted(held)] + copies
            carried_late, carried_duplicates = len(held), len(copies)
        rng.shuffle(lines)
        stats.records = len(lines)
        stats.by_contract = dict(Counter(contract for contract, _ in lines))  # as landed: late and copies too
        stats.files = _write(stats.folder, [line for _, line in lines], options)
        results.append(stats)

    expected = {key_text([str(p) for p in _key_parts(key, len(model.id))]): row for key, row in sorted(live.items())}
    return CdcGeneration(results, expected)


def _write(folder: Path, lines: list[str], options: CdcGenerationOptions) -> list[Path]:
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for index in range(options.files):
        path = folder / f"part-{index:05d}.json{'.gz' if options.gzip else ''}"
        text = "".join(line + "\n" for line in lines[index :: options.files]).encode("utf-8")
        path.write_bytes(gzip.compress(text) if options.gzip else text)
        paths.append(path)
    (folder / SUCCESS_MARKER).touch()
    return paths
