"""The lake event manifest's check as the manifest grows, with its aggregation in one phase and in two.

    .venv/bin/python benchmarks/event_manifest_check.py [--events 1000000] [--batches 3] [--rounds 3]

Every check reads the entries of every live batch (snowplow_assets/manifest/lake_event_manifest.py), so its
cost grows with the manifest. This measures `LakeEventManifest.check_and_set` of one batch of `--events` kept
events (each with a fingerprint, as nearly all are) against 0 to `--batches` other batches of as many events,
each holding a pair and an id claim per event: 2 x events entries a batch. Kept events are random UUIDs with
distinct fingerprints, generated once and cached under benchmarks/work/event-manifest/, so nothing is held
and every key is new, as for the batches of a day that follow one another.

The checks run in one warm JVM (`local[2]` and the project's other settings, as shred.py's) through the real
method, as the shred job calls it. First the other batches are recorded one by one, each check timed (the
manifest growing); then `--rounds` rounds check the last batch again against all the others (a rerun
replaces its own entries, so each round does the same work), alternating two ways of aggregating:

- **single phase**: as the project does (spark.single_phase_aggregation): the keys aggregated once, after
  the shuffle;
- **two phases**: Spark's default, a partial aggregation before the shuffle, for comparison.

Results: benchmarks/results/event_manifest_check.json, and a table on stdout.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import shred  # noqa: E402  (the benchmarks' Spark settings and folders)

WORK = shred.ROOT / "work" / "event-manifest"
VARIANTS = ("single phase", "two phases")


def kept_events(spark: Any, events: int, batch: int) -> Any:
    """The kept events of one batch: random UUIDs, each with a fingerprint of its own (cached)."""
    from pyspark.sql import functions as F

    folder = WORK / f"kept-{events}" / str(batch)
    if not folder.exists():
        fingerprint = F.md5(F.concat(F.lit(f"batch {batch} event "), F.col("id").cast("string")))
        spark.range(events).select(F.expr("uuid()").alias("event_id"), fingerprint.alias("fingerprint")).write.parquet(
            str(folder)
        )
    return spark.read.parquet(str(folder))


def timed_check(manifest: Any, kept: Any, batch: Any, work: Path) -> float:
    started = time.perf_counter()
    check = manifest.check_and_set(kept, batch, True, str(work))
    seconds = time.perf_counter() - started
    assert check.counts["pairs_held"] == check.counts["ids_held"] == 0, "every key is new"
    return round(seconds, 2)


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=1_000_000, help="kept events of each batch")
    parser.add_argument("--batches", type=int, default=3, help="other batches in the manifest")
    parser.add_argument("--rounds", type=int, default=3, help="checks of the last batch per way of aggregating")
    parser.add_argument("--output", default=str(shred.RESULTS / "event_manifest_check.json"))
    args = parser.parse_args(argv)

    from snowplow_assets.lake import Lake
    from snowplow_assets.manifest import lake_event_manifest
    from snowplow_assets.manifest.base import Batch
    from snowplow_assets.spark import build_spark_session
    from snowplow_assets.storage import LocalFileSystem

    config = shred.spark_config("local[2]", profile=False)
    spark = build_spark_session(config)
    machine = {
        "cores": os.cpu_count(),
        "platform": platform.platform(),
        "python": platform.python_version(),
        "spark": spark.version,
        "spark_config": config,
    }
    lake_root = WORK / "lake"
    LocalFileSystem().delete(str(lake_root))
    work = lake_root / "check-work"  # a check writes into a folder that must not exist yet: new each run
    now = datetime(2026, 11, 26, tzinfo=UTC)
    manifest = lake_event_manifest.LakeEventManifest(LocalFileSystem(), Lake(str(lake_root)), clock=lambda: now)
    # A batch a day, the last a day before `now`; the other batches' entries are all live.
    days = [now - timedelta(days=args.batches + 1 - i) for i in range(args.batches + 1)]
    batches = [Batch(day.strftime("run=%Y-%m-%d-%H-%M-%S"), int(day.timestamp())) for day in days]
    kept = [kept_events(spark, args.events, i) for i in range(len(batches))]

    growing = []
    for i, batch in enumerate(batches):
        growing.append({"other_batches": i, "seconds": timed_check(manifest, kept[i], batch, work / f"growing-{i}")})
        print(f"check against {i} other batches: {growing[-1]['seconds']} s", flush=True)

    single_phase = lake_event_manifest.single_phase_aggregation
    samples: dict[str, list[float]] = {variant: [] for variant in VARIANTS}
    for round_ in range(args.rounds):
        for variant in VARIANTS if round_ % 2 == 0 else reversed(VARIANTS):
            lake_event_manifest.single_phase_aggregation = single_phase if variant == "single phase" else dict
            try:
                seconds = timed_check(manifest, kept[-1], batches[-1], work / f"{round_}-{variant.replace(' ', '-')}")
            finally:
                lake_event_manifest.single_phase_aggregation = single_phase
            samples[variant].append(seconds)
            print(f"round {round_} {variant}: {seconds} s", flush=True)
    spark.stop()

    entries_bytes = sum(p.stat().st_size for p in (lake_root / "event-manifest" / "entries").rglob("*.parquet"))
    results: dict[str, Any] = {
        "when": datetime.now(UTC).isoformat(timespec="seconds"),
        "command": " ".join(["benchmarks/event_manifest_check.py", *argv]),
        "machine": machine,
        "events_per_batch": args.events,
        "other_batches": args.batches,
        "other_entries": 2 * args.events * args.batches,
        "entries_mb": round(entries_bytes / 1e6),
        "growing": growing,
        "checks": {
            variant: {"median": round(statistics.median(s), 2), "min": min(s), "max": max(s), "samples": s}
            for variant, s in samples.items()
        },
    }
    Path(args.output).write_text(json.dumps(results, indent=2) + "\n")
    print(
        f"\nthe check of {args.events:,} kept events against {results['other_entries']:,} entries of "
        f"{args.batches} other batches ({results['entries_mb']} MB of entries in all), seconds:"
    )
    print("| aggregation | median (fastest-slowest) |\n|---|---:|")
    for variant, figures in results["checks"].items():
        print(f"| {variant} | {figures['median']} ({figures['min']}-{figures['max']}) |")
    print(f"results: {args.output}")


if __name__ == "__main__":
    main(sys.argv[1:])
