"""The event manifest in DynamoDB: Snowplow's table design, one conditional PutItem per key.

**Table.** Hash key `eventId` (S), range key `fingerprint` (S); attributes `etlTime` (N, the batch
etlTime), `ttl` (N, `Batch.ttl`: TTL days after etlTime or the run folder's time, the table's TTL attribute)
and `run` (S, the batch that owns the item). An id claim is an item whose `eventId` is `id:<event_id>` and
whose `fingerprint` is `-`: a real eventId is always a UUID, so a claim can never collide with a pair.
`create_table` makes the table with TTL enabled on `ttl`.

**Long fingerprints.** DynamoDB refuses a range key longer than 1,024 bytes. Enrich's fingerprints are
hashes of 32 to 128 characters, but `event_fingerprint` is free text: a longer one is keyed by its SHA-256,
`sha256:<64 hex digits>`, and kept whole in the attribute `fingerprintText`, which lookups read back. Until
2026-11-28 its put failed validation on every attempt, and its event was a `loader_runtime_error` bad row on
every run of its batch. (A fingerprint of 1,024 bytes or less that is itself `sha256:` and the digest of a
longer fingerprint of the same event id would be taken for it; nothing writes one.)

**Check-and-set.** Every key is written with

    ConditionExpression = "(attribute_not_exists(eventId) AND attribute_not_exists(fingerprint))
                           OR #run = :run OR #ttl <= :now"

A failed condition means a live item of another batch holds the key. Compared with FORMATS.md §5 the owner
test is the batch's run folder rather than its etlTime (why: manifest/base.py), and an expired item counts
as absent, because DynamoDB deletes expired items only eventually (often days later) and until then they
must not cause drops.

**A batch run again** whose input changed records fewer keys than its earlier run, whose items stay: `forget`
deletes those of its published output that the run no longer records (`DeleteItem` on `#run = :run`, so an
item another batch owns stays; such an item, or one gone already, counts as not owned), after the new output
is published (shred_batch.py).

**Where the puts run.** In the Spark executors' Python workers, with boto3 (partition_tasks.py, so a Spark
Connect server runs them as a classic session does). The kept events are grouped by event_id first,
so every key is written by exactly one task, once: the id claim first, then each distinct fingerprint of
that id. Each task keeps a few puts in flight from a small thread pool; the client is created per task
from `DynamoDbConfig`, so executors use their own AWS credentials (instance profile, environment).

**Failures.** Throttling (ProvisionedThroughputExceededException, ThrottlingException,
RequestLimitExceeded), 5xx errors and connection errors are retried with exponential backoff and full
jitter, up to `max_attempts` in all; every retry is counted. A key that still fails, or fails for another
reason (access denied, a validation error), gets the status `error`, and every event it covers becomes a
`loader_runtime_error` bad row: never dropped, never loaded unchecked. When the id claim fails, the
pairs of that id are not attempted. A rerun of the batch once DynamoDB is healthy checks them again.
After `give_up_after_failures` keys in a row have failed, a task stops trying and fails the rest of its
keys with the last failure: DynamoDB unreachable from the executors alone (the driver found the table)
would otherwise cost every key all its attempts, days for a million events.

When every key fails and none is written or found held, it is the manifest that cannot be used, not the
events: executors without credentials of their own, a role that may describe the table but not write to
it, a table gone since the run began. The check then raises EventManifestUnavailable with the first
failure, so the run fails before anything is published and the processing manifest shows it Failed,
instead of a batch made wholly of bad rows behind a green run. A populate fails the same way. Nothing was
written, so a rerun once the manifest works starts clean.
"""

from __future__ import annotations

import hashlib
import random
import threading
import time
from collections.abc import Callable, Collection, Iterable, Iterator
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait
from dataclasses import dataclass
from functools import partial
from typing import Any, TypeVar

import boto3
from botocore.config import Config as BotoConfig
from botocore.exceptions import BotoCoreError, ClientError, HTTPClientError
from botocore.exceptions import ConnectionError as BotoConnectionError
from pyspark.sql import DataFrame, Observation
from pyspark.sql import functions as F
from pyspark.sql.types import StringType, StructField, StructType

from snowplow_assets.lake import join_uri
from snowplow_assets.manifest.base import (
    DEFAULT_TTL_DAYS,
    ENTRY_SCHEMA,
    ERROR,
    HELD,
    ID_CLAIM,
    PAIR,
    RECORDED,
    STATUS_SCHEMA,
    UNCHECKED,
    Batch,
    Clock,
    EventManifest,
    EventManifestUnavailable,
    ManifestCheck,
    findings_of,
    status_counts,
    utc_now,
)
from snowplow_assets.partition_tasks import map_partitions
from snowplow_assets.spark import observed_counts
from snowplow_assets.storage import LakeFileSystem

CONDITION = "(attribute_not_exists(eventId) AND attribute_not_exists(fingerprint)) OR #run = :run OR #ttl <= :now"
CLAIM_PREFIX = "id:"
CLAIM_FINGERPRINT = "-"
KEY_SCHEMA = {"eventId": "HASH", "fingerprint": "RANGE"}
TTL_ATTRIBUTE = "ttl"

RETRYABLE_CODES = frozenset(
    {
        "ProvisionedThroughputExceededException",
        "ThrottlingException",
        "RequestLimitExceeded",
        "InternalServerError",
        "ServiceUnavailable",
    }
)
_BATCH_GET_LIMIT = 100

T = TypeVar("T")
R = TypeVar("R")


@dataclass(frozen=True)
class DynamoDbConfig:
    """Where the table is and how hard to try. Shipped to the executors, so it holds no credentials."""

    table: str
    region: str
    endpoint_url: str | None = None
    max_attempts: int = 10
    backoff_base_seconds: float = 0.05
    backoff_cap_seconds: float = 5.0
    threads: int = 8
    # Keys in a row that may fail after all their attempts before a task stops trying (_TaskPuts).
    give_up_after_failures: int = 32

    def client(self, retry_here: bool = True) -> Any:
        """A DynamoDB client. With `retry_here` botocore does not retry: `_put` retries and counts it."""
        retries = {"total_max_attempts": 1} if retry_here else {"mode": "standard", "max_attempts": 5}
        config = BotoConfig(
            retries=retries,  # type: ignore[arg-type]
            connect_timeout=5,
            read_timeout=20,
            max_pool_connections=max(10, 2 * self.threads),
        )
        return boto3.client("dynamodb", region_name=self.region, endpoint_url=self.endpoint_url, config=config)

    def where(self) -> str:
        return f"table {self.table!r} in {self.region}" + (f" at {self.endpoint_url}" if self.endpoint_url else "")


class DynamoDbEventManifest(EventManifest):
    backend = "dynamodb"

    def __init__(
        self, config: DynamoDbConfig, fs: LakeFileSystem, ttl_days: int = DEFAULT_TTL_DAYS, clock: Clock = utc_now
    ) -> None:
        super().__init__(fs, ttl_days, clock)
        self.config = config

    def describe(self) -> str:
        return f"DynamoDB {self.config.where()}"

    def verify(self, rewriting: Collection[str] = ()) -> None:
        """The table exists and has the manifest's keys; a populate rewrites items one by one and needs no more."""
        verify_table(self.config)

    def expire(self) -> int:
        return 0  # the table's TTL deletes expired items; until it does, the condition ignores them

    def check_and_set(self, kept: DataFrame, batch: Batch, claim_ids: bool, work: str) -> ManifestCheck:
        groups = kept.groupBy("event_id").agg(
            F.array_sort(F.collect_set("fingerprint")).alias("fingerprints"),
            F.max(F.col("fingerprint").isNull()).alias("has_null"),
        )
        task = partial(
            _check_partition, self.config, batch.run, batch.etl_time, batch.ttl(self.ttl_days), self.now(), claim_ids
        )
        statuses = map_partitions(groups, task, STATUS_SCHEMA)
        findings = join_uri(work, "findings")
        counts = _materialise(statuses, findings, self.fs, self.config)
        return ManifestCheck(
            kept.sparkSession.read.schema(STATUS_SCHEMA).parquet(self.fs.spark_read_path(findings)), counts
        )

    keeps_entries_across_runs = True

    def forget(self, batch: Batch, keys: DataFrame) -> dict[str, int]:
        """Delete the items of `keys` that `batch` owns, each on the condition that its run is still this batch's.
        Items are written one by one, so those an earlier run of the batch recorded and this run no longer
        does (its folder's files changed since) stayed, and kept later batches' copies of events this batch no
        longer loads out of the lake (until 2026-11-28). A delete that fails leaves its item, as before."""
        task = partial(_forget_partition, self.config, batch.run)
        forgotten = map_partitions(keys.select("event_id", "fingerprint"), task, FORGET_SCHEMA)
        [row] = forgotten.agg(
            *(F.count_if(F.col("status") == status).alias(name) for status, name in FORGET_COUNTS.items())
        ).collect()
        return row.asDict()

    def lookup(self, keys: DataFrame) -> DataFrame:
        task = partial(_lookup_partition, self.config)
        return map_partitions(keys.select("event_id", "fingerprint").distinct(), task, ENTRY_SCHEMA)

    def _record_owned(self, batches: list[Batch], owned: DataFrame, work: str) -> dict[str, int]:
        # Item by item: an item a batch held before and no longer owns stays until its TTL deletes it.
        task = partial(_record_partition, self.config, self.now())
        statuses = map_partitions(owned, task, STATUS_SCHEMA)
        return _materialise(statuses, join_uri(work, "findings"), self.fs, self.config)


def _materialise(statuses: DataFrame, uri: str, fs: LakeFileSystem, config: DynamoDbConfig) -> dict[str, int]:
    """Run the puts exactly once: write the findings to `uri`, count every status on the way. Raise
    EventManifestUnavailable if every key failed (the module docstring's Failures)."""
    observation = Observation("dynamodb_event_manifest")
    findings_of(statuses.observe(observation, *status_counts())).write.parquet(fs.spark_path(uri))
    counts = observed_counts(observation)
    if counts["errors"] and not any(
        counts[name] for name in ("pairs_recorded", "ids_claimed", "pairs_held", "ids_held")
    ):
        findings = statuses.sparkSession.read.schema(STATUS_SCHEMA).parquet(fs.spark_read_path(uri))
        first = findings.where(F.col("status") == ERROR)
        raise EventManifestUnavailable(
            f"the event manifest DynamoDB {config.where()} could not write or check any of the {counts['errors']} "
            f"keys given to it: it cannot be used where Spark runs its tasks, whose AWS credentials and "
            f"permissions may not be this process's; the first failure: {first.select('error').first()['error']}"
        )
    return counts


# Table administration


def verify_table(config: DynamoDbConfig) -> None:
    """Raise EventManifestUnavailable unless the table exists, is active and has the manifest's keys."""
    table = _describe_table(config)
    if table is None:
        raise EventManifestUnavailable(
            f"the event manifest DynamoDB {config.where()} does not exist; create it with "
            "`snowplow-assets event-manifest create-table` (or set SNOWPLOW_EVENT_MANIFEST to lake or none)"
        )
    keys = {k["AttributeName"]: k["KeyType"] for k in table["KeySchema"]}
    if keys != KEY_SCHEMA:
        raise EventManifestUnavailable(
            f"the event manifest DynamoDB {config.where()} has the key schema {keys}, expected {KEY_SCHEMA}"
        )
    if table["TableStatus"] not in ("ACTIVE", "UPDATING"):
        raise EventManifestUnavailable(
            f"the event manifest DynamoDB {config.where()} is {table['TableStatus']}, not ACTIVE"
        )


def _describe_table(config: DynamoDbConfig) -> dict[str, Any] | None:
    try:
        return config.client(retry_here=False).describe_table(TableName=config.table)["Table"]
    except ClientError as error:
        if error.response.get("Error", {}).get("Code") == "ResourceNotFoundException":
            return None
        raise EventManifestUnavailable(f"cannot describe the DynamoDB {config.where()}: {_describe(error)}") from error
    except BotoCoreError as error:
        raise EventManifestUnavailable(f"cannot reach the DynamoDB {config.where()}: {error}") from error


def create_table(config: DynamoDbConfig) -> str:
    """Create the event manifest table (on-demand capacity) with TTL on `ttl`; say what was done.

    An existing table with the right keys is kept, and gets TTL enabled if it lacks it.
    """
    client = config.client(retry_here=False)
    existing = _describe_table(config)
    if existing is None:
        client.create_table(
            TableName=config.table,
            KeySchema=[{"AttributeName": name, "KeyType": kind} for name, kind in KEY_SCHEMA.items()],
            AttributeDefinitions=[{"AttributeName": name, "AttributeType": "S"} for name in KEY_SCHEMA],
            BillingMode="PAY_PER_REQUEST",
        )
        client.get_waiter("table_exists").wait(TableName=config.table)
        done = f"created {config.where()}"
    else:
        verify_table(config)
        done = f"{config.where()} already exists"
    ttl = client.describe_time_to_live(TableName=config.table)["TimeToLiveDescription"]
    if ttl.get("TimeToLiveStatus") in ("ENABLED", "ENABLING") and ttl.get("AttributeName") == TTL_ATTRIBUTE:
        return f"{done}; TTL is enabled on {TTL_ATTRIBUTE!r}"
    client.update_time_to_live(
        TableName=config.table, TimeToLiveSpecification={"Enabled": True, "AttributeName": TTL_ATTRIBUTE}
    )
    return f"{done}; TTL enabled on {TTL_ATTRIBUTE!r}"


# What runs on the executors


def _describe(error: Exception) -> str:
    if isinstance(error, ClientError):
        details = error.response.get("Error", {})
        return f"{details.get('Code', 'Unknown')}: {details.get('Message', '')}".strip()
    return f"{type(error).__name__}: {error}"


def _backoff(config: DynamoDbConfig, attempt: int) -> None:
    time.sleep(random.uniform(0, min(config.backoff_cap_seconds, config.backoff_base_seconds * 2**attempt)))


def _item(event_id: str, fingerprint: str | None, run: str, etl_time: int, ttl: int) -> dict[str, dict[str, str]]:
    key = (
        (event_id, _range_key(fingerprint)) if fingerprint is not None else (CLAIM_PREFIX + event_id, CLAIM_FINGERPRINT)
    )
    item = {
        "eventId": {"S": key[0]},
        "fingerprint": {"S": key[1]},
        "etlTime": {"N": str(etl_time)},
        TTL_ATTRIBUTE: {"N": str(ttl)},
        "run": {"S": run},
    }
    if fingerprint is not None and key[1] != fingerprint:
        item[FINGERPRINT_TEXT] = {"S": fingerprint}
    return item


RANGE_KEY_LIMIT = 1024  # bytes of UTF-8: DynamoDB's limit on a range key's value
FINGERPRINT_TEXT = "fingerprintText"  # a long fingerprint, whole (module doc)


def _range_key(fingerprint: str) -> str:
    text = fingerprint.encode("utf-8")
    return fingerprint if len(text) <= RANGE_KEY_LIMIT else "sha256:" + hashlib.sha256(text).hexdigest()


def _put(client: Any, config: DynamoDbConfig, item: dict[str, dict[str, str]], now: int) -> tuple[str, str | None, int]:
    """One conditional put: (status, error, retries)."""

    def put() -> None:
        client.put_item(
            TableName=config.table,
            Item=item,
            ConditionExpression=CONDITION,
            ExpressionAttributeNames={"#run": "run", "#ttl": TTL_ATTRIBUTE},
            ExpressionAttributeValues={":run": item["run"], ":now": {"N": str(now)}},
        )

    outcome, error, retries = _conditional(config, put, "write")
    return {_DONE: RECORDED, _REFUSED: HELD}.get(outcome, outcome), error, retries


def _delete_own(
    client: Any, config: DynamoDbConfig, key: dict[str, dict[str, str]], run: str
) -> tuple[str, str | None]:
    """One delete of an item, if `run` owns it: (FORGOTTEN, NOT_OWNED or ERROR, error)."""

    def delete() -> None:
        client.delete_item(
            TableName=config.table,
            Key=key,
            ConditionExpression="#run = :run",
            ExpressionAttributeNames={"#run": "run"},
            ExpressionAttributeValues={":run": {"S": run}},
        )

    outcome, error, _retries = _conditional(config, delete, "delete")
    return {_DONE: FORGOTTEN, _REFUSED: NOT_OWNED}.get(outcome, outcome), error


_DONE, _REFUSED = "done", "refused"


def _conditional(config: DynamoDbConfig, request: Callable[[], object], action: str) -> tuple[str, str | None, int]:
    """One conditional request, retried on throttling and transient errors: (_DONE, _REFUSED by its condition,
    or ERROR; the error; retries)."""
    last = ""
    for attempt in range(config.max_attempts):
        try:
            request()
            return _DONE, None, attempt
        except ClientError as error:
            code = error.response.get("Error", {}).get("Code", "")
            if code == "ConditionalCheckFailedException":
                return _REFUSED, None, attempt
            if code not in RETRYABLE_CODES:
                return ERROR, f"event manifest {action} failed: {_describe(error)}", attempt
            last = _describe(error)
        except (BotoConnectionError, HTTPClientError) as error:
            last = _describe(error)
        except BotoCoreError as error:
            return ERROR, f"event manifest {action} failed: {_describe(error)}", attempt
        if attempt + 1 < config.max_attempts:
            _backoff(config, attempt)
    return (
        ERROR,
        f"event manifest {action} failed after {config.max_attempts} attempts: {last}",
        config.max_attempts - 1,
    )


class _TaskPuts:
    """One task's conditional puts, which stop once `give_up_after_failures` keys in a row have failed."""

    def __init__(self, config: DynamoDbConfig, now: int) -> None:
        self.config, self.now, self.client = config, now, config.client()
        self._lock = threading.Lock()
        self._failed_in_a_row = 0
        self._given_up: str | None = None  # the failure that ended the run of failures

    def put(self, item: dict[str, dict[str, str]]) -> tuple[str, str | None, int]:
        if self._given_up is not None:
            limit = self.config.give_up_after_failures
            return ERROR, f"not attempted after {limit} keys in a row failed, the last: {self._given_up}", 0
        status, error, retries = _put(self.client, self.config, item, self.now)
        with self._lock:
            self._failed_in_a_row = self._failed_in_a_row + 1 if status == ERROR else 0
            if self._failed_in_a_row >= self.config.give_up_after_failures and self._given_up is None:
                self._given_up = error
        return status, error, retries


def _in_threads(function: Callable[[T], R], items: Iterable[T], threads: int) -> Iterator[R]:
    """`map` with at most a few items in flight per thread, so a large partition is never all in memory."""
    with ThreadPoolExecutor(max_workers=threads) as pool:
        pending: set = set()
        for item in items:
            pending.add(pool.submit(function, item))
            if len(pending) >= 4 * threads:
                done, pending = wait(pending, return_when=FIRST_COMPLETED)
                yield from (future.result() for future in done)
        for future in pending:
            yield future.result()


Status = tuple[str, str | None, str, str, str | None, int]


def _check_partition(
    config: DynamoDbConfig, run: str, etl_time: int, ttl: int, now: int, claim_ids: bool, groups: Iterable[Any]
) -> Iterator[Status]:
    puts = _TaskPuts(config, now)

    def check(group: Any) -> list[Status]:
        event_id, fingerprints, has_null = group["event_id"], group["fingerprints"], group["has_null"]
        statuses: list[Status] = []
        claim_error = None
        if claim_ids:
            status, error, retries = puts.put(_item(event_id, None, run, etl_time, ttl))
            statuses.append((event_id, None, ID_CLAIM, status, error, retries))
            claim_error = error if status == ERROR else None
        for fingerprint in fingerprints:
            if claim_error is not None:
                statuses.append((event_id, fingerprint, PAIR, ERROR, f"not checked: {claim_error}", 0))
                continue
            status, error, retries = puts.put(_item(event_id, fingerprint, run, etl_time, ttl))
            statuses.append((event_id, fingerprint, PAIR, status, error, retries))
        if has_null:
            statuses.append((event_id, None, PAIR, UNCHECKED, None, 0))
        return statuses

    for statuses in _in_threads(check, groups, config.threads):
        yield from statuses


def _record_partition(config: DynamoDbConfig, now: int, entries: Iterable[Any]) -> Iterator[Status]:
    puts = _TaskPuts(config, now)

    def record(entry: Any) -> Status:
        item = _item(entry["event_id"], entry["fingerprint"], entry["run"], entry["etl_time"], entry["ttl"])
        status, error, retries = puts.put(item)
        kind = PAIR if entry["fingerprint"] is not None else ID_CLAIM
        return entry["event_id"], entry["fingerprint"], kind, status, error, retries

    yield from _in_threads(record, entries, config.threads)


FORGOTTEN, NOT_OWNED = "forgotten", "not_owned"
FORGET_SCHEMA = StructType([StructField("status", StringType()), StructField("error", StringType())])
# Each status of `forget`, as the counts name it.
FORGET_COUNTS = {
    FORGOTTEN: "stale_entries_removed",
    NOT_OWNED: "stale_entries_not_owned",
    ERROR: "stale_entries_not_removed",
}


def _forget_partition(config: DynamoDbConfig, run: str, keys: Iterable[Any]) -> Iterator[tuple[str, str | None]]:
    client = config.client()

    def forget(key: Any) -> tuple[str, str | None]:
        item = _item(key["event_id"], key["fingerprint"], run, 0, 0)
        return _delete_own(client, config, {"eventId": item["eventId"], "fingerprint": item["fingerprint"]}, run)

    yield from _in_threads(forget, keys, config.threads)


def _lookup_partition(config: DynamoDbConfig, keys: Iterable[Any]) -> Iterator[tuple]:
    """Consistent BatchGetItem reads of the keys; a key that cannot be read fails the task."""
    client = config.client()
    chunk: list[dict[str, dict[str, str]]] = []
    for key in keys:
        item = _item(key["event_id"], key["fingerprint"], "", 0, 0)
        chunk.append({"eventId": item["eventId"], "fingerprint": item["fingerprint"]})
        if len(chunk) == _BATCH_GET_LIMIT:
            yield from _batch_get(client, config, chunk)
            chunk = []
    if chunk:
        yield from _batch_get(client, config, chunk)


def _batch_get(client: Any, config: DynamoDbConfig, keys: list[dict[str, dict[str, str]]]) -> Iterator[tuple]:
    request: dict[str, Any] = {config.table: {"Keys": keys, "ConsistentRead": True}}
    for attempt in range(config.max_attempts):
        try:
            response = client.batch_get_item(RequestItems=request)
        except ClientError as error:
            if error.response.get("Error", {}).get("Code") not in RETRYABLE_CODES:
                raise
        except (BotoConnectionError, HTTPClientError):
            pass
        else:
            for item in response.get("Responses", {}).get(config.table, []):
                yield _entry_row(item)
            request = response.get("UnprocessedKeys") or {}
            if not request:
                return
        _backoff(config, attempt)
    raise RuntimeError(
        f"could not read the event manifest DynamoDB {config.where()} after {config.max_attempts} attempts"
    )


def _entry_row(item: dict[str, dict[str, str]]) -> tuple:
    event_id, fingerprint = item["eventId"]["S"], item.get(FINGERPRINT_TEXT, item["fingerprint"])["S"]
    if event_id.startswith(CLAIM_PREFIX):
        event_id, fingerprint = event_id.removeprefix(CLAIM_PREFIX), None
    number = lambda name: int(item[name]["N"]) if name in item else None  # noqa: E731
    return event_id, fingerprint, item.get("run", {}).get("S"), number("etlTime"), number(TTL_ATTRIBUTE)
