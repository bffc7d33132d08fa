"""The event manifest: what earlier batches recorded, for cross-batch deduplication (FORMATS.md §5).

An *entry* says that one batch holds one key until its `ttl`. There are two kinds of key:

- a **pair** (event_id, fingerprint): the batch loaded an event with this id and payload. A later batch
  with the same pair holds a *cross-batch natural duplicate*, which is dropped.
- an **id claim** (event_id alone): the batch recorded an event with this id. A later batch with an
  event of this id and another fingerprint holds a *cross-batch synthetic duplicate*, which gets a new
  id (events/dedup.py). In DataFrames crossing this interface an id claim is a row with a null
  fingerprint.

**Which batch owns an entry.** The check-and-set writes an entry only when no live entry for the key
exists, when the existing one belongs to this batch, or when it has expired. So the *first batch
processed* owns a key, whatever the order of the batches' data: processing batch 5 before batch 4 makes
batch 5 the owner, and batch 4 then drops its copy. A batch is identified by its run folder name (the
Dagster partition key). Snowplow identified a batch by its etlTime alone; the run folder is used here
because two run folders can share an earliest etl_tstamp (a copied or re-landed folder), and those
must be two batches, or the copy would be loaded twice. The batch etlTime (the earliest etl_tstamp of
the batch, epoch seconds, see `batch_etl_time`) is still recorded in every entry and, with the run
folder's time when that is later, sets its ttl (`Batch.ttl`).

**Why reruns are safe.** A rerun of a batch finds its own entries and rewrites them, so it drops none of
its own events, and since it sees exactly the entries of other batches it saw before (none was written
over its own), it takes the same decisions and writes the same output. The one exception is time: an
entry of another batch that expired in between no longer counts.

**Expiry.** An entry is live while `now < ttl`. An expired entry is ignored by every check and may be
written over; the lake backend compacts expired batches away, DynamoDB deletes them through its TTL.

**Null fingerprints.** An event without a fingerprint can never be a natural duplicate (the same rule
as in-batch), so no pair is checked or recorded for it; its id is still claimed.

This package never imports dagster: defs/ wires it.
"""

from __future__ import annotations

import abc
from collections.abc import Callable, Collection
from dataclasses import dataclass, field
from datetime import datetime, timezone

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import IntegerType, LongType, StringType, StructField, StructType

from snowplow_assets.lake import run_folder_time, validate_run_folder
from snowplow_assets.storage import LakeFileSystem

DEFAULT_TTL_DAYS = 180
SECONDS_PER_DAY = 86_400

# The two kinds of key.
PAIR = "pair"
ID_CLAIM = "id"

# Status of a key after a check-and-set.
RECORDED = "recorded"  # the entry now belongs to this batch (new, its own from an earlier run, or expired)
HELD = "held"  # a live entry of another batch holds it
ERROR = "error"  # the manifest could not be checked or written for it
UNCHECKED = "unchecked"  # a pair with a null fingerprint, which is never checked

# One row per distinct pair of the kept events (a null fingerprint once per event_id), and with id claims
# one row per distinct event_id (kind = id, fingerprint null).
STATUS_SCHEMA = StructType(
    [StructField(name, StringType()) for name in ("event_id", "fingerprint", "kind", "status", "error")]
    + [StructField("retries", IntegerType())]
)
# What a lookup returns for a key that has an entry (live or expired); a null fingerprint is an id claim.
ENTRY_SCHEMA = StructType(
    [StructField(name, StringType()) for name in ("event_id", "fingerprint", "run")]
    + [StructField(name, LongType()) for name in ("etl_time", "ttl")]
)

Clock = Callable[[], datetime]


def utc_now() -> datetime:
    return datetime.now(timezone.utc)


class EventManifestUnavailable(RuntimeError):
    """The manifest cannot be used at all (missing table, no access): the batch must not be processed."""


class ConcurrentManifestWrite(RuntimeError):
    """Another writer changed the manifest while this batch was being checked; nothing was published."""


@dataclass(frozen=True)
class Batch:
    run: str  # the run folder: the identity that owns entries
    etl_time: int  # epoch seconds

    def __post_init__(self) -> None:
        validate_run_folder(self.run)

    def ttl(self, ttl_days: int) -> int:
        """When the batch's entries expire: `ttl_days` after its etlTime, or after its run folder's time when
        that is later. FORMATS.md §5 counts from etlTime alone, the earliest etl_tstamp, and one replayed event
        enriched in January made every entry of a November batch expire as it was written: cross-batch
        deduplication did nothing for the whole batch, and its check passed (until 2026-11-28). etlTime itself
        stays as Snowplow defines it; a batch whose folder is as old (an archive reprocessed) still expires
        at once. A folder name that is no instant (`run=2026-02-30-…`) counts from etlTime alone."""
        folder_time = run_folder_time(self.run)
        start = self.etl_time if folder_time is None else max(self.etl_time, int(folder_time.timestamp()))
        return start + ttl_days * SECONDS_PER_DAY


def batch_etl_time(earliest_etl_time: int | None, run: str) -> int:
    """The batch etlTime: the earliest etl_tstamp of its events in epoch seconds, as Snowplow defines it.

    `earliest_etl_time` comes from Spark's `unix_seconds(min(etl_tstamp))`. A batch whose events all lack
    an etl_tstamp falls back to its run folder's time, which is just as stable on a rerun.
    """
    if earliest_etl_time is not None:
        return int(earliest_etl_time)
    folder_time = run_folder_time(run)
    return 0 if folder_time is None else int(folder_time.timestamp())  # no time at all: its entries expire at once


@dataclass
class ManifestCheck:
    """The outcome of a check-and-set.

    `findings` are the statuses (STATUS_SCHEMA) that are not simply this batch's: keys held by another
    batch or in error. They are materialised and small. `counts` are per key, not per line:
    pairs_recorded, ids_claimed, pairs_held, ids_held, errors (keys the manifest could not check),
    retries (requests retried after throttling or a transient error), and whatever the backend adds.
    """

    findings: DataFrame
    counts: dict[str, int] = field(default_factory=dict)


def status_counts() -> list[Column]:
    """Aggregations over a STATUS_SCHEMA DataFrame, named as `ManifestCheck.counts` names them."""
    pair, claim = F.col("kind") == PAIR, F.col("kind") == ID_CLAIM
    return [
        F.count_if(pair & (F.col("status") == RECORDED)).alias("pairs_recorded"),
        F.count_if(claim & (F.col("status") == RECORDED)).alias("ids_claimed"),
        F.count_if(pair & (F.col("status") == HELD)).alias("pairs_held"),
        F.count_if(claim & (F.col("status") == HELD)).alias("ids_held"),
        F.count_if(F.col("status") == ERROR).alias("errors"),
        F.coalesce(F.sum("retries"), F.lit(0)).alias("retries"),
    ]


def findings_of(statuses: DataFrame) -> DataFrame:
    return statuses.where(F.col("status").isin(HELD, ERROR))


class EventManifest(abc.ABC):
    """One event manifest backend. See the module docstring for the semantics every backend honours."""

    backend: str

    def __init__(self, fs: LakeFileSystem, ttl_days: int = DEFAULT_TTL_DAYS, clock: Clock = utc_now) -> None:
        if ttl_days < 1:
            raise ValueError(f"event manifest TTL must be at least one day, got {ttl_days}")
        self.fs = fs  # for the work folders in the lake
        self.ttl_days = ttl_days
        self.clock = clock

    def now(self) -> int:
        return int(self.clock().timestamp())

    @abc.abstractmethod
    def describe(self) -> str:
        """Where the manifest lives, for logs and metadata."""

    @abc.abstractmethod
    def verify(self, rewriting: Collection[str] = ()) -> None:
        """Raise EventManifestUnavailable with a clear reason if the manifest cannot be used.

        The entries of the batches (run folders) in `rewriting` are about to be replaced as a whole, by a
        populate, so they need not be intact: that is how lost entries are rebuilt.
        """

    @abc.abstractmethod
    def check_and_set(self, kept: DataFrame, batch: Batch, claim_ids: bool, work: str) -> ManifestCheck:
        """Check every kept event against the manifest and record this batch's entries.

        `kept` has one row per event kept after in-batch natural deduplication: `event_id, fingerprint`
        (the same pair can repeat only with a null fingerprint). Every distinct pair with a fingerprint is
        checked and recorded when free; with `claim_ids`, every distinct event_id is claimed when free.
        `work` is a lake folder that does not exist yet, for this call's intermediate data; the findings
        returned are read from it, so it must outlive their use.
        """

    def names_batch(self, run: str) -> bool:
        """Whether the manifest says, without a Spark job, that it holds entries of batch `run` (live or not).
        A backend that cannot tell (DynamoDB: one item per key, no index of batches) answers False, and the
        batch's journal (claims_journal.py) names what its runs wrote."""
        return False

    # Whether entries an earlier run of a batch recorded stay when a later run of it no longer records them,
    # until `forget` removes them; the lake's check rewrites a batch's entries whole, and has none left over.
    keeps_entries_across_runs = False

    def forget(self, batch: Batch, keys: DataFrame) -> dict[str, int]:
        """Remove the entries of `keys` (`event_id, fingerprint`; null = id claim) that `batch` owns: those an
        earlier run of it recorded and its latest run no longer does. Counts by outcome."""
        return {}

    @abc.abstractmethod
    def lookup(self, keys: DataFrame) -> DataFrame:
        """The entries (ENTRY_SCHEMA, live or expired) of `keys` (`event_id, fingerprint`; null = id claim)."""

    @abc.abstractmethod
    def expire(self) -> int:
        """Remove expired entries where the backend has to do it itself; return how many batches went."""

    def populate(self, batches: list[Batch], entries: DataFrame, claim_ids: bool, work: str) -> dict[str, int]:
        """Record what `batches` loaded (`entries`: `run, etl_time, event_id, fingerprint, renamed`) as their owners.

        `event_id` is the event's original id and `renamed` says whether the batch loaded it under a new
        one. A batch whose entries would already have expired records nothing, and is left out before the
        owners are chosen: who owns a key among the remaining batches is `owners`. A live entry of any
        other batch keeps its key. Every batch given is rewritten, an expired one as nothing: entries recorded
        under an earlier etlTime may still be live (a run whose events all failed records a batch etlTime its
        output, with no event, cannot give back; skipped_batch.py).
        """
        now = self.now()
        # Expired batches go first, not after the owners are chosen: the manifest ignored an expired entry,
        # so a later batch that loaded the key again once it had expired recorded it, and owns it here too.
        # Were the owners chosen first, the expired batch would win the key by its earlier etlTime and record
        # nothing.
        unexpired = entries.where(entry_ttl(self.ttl_days) > F.lit(now))
        return self._record_owned(batches, owners(unexpired, claim_ids, self.ttl_days), work)

    @abc.abstractmethod
    def _record_owned(self, batches: list[Batch], owned: DataFrame, work: str) -> dict[str, int]:
        """Record entries (ENTRY_SCHEMA) whose owner is decided, unless a live entry of another batch holds them.

        Where a backend can, it replaces everything `batches` held before: they are rewritten as a whole.
        """


def manifest_keys(events: DataFrame, claim_ids: bool) -> DataFrame:
    """The keys a check-and-set of `events` (`event_id, fingerprint`) records: a pair per fingerprint, and with
    `claim_ids` a claim per id (a null fingerprint); distinct."""
    keys = events.where(F.col("fingerprint").isNotNull()).select("event_id", "fingerprint")
    if claim_ids:
        keys = keys.unionByName(events.select("event_id", F.lit(None).cast("string").alias("fingerprint")))
    return keys.distinct()


def entry_ttl(ttl_days: int, run: str = "run", etl_time: str = "etl_time") -> Column:
    """`Batch.ttl` of the columns `run` and `etl_time`, in Spark: the later of the two times, plus the TTL."""
    # try_: a folder name that is no instant (`run=2026-02-30-…`) counts from etlTime alone, as in Batch.ttl.
    folder_time = F.unix_seconds(
        F.try_to_timestamp(F.substring(run, len("run=") + 1, 19), F.lit("yyyy-MM-dd-HH-mm-ss"))
    )
    return F.greatest(F.col(etl_time), folder_time) + F.lit(ttl_days * SECONDS_PER_DAY)


def owners(entries: DataFrame, claim_ids: bool, ttl_days: int) -> DataFrame:
    """One ENTRY_SCHEMA row per pair (and per id with `claim_ids`) of `entries`, with the batch that owns it.

    An id belongs to the batch that loaded an event under that id rather than renaming it. With cross-batch
    synthetic dedup on there is only one such batch, the one whose check-and-set recorded the claim,
    whatever order the batches were processed in. Next come the batches that renamed several events of the
    id (in-batch synthetic duplicates), which claimed it unless another batch held it first, and last those
    that renamed their one event of it: a lone event is renamed because another batch held its id, unless its
    in-batch copies were dropped as another batch's events, so such a batch seldom claimed it. Between batches
    of one rank (output loaded without the manifest), and for pairs, the batch with the earliest etlTime
    (then run name) owns the key: the order in which the batches were most likely processed. (Until
    2026-11-28 a batch that renamed its lone copy could win the id by its earlier etlTime from the batch that
    claimed it, and its rerun then loaded that copy under the id; a DynamoDB manifest kept the claimer's item.)
    """
    keys = entries.where(F.col("fingerprint").isNotNull()).select(
        "event_id", "fingerprint", F.lit(False).alias("renamed"), F.lit(False).alias("lone"), "etl_time", "run"
    )
    if claim_ids:
        claims = entries.groupBy("run", "etl_time", "event_id").agg(
            F.min("renamed").alias("renamed"), (F.count(F.lit(1)) == 1).alias("lone")
        )
        no_fingerprint = F.lit(None).cast("string").alias("fingerprint")
        keys = keys.unionByName(claims.select("event_id", no_fingerprint, "renamed", "lone", "etl_time", "run"))
    owner = F.min(F.struct("renamed", "lone", "etl_time", "run")).alias("owner")
    first = keys.groupBy("event_id", "fingerprint").agg(owner)
    return first.select(
        "event_id",
        "fingerprint",
        F.col("owner.run").alias("run"),
        F.col("owner.etl_time").alias("etl_time"),
        entry_ttl(ttl_days, "owner.run", "owner.etl_time").alias("ttl"),
    )
