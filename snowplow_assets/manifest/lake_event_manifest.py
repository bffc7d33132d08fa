"""The event manifest as Parquet in the lake, checked with a Spark join: the embedded default backend.

Layout under `event-manifest/` (paths in lake.py):

    batches.json                            the index: per batch, its current entry folder, etlTime, ttl
    entries/run=….<created>.<token>/part-*.parquet
                                            one published version of one batch's entries (ENTRY_SCHEMA),
                                            <created> the UTC second its folder was made (20260310T120005Z)

**Publishing.** One Spark pass writes a batch's new entries and its findings into the caller's work folder
(the shred job's staging); the entries are moved to a fresh entry folder and become current when the index
is rewritten: one whole-file write, atomic on a local disk and on S3 alike. Only then is the batch's
previous folder deleted. A rerun of one batch therefore replaces exactly that batch's
entries, at once, and never touches another batch's. A crash leaves the previous index, whose folders
all still exist, plus an orphan folder that a later compaction deletes (see Orphans).

**Serialisation.** A check-and-set here is read, join, write, so two writers at once could both record
the same pair. Runs that write this manifest are serialised by a tag concurrency limit in dagster.yaml
(the tag is set on the shred and populate jobs). As a second line of defence every write of the index is a
compare-and-swap against the index as read at the start of the check (`write_text_if_unchanged`: S3's
conditional PUT, a lock-guarded comparison on a local disk): a writer whose index another writer rewrote,
created or removed in between publishes nothing and fails with `ConcurrentManifestWrite`; its rerun then
decides against the new state. Compaction writes the index the same way. The index still counts its writes
in `version`, for the people who read it; the race is decided by the storage's token alone. On S3, an index
write that S3 applied but whose answer was lost fails its own condition when the client retries it; the index
read back is then this writer's, byte for byte, and the write counts as published (storage/s3.py), not as
another run's.

**Expiry.** All entries of a batch share its ttl (`Batch.ttl`), so expiry is per batch: reads
skip expired batches using the index alone, and compaction, at the start of every check-and-set, drops
them from the index and deletes their folders. The index's ttl is read as at least what `Batch.ttl` gives
now: a batch recorded before 2026-11-28 counted from its etlTime alone.

**Orphans.** Compaction also deletes the entry folders no index names, but only those older than
`ORPHAN_GRACE` (an hour). A folder the index does not name is either left by a crash between the move and
the index write, or in flight: another writer has moved its entries there and is about to publish the index
that names it. Deleted, the second would be published naming a folder that is gone (`verify` then stops every
check). The two look alike in a listing; only age tells them apart. A folder's age is taken from its name:
`_publish` names it with the time it makes it, by the manifest's clock, the same on a local disk and on S3 and
without a request per folder. A check moves its folder and writes the index within seconds, so an hour spares
every folder in flight, tolerates clocks that disagree by less than that, and still removes a crash's folder
at the first compaction an hour later. A folder whose time lies ahead of the clock is spared until it is an
hour old by that clock. The limit: the grace has to outlast a writer's whole publish, from its first move to
its index write, and a populate moves the folders of all its batches one after another before it writes the
index; one that took over an hour could lose its first folders to a compaction running at the same time. That
is the overlap the tag concurrency limit already rules out; `verify` would then name the batches to rebuild.
Folders named before 2026-11-27 (`run=….<token>`, no time) are as old as the newest of their own listing's
modification times and those of their files: on S3 the time their files were copied in by the move, on a local
disk the time the folder last changed (the rename into `entries/` keeps it, which Spark's commit just before
set). That costs one listing per such orphan, and only until it is an hour old and goes. Anything else under
`entries/` is judged the same way: this backend wrote it or it was put there by hand, and an hour later it
goes.

Cost: every check reads the entries of every live batch. That suits the embedded default up to a few
hundred million entries; beyond that, or with many writers at once, use the DynamoDB backend.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Collection
from dataclasses import asdict, dataclass
from datetime import datetime, timedelta, timezone

from botocore.exceptions import BotoCoreError, ClientError
from pyspark.errors import AnalysisException
from pyspark.sql import DataFrame, Observation, SparkSession
from pyspark.sql import functions as F

from snowplow_assets.lake import (
    Lake,
    event_manifest_folder_created,
    event_manifest_folder_name,
    join_uri,
    run_folder_time,
    validate_event_manifest_folder,
    validate_run_folder,
)
from snowplow_assets.manifest.base import (
    DEFAULT_TTL_DAYS,
    ENTRY_SCHEMA,
    HELD,
    ID_CLAIM,
    PAIR,
    RECORDED,
    STATUS_SCHEMA,
    UNCHECKED,
    Batch,
    Clock,
    ConcurrentManifestWrite,
    EventManifest,
    EventManifestUnavailable,
    ManifestCheck,
    status_counts,
    utc_now,
)
from snowplow_assets.spark import observed_counts, session_conf, single_phase_aggregation, unsorted_partitioned_write
from snowplow_assets.storage import FileChangedSinceRead, FileEntry, LakeFileSystem

INDEX_FORMAT = 1
# What the lake's storage raises once it gives up: a local disk, or S3 after its client's own retries.
STORAGE_ERRORS = (OSError, BotoCoreError, ClientError)
# How old a folder under entries/ that no index names must be before compaction deletes it (module docstring).
ORPHAN_GRACE = timedelta(hours=1)


@dataclass(frozen=True)
class BatchEntries:
    folder: str | None  # None: the batch holds no entries (a folder with no files does not exist on S3)
    etl_time: int
    ttl: int
    recorded_at: str


@dataclass(frozen=True)
class ManifestIndex:
    version: int
    batches: dict[str, BatchEntries]
    token: str | None  # the storage's token of the index as read (None: there was none), for publishing

    def live(self, now: int) -> dict[str, BatchEntries]:
        return {run: b for run, b in self.batches.items() if b.ttl > now}


class LakeEventManifest(EventManifest):
    backend = "lake"

    def __init__(
        self, fs: LakeFileSystem, lake: Lake, ttl_days: int = DEFAULT_TTL_DAYS, clock: Clock = utc_now
    ) -> None:
        super().__init__(fs, ttl_days, clock)
        self.lake = lake

    def describe(self) -> str:
        return self.lake.event_manifest

    def verify(self, rewriting: Collection[str] = ()) -> None:
        """The index is readable and names no entry folder that is gone (one listing of `entries/`).

        A lost folder is this backend's missing table: checked against what is left, copies of that batch's
        events would be loaded again, so no batch is checked until the folder is restored or rebuilt.
        """
        needed = {
            b.folder: run
            for run, b in self.read_index().live(self.now()).items()
            if b.folder is not None and run not in rewriting
        }
        if not needed:
            return
        try:
            present = {entry.name for entry in self.fs.list_dir(self.lake.event_manifest_entries)}
        except STORAGE_ERRORS as error:
            raise EventManifestUnavailable(
                f"cannot list the event manifest entries {self.describe()}: {error}"
            ) from error
        lost = sorted(run for folder, run in needed.items() if folder not in present)
        if lost:
            # A name that is no instant (`run=2026-02-30-…`) is populated from any day (populate.py).
            since = min((cut.date() for run in lost if (cut := run_folder_time(run))), default="1970-01-01")
            raise EventManifestUnavailable(
                f"the event manifest {self.describe()} has lost the entries of {len(lost)} batch(es), "
                f"{', '.join(lost[:3])}{', …' if len(lost) > 3 else ''}: their folders under entries/ are gone, "
                "and copies of their events would be loaded again. Restore the folders, or rebuild the entries "
                "from the shredded output with "
                f"`snowplow-assets event-manifest populate --since {since}`"
            )

    # The index

    def names_batch(self, run: str) -> bool:
        return run in self.read_index().batches

    def read_index(self) -> ManifestIndex:
        uri = self.lake.event_manifest_index
        try:
            text, token = self.fs.read_text_with_token(uri)
        except STORAGE_ERRORS as error:
            raise EventManifestUnavailable(f"cannot read the event manifest index {uri}: {error}") from error
        if text is None:
            return ManifestIndex(0, {}, None)
        try:
            data = json.loads(text)
            if data.get("format") != INDEX_FORMAT:
                raise ValueError(f"unknown format {data.get('format')!r}")
            batches = {
                validate_run_folder(run): BatchEntries(
                    folder=None if entry["folder"] is None else validate_event_manifest_folder(entry["folder"]),
                    etl_time=int(entry["etl_time"]),
                    # Never sooner than the rule gives: a batch recorded before 2026-11-28 counted its ttl from its
                    # etlTime alone, and one replayed event enriched long ago left it expired as it was written.
                    ttl=max(int(entry["ttl"]), Batch(run, int(entry["etl_time"])).ttl(self.ttl_days)),
                    recorded_at=str(entry["recorded_at"]),
                )
                for run, entry in data["batches"].items()
            }
            return ManifestIndex(int(data["version"]), batches, token)
        except (ValueError, KeyError, TypeError, AttributeError) as error:
            raise EventManifestUnavailable(f"the event manifest index {uri} is unreadable: {error}") from error

    def _publish_index(self, batches: dict[str, BatchEntries], read: ManifestIndex) -> None:
        """Write the index of `batches` in place of `read`, only if it is still the index there."""
        uri = self.lake.event_manifest_index
        document = {
            "format": INDEX_FORMAT,
            "version": read.version + 1,
            "batches": {run: asdict(b) for run, b in sorted(batches.items())},
        }
        try:
            self.fs.write_text_if_unchanged(uri, json.dumps(document, indent=1), read.token)
        except FileChangedSinceRead as error:
            raise ConcurrentManifestWrite(
                f"the event manifest index {uri} changed while this batch was being checked (it was read at "
                f"version {read.version}): another run wrote it at the same time. Nothing was published; "
                "rerun this batch."
            ) from error

    # Reading entries

    def _read_entries(self, spark: SparkSession, batches: dict[str, BatchEntries]) -> DataFrame:
        folders = [self.lake.event_manifest_entry_folder(b.folder) for b in batches.values() if b.folder is not None]
        if not folders:
            return spark.createDataFrame([], ENTRY_SCHEMA)
        try:  # Spark lists every folder now, once, instead of one existence check per batch here
            return spark.read.schema(ENTRY_SCHEMA).parquet(*(self.fs.spark_read_path(f) for f in sorted(folders)))
        except AnalysisException as error:
            raise EventManifestUnavailable(
                f"an entry folder the event manifest index names is missing: {error}"
            ) from error

    def lookup(self, keys: DataFrame) -> DataFrame:
        spark, index = keys.sparkSession, self.read_index()
        entries = self._read_entries(spark, index.batches)
        matches = (keys["event_id"] == entries["event_id"]) & keys["fingerprint"].eqNullSafe(entries["fingerprint"])
        # An entry expires with its batch, as the index says (read_index), not by the ttl written beside it then.
        ttls = spark.createDataFrame([(run, b.ttl) for run, b in index.batches.items()], "run STRING, _ttl BIGINT")
        found = entries.join(keys, matches, "left_semi").join(F.broadcast(ttls), "run")
        return found.withColumn("ttl", F.col("_ttl")).select(*ENTRY_SCHEMA.fieldNames())

    # Writing

    def expire(self) -> int:
        index = self.read_index()
        live = index.live(self.now())
        if len(live) != len(index.batches):
            self._publish_index(live, index)
        # The index named the expired batches' folders: published, never in flight, so they go at once.
        for run, expired in index.batches.items():
            if run not in live and expired.folder is not None:
                self.fs.delete(self.lake.event_manifest_entry_folder(expired.folder))
        current = {b.folder for b in live.values()}
        for entry in self.fs.list_dir(self.lake.event_manifest_entries):
            if entry.name not in current and self._is_abandoned(entry):
                self.fs.delete(entry.uri)
        return len(index.batches) - len(live)

    def _is_abandoned(self, entry: FileEntry) -> bool:
        """Whether `entry`, under entries/ but named by no index, is old enough to be no writer's folder in flight."""
        created = event_manifest_folder_created(entry.name)
        if created is not None:
            made = created.timestamp()
        else:  # no time in its name: the newest time its listing shows
            made = max([entry.modified, *(f.modified for f in self.fs.list_files(entry.uri))])
        return self.now() - made >= ORPHAN_GRACE.total_seconds()

    def check_and_set(self, kept: DataFrame, batch: Batch, claim_ids: bool, work: str) -> ManifestCheck:
        spark = kept.sparkSession
        expired = self.expire()
        index = self.read_index()
        others = self._read_entries(spark, {r: b for r, b in index.live(self.now()).items() if r != batch.run})

        # This batch's keys and the live keys of other batches, side by side in one aggregation. Each kept
        # event gives its pair and, with claim_ids, its id claim, from one read of `kept`.
        kind = F.when(F.col("fingerprint").isNull(), F.lit(ID_CLAIM)).otherwise(F.lit(PAIR))
        keys = [F.struct("event_id", "fingerprint", F.lit(PAIR).alias("kind"))]
        if claim_ids:
            keys.append(
                F.struct("event_id", F.lit(None).cast("string").alias("fingerprint"), F.lit(ID_CLAIM).alias("kind"))
            )
        mine = kept.select(F.explode(F.array(*keys)).alias("_key")).select("_key.*", F.lit(True).alias("_mine"))
        theirs = others.select("event_id", "fingerprint", kind.alias("kind"), F.lit(False).alias("_mine"))
        status = (
            F.when((F.col("kind") == PAIR) & F.col("fingerprint").isNull(), F.lit(UNCHECKED))
            .when(F.col("_held"), F.lit(HELD))
            .otherwise(F.lit(RECORDED))
        )
        statuses = (
            mine.unionByName(theirs)
            .groupBy("event_id", "fingerprint", "kind")
            .agg(F.max("_mine").alias("_mine"), F.max(~F.col("_mine")).alias("_held"))
            .where(F.col("_mine"))
            .select("event_id", "fingerprint", "kind", status.alias("status"))
        )

        # One pass writes both this batch's entries and the findings, each into its own folder, with a file
        # open for each rather than sorting every key by its folder (at 1,000,000 events that sort spilled).
        # Nearly every key is distinct, so it is aggregated once, after the shuffle.
        observation = Observation("lake_event_manifest")
        entries_and_findings = (
            statuses.withColumns({"error": F.lit(None).cast("string"), "retries": F.lit(0)})
            .observe(observation, *status_counts())
            .where(F.col("status").isin(RECORDED, HELD))
            .withColumns(
                {
                    "run": F.lit(batch.run),
                    "etl_time": F.lit(batch.etl_time).cast("bigint"),
                    "ttl": F.lit(batch.ttl(self.ttl_days)).cast("bigint"),
                    "_out": F.when(F.col("status") == RECORDED, F.lit("entries")).otherwise(F.lit("findings")),
                }
            )
        )
        with session_conf(spark, {**unsorted_partitioned_write(open_files_per_task=2), **single_phase_aggregation()}):
            entries_and_findings.write.partitionBy("_out").parquet(self.fs.spark_path(work))
        counts = observed_counts(observation)
        self._publish({batch.run: (join_uri(work, "_out=entries"), batch)}, index)
        findings = join_uri(work, "_out=findings")
        if self.fs.exists(findings):
            found = spark.read.schema(STATUS_SCHEMA).parquet(self.fs.spark_read_path(findings))
        else:
            found = spark.createDataFrame([], STATUS_SCHEMA)
        return ManifestCheck(found, {**counts, "expired_batches_removed": expired})

    def _publish(
        self, staged: dict[str, tuple[str, Batch]], index: ManifestIndex, dropped: Collection[str] = ()
    ) -> None:
        """Make the staged folders current for their batches, and remove the `dropped` batches, in one index
        write.

        A staged folder that does not exist stands for a batch without entries.
        """
        batches = {run: entries for run, entries in index.batches.items() if run not in dropped}
        recorded_at = datetime.now(timezone.utc).isoformat(timespec="seconds")
        for run, (source, batch) in staged.items():
            folder = None
            if self.fs.exists(source):
                folder = event_manifest_folder_name(run, self.clock(), uuid.uuid4().hex[:16])
                self.fs.move(source, self.lake.event_manifest_entry_folder(folder))
            batches[run] = BatchEntries(folder, batch.etl_time, batch.ttl(self.ttl_days), recorded_at)
        self._publish_index(batches, index)
        for run in [*staged, *dropped]:
            previous = index.batches.get(run)
            if previous is not None and previous.folder is not None:
                self.fs.delete(self.lake.event_manifest_entry_folder(previous.folder))

    def _record_owned(self, batches: list[Batch], owned: DataFrame, work: str) -> dict[str, int]:
        spark = owned.sparkSession
        self.expire()
        index = self.read_index()
        rewritten = {batch.run for batch in batches}
        # Only other batches' live entries hold keys: the given ones are rewritten as a whole, even those
        # left owning nothing, so a lost folder of theirs is never read.
        others = self._read_entries(spark, {r: b for r, b in index.live(self.now()).items() if r not in rewritten})
        held_pairs = others.where(F.col("fingerprint").isNotNull()).select("event_id", "fingerprint").distinct()
        held_ids = others.where(F.col("fingerprint").isNull()).select("event_id").distinct()
        pairs = owned.where(F.col("fingerprint").isNotNull()).join(
            held_pairs.withColumn("_held", F.lit(True)), ["event_id", "fingerprint"], "left"
        )
        claims = owned.where(F.col("fingerprint").isNull()).join(
            held_ids.withColumn("_held", F.lit(True)), "event_id", "left"
        )
        is_pair, is_held = F.col("fingerprint").isNotNull(), F.col("_held").isNotNull()
        observation = Observation("lake_event_manifest_populate")
        (
            pairs.unionByName(claims)
            # Spark would escape the "=" of a run folder name in a partition folder; the time part is safe.
            .withColumn("_batch", F.substring("run", 5, 19))
            .repartition("_batch")
            # Counted after the shuffle, in the stage that writes. Below it, the counts would be lost whenever
            # its output is empty (nothing to record): adaptive execution then replaces the write's sort with
            # an empty relation and drops the finished stage that counted, and its metrics, from the plan.
            .observe(
                observation,
                F.count_if(is_pair & ~is_held).alias("pairs_recorded"),
                F.count_if(~is_pair & ~is_held).alias("ids_claimed"),
                F.count_if(is_pair & is_held).alias("pairs_held"),
                F.count_if(~is_pair & is_held).alias("ids_held"),
            )
            .where(~is_held)
            .select("event_id", "fingerprint", "run", "etl_time", "ttl", "_batch")
            .write.partitionBy("_batch")
            .parquet(self.fs.spark_path(work))
        )
        # A batch whose entries would have expired is rewritten as nothing: dropped from the index (base.populate).
        live = [b for b in batches if b.ttl(self.ttl_days) > self.now()]
        staged = {b.run: (join_uri(work, f"_batch={b.run.removeprefix('run=')}"), b) for b in live}
        self._publish(staged, index, dropped=[b.run for b in batches if b not in live])
        return observed_counts(observation)
