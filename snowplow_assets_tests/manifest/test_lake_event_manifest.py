import json
import os
import shutil
import uuid
from collections.abc import Callable
from datetime import datetime, timedelta, timezone
from pathlib import Path

import boto3
import pytest
from botocore.config import Config as BotoConfig
from pyspark.sql import functions as F

from snowplow_assets.lake import Lake
from snowplow_assets.manifest.base import (
    DEFAULT_TTL_DAYS,
    SECONDS_PER_DAY,
    Batch,
    ConcurrentManifestWrite,
    EventManifestUnavailable,
)
from snowplow_assets.manifest.lake_event_manifest import ORPHAN_GRACE, LakeEventManifest
from snowplow_assets.storage import LakeFileSystem, LocalFileSystem, S3FileSystem
from snowplow_assets_tests.conftest import write_plan
from snowplow_assets_tests.manifest.conftest import B1, B2, B3, NOW, MovableClock, s3_error
from snowplow_assets_tests.storage.answer_lost import AnswerLostAfterApplying

OLD, LIVE = "run=2025-01-01-00-00-00", "run=2026-03-01-00-00-00"


def write_index(lake: Lake, batches: dict[str, dict], version: int = 7) -> None:
    Path(lake.event_manifest).mkdir(parents=True, exist_ok=True)
    document = {"format": 1, "version": version, "batches": batches}
    Path(lake.event_manifest_index).write_text(json.dumps(document))


def batch(run: str, token: str, ttl: int) -> dict:
    """An index entry of `run` recorded to expire at `ttl`, counted from its etlTime (`Batch.ttl`; an entry is
    read as live at least until its run folder's time plus the ttl)."""
    etl_time = ttl - DEFAULT_TTL_DAYS * SECONDS_PER_DAY
    return {"folder": f"{run}.{token}", "etl_time": etl_time, "ttl": ttl, "recorded_at": "2026-03-01T00:00:00+00:00"}


@pytest.fixture
def manifest(tmp_path) -> LakeEventManifest:
    return LakeEventManifest(LocalFileSystem(), Lake(str(tmp_path / "lake")), clock=MovableClock(NOW))


@pytest.mark.parametrize("scenario", ["lake"], indirect=True)
def test_reruns_replace_their_own_folder_and_leave_one_per_batch(scenario):
    layout = scenario.lake_layout_before_expiry
    assert sorted(layout["batches"]) == [B1, B2, B3]
    assert sorted(layout["batches"].values()) == layout["folders"]  # no folder of a replaced version is left
    assert layout["version"] == 4  # one publish per shred, the rerun included


def test_expiry_and_orphans_are_compacted_away(manifest):
    lake = manifest.lake
    now = int(NOW.timestamp())
    write_index(lake, {OLD: batch(OLD, "a" * 16, now - 1), LIVE: batch(LIVE, "b" * 16, now + 1)})
    for folder in (f"{OLD}.{'a' * 16}", f"{LIVE}.{'b' * 16}", f"{LIVE}.{'c' * 16}"):  # the last: a crashed publish
        Path(lake.event_manifest_entry_folder(folder)).mkdir(parents=True)
    # The crash was long ago. The expired batch's folder goes at once, however new: the index named it.
    os.utime(lake.event_manifest_entry_folder(f"{LIVE}.{'c' * 16}"), (now - 7200, now - 7200))

    assert manifest.expire() == 1
    index = manifest.read_index()
    assert list(index.batches) == [LIVE] and index.version == 8
    assert [p.name for p in Path(lake.event_manifest_entries).iterdir()] == [f"{LIVE}.{'b' * 16}"]
    assert manifest.expire() == 0 and manifest.read_index().version == 8  # nothing expired: index untouched


def test_a_concurrent_writer_is_detected_and_nothing_is_published(manifest):
    lake = manifest.lake
    write_index(lake, {})
    seen = manifest.read_index()
    write_index(lake, {LIVE: batch(LIVE, "b" * 16, 2_000_000_000)}, version=seen.version + 1)  # another run
    with pytest.raises(ConcurrentManifestWrite, match="another run wrote it at the same time"):
        manifest._publish_index({}, seen)
    assert list(manifest.read_index().batches) == [LIVE]


class AnotherRunWritesFirst:
    """A file system on which `another_run` runs once, right before the first write of the event manifest
    index: another run publishing between this one's read of the index and its write. Both ways of writing
    are hooked, so the tests also run against a publisher that writes unconditionally, as one did before the
    index was compared and swapped (`write_text` after a check of its version)."""

    another_run: Callable[[], object] | None = None

    def _before_writing(self, uri: str) -> None:
        if uri.endswith("/event-manifest/batches.json") and self.another_run is not None:
            another_run, self.another_run = self.another_run, None
            another_run()

    def write_text(self, uri: str, text: str) -> None:
        self._before_writing(uri)
        super().write_text(uri, text)

    def write_text_if_unchanged(self, uri: str, text: str, token: str | None) -> None:
        self._before_writing(uri)
        super().write_text_if_unchanged(uri, text, token)


class RacedLocalFileSystem(AnotherRunWritesFirst, LocalFileSystem):
    pass


class RacedS3FileSystem(AnotherRunWritesFirst, S3FileSystem):
    pass


def s3_lake(moto_server: str) -> tuple[Lake, S3FileSystem]:
    bucket = f"lake-{uuid.uuid4().hex[:12]}"
    boto3.client("s3", endpoint_url=moto_server, region_name="us-east-1").create_bucket(Bucket=bucket)
    return Lake(f"s3://{bucket}/lake"), S3FileSystem(
        boto3.client("s3", endpoint_url=moto_server, region_name="us-east-1")
    )


def lake_on(storage: str, tmp_path: Path, moto_server: str) -> tuple[Lake, LakeFileSystem, AnotherRunWritesFirst]:
    """A new lake on a local disk or on the moto server, its file system, and a raced one of the same kind."""
    if storage == "local":
        return Lake(str(tmp_path / "lake")), LocalFileSystem(), RacedLocalFileSystem()
    lake, plain = s3_lake(moto_server)
    return lake, plain, RacedS3FileSystem(plain.client)


def an_old_and_a_live_batch(fs: LakeFileSystem, lake: Lake) -> None:
    """Index version 3: OLD, expired, and LIVE, each with an entry folder."""
    now = int(NOW.timestamp())
    batches = {OLD: batch(OLD, "a" * 16, now - 1), LIVE: batch(LIVE, "b" * 16, now + 1)}
    fs.write_text(lake.event_manifest_index, json.dumps({"format": 1, "version": 3, "batches": batches}))
    for folder in (f"{OLD}.{'a' * 16}", f"{LIVE}.{'b' * 16}"):
        fs.write_text(f"{lake.event_manifest_entry_folder(folder)}/part-00000.parquet", "entries")


@pytest.mark.parametrize("storage", ["local", "s3"])
def test_compaction_another_run_published_under_fails_and_leaves_that_runs_index(storage, tmp_path, moto_server):
    """The index changes between compaction's read of it and its write: another run records a batch (one
    whose keys were all held: no entry folder). Compaction publishes nothing, and the other batch stays
    recorded; written unconditionally, compaction's index would have dropped it."""
    lake, plain, raced = lake_on(storage, tmp_path, moto_server)
    an_old_and_a_live_batch(plain, lake)
    other = LakeEventManifest(plain, lake, clock=MovableClock(NOW))
    held = Batch("run=2026-03-09-00-00-00", int(NOW.timestamp()) - 3600)
    nothing_staged = f"{lake.event_manifest}/.work/0123456789abcdef/none"
    raced.another_run = lambda: other._publish({held.run: (nothing_staged, held)}, other.read_index())

    compacting = LakeEventManifest(raced, lake, clock=MovableClock(NOW))
    with pytest.raises(ConcurrentManifestWrite, match="another run wrote it at the same time. Nothing was published"):
        compacting.expire()
    index = other.read_index()
    assert (sorted(index.batches), index.version) == ([OLD, LIVE, held.run], 4)
    assert len(plain.list_dir(lake.event_manifest_entries)) == 2, "nothing deleted: the rerun decides"

    assert compacting.expire() == 1  # the rerun, against the other run's index
    index = other.read_index()
    assert (sorted(index.batches), index.version) == ([LIVE, held.run], 5)
    assert [e.name for e in plain.list_dir(lake.event_manifest_entries)] == [f"{LIVE}.{'b' * 16}"]


def a_live_batch(fs: LakeFileSystem, lake: Lake, now: datetime) -> str:
    """Index version 3: LIVE, live for ten days after `now`, with an entry folder (named as before 2026-11-27).
    Returns that folder's name."""
    ttl = int(now.timestamp()) + 10 * 86400
    batches = {LIVE: batch(LIVE, "b" * 16, ttl)}
    fs.write_text(lake.event_manifest_index, json.dumps({"format": 1, "version": 3, "batches": batches}))
    folder = batches[LIVE]["folder"]
    fs.write_text(f"{lake.event_manifest_entry_folder(folder)}/part-00000.parquet", "entries")
    return folder


def staged_entries(fs: LakeFileSystem, lake: Lake) -> str:
    """A work folder holding one batch's entries, as a check leaves it before publishing."""
    staged = f"{lake.event_manifest}/.work/{uuid.uuid4().hex[:16]}/_out=entries"
    fs.write_text(f"{staged}/part-00000.parquet", "entries")
    return staged


def entry_folders(fs: LakeFileSystem, lake: Lake) -> list[str]:
    return [e.name for e in fs.list_dir(lake.event_manifest_entries)]


@pytest.mark.parametrize("storage", ["local", "s3"])
def test_compaction_spares_the_folder_another_run_has_moved_but_not_yet_named_in_the_index(
    storage, tmp_path, moto_server
):
    """Another run compacts between this run's move of its entries into a new folder and its write of the index
    that names it: the folder is no orphan but in flight. Deleted, the index would name a folder that is gone."""
    lake, plain, raced = lake_on(storage, tmp_path, moto_server)
    clock = MovableClock(NOW)
    live_folder = a_live_batch(plain, lake, NOW)
    raced.another_run = LakeEventManifest(plain, lake, clock=clock).expire

    publishing = LakeEventManifest(raced, lake, clock=clock)
    new = Batch("run=2026-03-09-00-00-00", int(NOW.timestamp()) - 3600)
    publishing._publish({new.run: (staged_entries(plain, lake), new)}, publishing.read_index())
    assert raced.another_run is None, "the other run compacted before the index was written"
    publishing.verify()  # every folder the index names is there
    index = publishing.read_index()
    assert (sorted(index.batches), index.version) == ([LIVE, new.run], 4)
    assert entry_folders(plain, lake) == sorted([live_folder, index.batches[new.run].folder])


@pytest.mark.parametrize("storage", ["local", "s3"])
def test_the_folder_of_a_crashed_publish_is_removed_once_older_than_the_grace_period(storage, tmp_path, moto_server):
    lake, plain, raced = lake_on(storage, tmp_path, moto_server)
    clock = MovableClock(NOW)
    live_folder = a_live_batch(plain, lake, NOW)

    def crash() -> None:
        raise RuntimeError("the run stopped after moving its entries")

    raced.another_run = crash
    crashing = LakeEventManifest(raced, lake, clock=clock)
    new = Batch("run=2026-03-09-00-00-00", int(NOW.timestamp()) - 3600)
    with pytest.raises(RuntimeError, match="stopped after moving"):
        crashing._publish({new.run: (staged_entries(plain, lake), new)}, crashing.read_index())
    (orphan,) = set(entry_folders(plain, lake)) - {live_folder}
    assert orphan.startswith(f"{new.run}.20260310T000000Z."), "named with the time it was made"

    compacting = LakeEventManifest(plain, lake, clock=clock)
    clock.now = NOW + ORPHAN_GRACE - timedelta(seconds=1)
    assert compacting.expire() == 0
    assert entry_folders(plain, lake) == sorted([live_folder, orphan]), "it may still be in flight"
    clock.now = NOW + ORPHAN_GRACE
    assert compacting.expire() == 0
    assert entry_folders(plain, lake) == [live_folder]
    assert compacting.read_index().version == 3, "the index named no orphan: it is not rewritten"


@pytest.mark.parametrize("storage", ["local", "s3"])
def test_a_folder_named_without_its_time_is_as_old_as_its_newest_file(storage, tmp_path, moto_server):
    """A folder named as before 2026-11-27, `run=….<token>`, says nothing of its age: its listing does. It is
    spared for the grace period after its newest file was written (on S3, copied into it by the move)."""
    lake, plain, _ = lake_on(storage, tmp_path, moto_server)
    started = datetime.now(timezone.utc)
    live_folder = a_live_batch(plain, lake, started)
    unnamed = f"{LIVE}.{'c' * 16}"
    plain.write_text(f"{lake.event_manifest_entry_folder(unnamed)}/part-00000.parquet", "entries")

    clock = MovableClock(started)
    compacting = LakeEventManifest(plain, lake, clock=clock)
    assert compacting.expire() == 0
    assert entry_folders(plain, lake) == sorted([live_folder, unnamed])
    clock.now = datetime.now(timezone.utc) + ORPHAN_GRACE + timedelta(seconds=2)
    assert compacting.expire() == 0
    assert entry_folders(plain, lake) == [live_folder]


@pytest.mark.parametrize("index_before", ["absent", "present"])
def test_a_batch_checked_while_another_published_fails_and_the_other_stays_recorded(
    spark, manifest, tmp_path, index_before
):
    """Two runs check batches that share an event, against the same index: the second publishes between the
    first's read of the index and the first's write. The first then publishes nothing, and the second's batch
    stays in the index with its entries: written unconditionally, the first's index would have dropped it,
    and later copies of its events would pass unchecked. The rerun of the first decides against the new
    state: the shared event is held by the second."""
    lake, clock = manifest.lake, MovableClock(NOW)
    keys = "event_id STRING, fingerprint STRING"
    earlier = Batch("run=2026-03-01-09-00-00", 1772355900)
    first, second = Batch("run=2026-03-01-10-00-00", 1772359500), Batch("run=2026-03-01-11-00-00", 1772363100)
    if index_before == "present":
        manifest.check_and_set(spark.createDataFrame([("e", "fpE")], keys), earlier, True, str(tmp_path / "w0"))
    other = LakeEventManifest(LocalFileSystem(), lake, clock=clock)
    theirs = spark.createDataFrame([("shared", "fp"), ("b", "fpB")], keys)
    raced = RacedLocalFileSystem()
    raced.another_run = lambda: other.check_and_set(theirs, second, True, str(tmp_path / "w2"))

    checking = LakeEventManifest(raced, lake, clock=clock)
    mine = spark.createDataFrame([("shared", "fp"), ("a", "fpA")], keys)
    with pytest.raises(ConcurrentManifestWrite, match="another run wrote it at the same time. Nothing was published"):
        checking.check_and_set(mine, first, True, str(tmp_path / "w1"))
    before = [earlier.run] if index_before == "present" else []
    assert sorted(manifest.read_index().batches) == [*before, second.run]
    manifest.verify()  # every folder the index names is there
    recorded = spark.createDataFrame([("shared", "fp"), ("b", "fpB"), ("a", "fpA")], keys)
    assert sorted((r.event_id, r.run) for r in manifest.lookup(recorded).collect()) == [
        ("b", second.run),
        ("shared", second.run),
    ]

    check = checking.check_and_set(mine, first, True, str(tmp_path / "w3"))  # the rerun
    assert sorted((r.event_id, r.kind, r.status) for r in check.findings.collect()) == [
        ("shared", "id", "held"),
        ("shared", "pair", "held"),
    ]
    assert sorted(manifest.read_index().batches) == [*before, first.run, second.run]


def test_a_conflict_s3_answers_a_conditional_write_with_is_a_concurrent_write(moto_server, throttling_proxy):
    """S3 answers a conditional PUT with 409 ConditionalRequestConflict while another conditional write of
    the key is under way: the other may win, so this one has lost, and publishes nothing."""
    lake, direct = s3_lake(moto_server)
    an_old_and_a_live_batch(direct, lake)
    index_key = "/" + lake.event_manifest_index.removeprefix("s3://")

    def conflict(request, attempt):
        if request.method == "PUT" and request.path.partition("?")[0] == index_key:
            return s3_error("ConditionalRequestConflict", "A conflicting operation occurred.", status=409)
        return None

    proxy = throttling_proxy(conflict)
    client = boto3.client("s3", endpoint_url=proxy.url, region_name="us-east-1")
    with pytest.raises(ConcurrentManifestWrite, match="another run wrote it at the same time"):
        LakeEventManifest(S3FileSystem(client), lake, clock=MovableClock(NOW)).expire()
    assert proxy.answered == ["ConditionalRequestConflict"], "not retried: a retry cannot win"
    assert json.loads(direct.read_text(lake.event_manifest_index))["version"] == 3


def test_compaction_whose_index_write_s3_applied_but_whose_answer_was_lost_has_published(moto_server):
    """The connection drops after S3 applied compaction's index; the client's retry fails its own condition.
    The index is compaction's own: it was published, and no other run wrote at the same time."""
    lake, fs = s3_lake(moto_server)
    an_old_and_a_live_batch(fs, lake)
    lost = AnswerLostAfterApplying()
    lost.register(fs.client)

    assert LakeEventManifest(fs, lake, clock=MovableClock(NOW)).expire() == 1
    assert lost.attempts == ["answer lost", 412]
    index = json.loads(fs.read_text(lake.event_manifest_index))
    assert (list(index["batches"]), index["version"]) == ([LIVE], 4)
    assert [e.name for e in fs.list_dir(lake.event_manifest_entries)] == [f"{LIVE}.{'b' * 16}"]


@pytest.mark.parametrize(
    "document",
    [
        "{not json",
        json.dumps({"format": 99, "version": 1, "batches": {}}),
        json.dumps({"format": 1, "version": 1, "batches": {"../x": batch(LIVE, "b" * 16, 1)}}),
        json.dumps({"format": 1, "version": 1, "batches": {LIVE: {**batch(LIVE, "b" * 16, 1), "folder": "../../etc"}}}),
    ],
)
def test_an_unreadable_index_is_a_clear_error_and_never_a_path(manifest, document):
    Path(manifest.lake.event_manifest).mkdir(parents=True)
    Path(manifest.lake.event_manifest_index).write_text(document)
    with pytest.raises(EventManifestUnavailable, match="event manifest index .* is unreadable"):
        manifest.verify()


def test_a_missing_entry_folder_is_a_clear_error(spark, manifest):
    write_index(manifest.lake, {LIVE: batch(LIVE, "b" * 16, 2_000_000_000)})
    keys = spark.createDataFrame([("x", "y")], "event_id STRING, fingerprint STRING")
    with pytest.raises(EventManifestUnavailable, match="entry folder the event manifest index names is missing"):
        manifest.lookup(keys)


def test_runs_named_in_the_layout_are_validated():
    lake = Lake("/lake")
    assert lake.event_manifest_entry_folder(f"{B3}.{'0' * 16}") == f"/lake/event-manifest/entries/{B3}.{'0' * 16}"
    for bad in ("..", f"{B2}", f"{B2}.xyz", f"../{B2}.{'0' * 16}"):
        with pytest.raises(ValueError):
            lake.event_manifest_entry_folder(bad)


def test_a_batch_whose_keys_are_all_held_records_no_folder_and_a_rerun_touches_only_its_own(spark, manifest, tmp_path):
    first, copy = Batch("run=2026-03-01-10-00-00", 1772359500), Batch("run=2026-03-01-11-00-00", 1772363100)
    kept = spark.createDataFrame([("a", "fp")], "event_id STRING, fingerprint STRING")
    manifest.check_and_set(kept, first, True, str(tmp_path / "w1"))
    check = manifest.check_and_set(kept, copy, True, str(tmp_path / "w2"))

    assert sorted((r.kind, r.status) for r in check.findings.collect()) == [("id", "held"), ("pair", "held")]
    index = manifest.read_index()
    assert index.batches[copy.run].folder is None  # S3 has no empty folders; the index says "none" instead
    before = index.batches[copy.run]
    manifest.check_and_set(kept, first, True, str(tmp_path / "w3"))  # a rerun of the first batch
    after = manifest.read_index()
    assert after.batches[copy.run] == before and after.batches[first.run].folder != index.batches[first.run].folder
    assert [p.name for p in Path(manifest.lake.event_manifest_entries).iterdir()] == [after.batches[first.run].folder]


def test_entries_and_findings_are_written_in_one_pass_that_neither_sorts_nor_pre_aggregates_the_keys(
    spark, manifest, tmp_path
):
    first, second = Batch("run=2026-03-01-10-00-00", 1772359500), Batch("run=2026-03-01-11-00-00", 1772363100)
    manifest.check_and_set(
        spark.createDataFrame([("a", "fp")], "event_id STRING, fingerprint STRING"), first, True, str(tmp_path / "w1")
    )
    kept = spark.createDataFrame([("a", "fp"), ("b", "fp")], "event_id STRING, fingerprint STRING")
    check = manifest.check_and_set(kept, second, True, str(tmp_path / "w2"))

    assert sorted((r.event_id, r.kind, r.status) for r in check.findings.collect()) == [
        ("a", "id", "held"),
        ("a", "pair", "held"),
    ]
    assert {r.event_id for r in manifest.lookup(kept).where("run = 'run=2026-03-01-11-00-00'").collect()} == {"b"}
    plan = write_plan(spark, str(tmp_path / "w2"))
    assert "Sort (" not in plan
    # Nearly every key is distinct: one aggregation after the shuffle, none before it (spark.single_phase_aggregation).
    assert "partial_max" not in plan and "HashAggregate" in plan
    assert spark.conf.get("spark.sql.optimizer.plannedWrite.enabled") == "true", "the session's settings are restored"
    assert spark.conf.get("spark.sql.execution.bypassPartialAggregation") == "false"


@pytest.mark.parametrize("claim_ids", [True, False])
def test_every_kept_event_gives_its_pair_and_one_claim_per_distinct_id(spark, manifest, tmp_path, claim_ids):
    batch = Batch("run=2026-03-01-10-00-00", 1772359500)
    # Two events share an id (a synthetic duplicate); the null fingerprint is claimed but never paired.
    kept = spark.createDataFrame([("a", "fp1"), ("a", "fp2"), ("b", None)], "event_id STRING, fingerprint STRING")
    check = manifest.check_and_set(kept, batch, claim_ids, str(tmp_path / "w"))

    assert (check.counts["pairs_recorded"], check.counts["ids_claimed"]) == (2, 2 if claim_ids else 0)
    keys = spark.createDataFrame(
        [("a", "fp1"), ("a", "fp2"), ("a", None), ("b", None)], "event_id STRING, fingerprint STRING"
    )
    entries = {(r.event_id, r.fingerprint) for r in manifest.lookup(keys).collect()}
    claims = {("a", None), ("b", None)} if claim_ids else set()
    assert entries == {("a", "fp1"), ("a", "fp2"), *claims}


def test_a_lake_on_s3_retries_throttled_requests_and_reports_what_outlasts_the_retries(moto_server, throttling_proxy):
    bucket = f"lake-{uuid.uuid4().hex[:12]}"
    boto3.client("s3", endpoint_url=moto_server, region_name="us-east-1").create_bucket(Bucket=bucket)
    lake = Lake(f"s3://{bucket}/lake")
    direct = S3FileSystem(boto3.client("s3", endpoint_url=moto_server, region_name="us-east-1"))
    now = int(NOW.timestamp())
    index = {
        "format": 1,
        "version": 3,
        "batches": {OLD: batch(OLD, "a" * 16, now - 1), LIVE: batch(LIVE, "b" * 16, now + 1)},
    }
    direct.write_text(lake.event_manifest_index, json.dumps(index))
    for folder in (f"{OLD}.{'a' * 16}", f"{LIVE}.{'b' * 16}"):
        direct.write_text(f"{lake.event_manifest_entry_folder(folder)}/part-00000.parquet", "entries")
    index_key = f"/{bucket}/lake/event-manifest/batches.json"

    def slow_down(request, attempt):
        """S3 asks to slow down the first request of each kind on the index: its GET and compaction's PUT."""
        if request.path.partition("?")[0] == index_key and attempt == 1:
            return s3_error("SlowDown", "Please reduce your request rate.")
        return None

    # boto3's default client, as the lake gets it: it retries throttling with exponential backoff.
    proxy = throttling_proxy(slow_down)
    client = boto3.client("s3", endpoint_url=proxy.url, region_name="us-east-1")
    manifest = LakeEventManifest(S3FileSystem(client), lake, clock=MovableClock(NOW))
    manifest.verify()
    assert manifest.expire() == 1
    assert proxy.answered == ["SlowDown"] * 2
    assert list(json.loads(direct.read_text(lake.event_manifest_index))["batches"]) == [LIVE]
    assert [e.name for e in direct.list_dir(lake.event_manifest_entries)] == [f"{LIVE}.{'b' * 16}"]

    # Throttling that outlasts the client's retries stops the batch at start-up, before any work.
    throttled = throttling_proxy(lambda request, attempt: s3_error("SlowDown", "Please reduce your request rate."))
    gives_up_sooner = BotoConfig(retries={"max_attempts": 2})
    client = boto3.client("s3", endpoint_url=throttled.url, region_name="us-east-1", config=gives_up_sooner)
    with pytest.raises(
        EventManifestUnavailable, match=r"cannot read the event manifest index .*SlowDown.*reached max retries"
    ):
        LakeEventManifest(S3FileSystem(client), lake, clock=MovableClock(NOW)).verify()


def test_a_batch_recorded_under_the_etl_time_rule_is_live_for_its_run_folder_time(spark, manifest, tmp_path):
    """Until 2026-11-28 a batch's ttl counted from its etlTime alone: one replayed event enriched long ago left a
    new batch expired as it was written. After the upgrade, its index entry and the ttl written beside its keys
    still said so, and copies of its events were loaded again."""
    keys = "event_id STRING, fingerprint STRING"
    year_ago = int(NOW.timestamp()) - 365 * 86400
    recorded = Batch("run=2026-03-09-00-00-00", etl_time=year_ago)
    manifest.check_and_set(spark.createDataFrame([("a", "fp")], keys), recorded, True, str(tmp_path / "w1"))
    # As the old rule wrote it: the index's ttl and each entry's, 180 days after the replayed event's etlTime.
    old_ttl = year_ago + 180 * 86400
    document = json.loads(Path(manifest.lake.event_manifest_index).read_text())
    document["batches"][recorded.run]["ttl"] = old_ttl
    Path(manifest.lake.event_manifest_index).write_text(json.dumps(document))
    folder = manifest.lake.event_manifest_entry_folder(document["batches"][recorded.run]["folder"])
    entries = spark.read.parquet(manifest.fs.spark_read_path(folder))
    rows, schema = entries.withColumn("ttl", F.lit(old_ttl).cast("bigint")).collect(), entries.schema
    shutil.rmtree(folder)
    spark.createDataFrame(rows, schema).write.parquet(manifest.fs.spark_path(folder))

    later = Batch("run=2026-03-09-01-00-00", etl_time=int(NOW.timestamp()) - 3600)
    check = manifest.check_and_set(
        spark.createDataFrame([("a", "fp"), ("b", "fp")], keys), later, True, str(tmp_path / "w2")
    )
    assert sorted((r.event_id, r.kind, r.status) for r in check.findings.collect()) == [
        ("a", "id", "held"),
        ("a", "pair", "held"),
    ]
    expected_ttl = recorded.ttl(manifest.ttl_days)
    assert expected_ttl > int(NOW.timestamp()) > old_ttl
    assert manifest.read_index().batches[recorded.run].ttl == expected_ttl
    found = manifest.lookup(spark.createDataFrame([("a", "fp")], keys)).where(f"run = '{recorded.run}'").collect()
    assert [r.ttl for r in found] == [expected_ttl]
