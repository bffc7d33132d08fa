"""CDC batches at scale: an incremental batch against a full recompute, and the latency of `latest`.

    /tmp/venv/bin/python benchmarks/cdc_batches.py [--keys 1000000] [--history-landings 5] [--change-rate 0.05]

It generates (once; cached under benchmarks/work/cdc_<keys>/) landings of the default `customers` model in
its three contracts: the first inserts every key, each later one changes `--change-rate` of the live keys
(90% updates, 10% deletes, a third of the deleted keys inserted again, 1% late, 1% duplicated). It ingests
the history landings and cuts a first batch of all of them; then it ingests one more landing (about
`keys x change-rate` new changes) and times, in the same Spark session:

- the incremental batch: the previous batch plus the new records (what the schedule does);
- a full recompute of the same batch from the whole history (`cut_batches(full=True)`), and checks that
  both hold exactly the same rows;
- `latest` on that data: the in-process view (`latest_table`, counted), once with a batch at the newest
  boundary, once after one more landing with no batch since; and the whole `snowplow-assets latest
  customers --format json` command (a new process: JVM start, plan, every row printed), output discarded;
- a truncate (cdc/order.py): a landing of one Debezium truncate at the start of the newest landing's hour,
  ingested, then the view and an incremental cut, which both apply it (a second look at the records they
  read), the cut checked against a full recompute.

Results go to benchmarks/results/cdc_batches.json and a Markdown table on stdout. Timings on a shared
machine are noisy; the table records the machine.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

from pyspark.sql import functions as F

from snowplow_assets.cdc.batches import cut_batches, latest_batch, read_batches
from snowplow_assets.cdc.history import ingest_landing, read_ingested
from snowplow_assets.cdc.latest import latest_table
from snowplow_assets.cdc.models import load_models
from snowplow_assets.datagen.cdc import CdcGenerationOptions, generate_cdc_landings, landing_folder_name
from snowplow_assets.lake import Lake
from snowplow_assets.run_folders import SUCCESS_MARKER
from snowplow_assets.settings import DEFAULT_CDC_MODELS, Settings
from snowplow_assets.spark import build_spark_session
from snowplow_assets.storage import LocalFileSystem

ROOT = Path(__file__).resolve().parent
WORK = ROOT / "work"
RESULTS = ROOT / "results"
START = datetime(2026, 3, 1, 0, 0, tzinfo=UTC)
FAR_FUTURE_MS = int(datetime(2100, 1, 1, tzinfo=UTC).timestamp() * 1000)


def timed(action):
    started = time.perf_counter()
    result = action()
    return result, time.perf_counter() - started


def fingerprint(frame) -> tuple[int, int]:
    """(rows, order-independent checksum of every row): equal fingerprints mean equal tables here."""
    row = frame.select(
        F.count(F.lit(1)).alias("n"), F.sum(F.xxhash64(*frame.columns).cast("decimal(38,0)")).alias("h")
    ).first()
    return int(row["n"]), int(row["h"] or 0)


def write_truncate_landing(folder: Path, timestamp_ms: int) -> None:
    """A landing of one Debezium truncate of `shop.customers` (no Kafka key, no row images), marked complete."""
    folder.mkdir(parents=True)
    record = {"__topic": "shop.customers", "__partition": 0, "__offset": 10**9, "__timestamp": timestamp_ms,
              "__key": None, "__value": {"payload": {"op": "t", "before": None, "after": None}}}  # fmt: skip
    (folder / "part-00000.json").write_text(json.dumps(record) + "\n")
    (folder / SUCCESS_MARKER).touch()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--keys", type=int, default=1_000_000)
    parser.add_argument(
        "--history-landings", type=int, default=5, help="landings before the new one (the first inserts)"
    )
    parser.add_argument("--change-rate", type=float, default=0.05)
    parser.add_argument("--rebuild", action="store_true", help="generate the landings again")
    args = parser.parse_args()

    models = load_models(DEFAULT_CDC_MODELS)
    customers = models.model("customers")
    work = WORK / f"cdc_{args.keys}"
    lake, fs = Lake(str(work / "lake")), LocalFileSystem()
    landings_root = Path(lake.cdc_landings)
    total = args.history_landings + 2  # history, the new landing, one more for `latest` without a batch
    options = CdcGenerationOptions(
        keys=args.keys, landings=total, update_rate=args.change_rate * 0.9, delete_rate=args.change_rate * 0.1,
        reinsert_rate=0.3, late_rate=0.01, duplicate_rate=0.01, seed=42, start=START, interval=timedelta(hours=1),
        files=4,
    )  # fmt: skip
    if args.rebuild or not landings_root.exists():
        shutil.rmtree(work, ignore_errors=True)
        generation, generate_s = timed(lambda: generate_cdc_landings(landings_root, customers, options))
        stats = [{"landing": s.folder.name, "records": s.records, "inserts": s.inserts, "updates": s.updates,
                  "deletes": s.deletes, "late": s.late, "duplicates": s.duplicates} for s in generation.landings]  # fmt: skip
        (work / "generation.json").write_text(json.dumps({"seconds": generate_s, "landings": stats}, indent=2))
    generated = json.loads((work / "generation.json").read_text())
    names = [s["landing"] for s in generated["landings"]]
    for folder in ("history", "deletes", "bad", "ingested", "batches", "latest", ".staging"):
        shutil.rmtree(Path(lake.root, "cdc", folder), ignore_errors=True)
    truncate_landing = landing_folder_name(START + total * options.interval)
    shutil.rmtree(landings_root / truncate_landing, ignore_errors=True)

    settings = Settings()
    spark = build_spark_session(settings.spark_config, app_name="benchmark-cdc-batches")
    results: dict[str, object] = {
        "keys": args.keys, "generation_seconds": round(generated["seconds"], 1), "load_average_at_start": os.getloadavg(),
    }  # fmt: skip

    ingest_seconds = []
    for name in names[: args.history_landings]:
        _, seconds = timed(lambda: ingest_landing(spark, fs, lake, name, models))
        ingest_seconds.append(round(seconds, 1))
    [first], first_s = timed(
        lambda: [r for r in cut_batches(spark, fs, lake, models, now_ms=FAR_FUTURE_MS) if r.model == "customers"]
    )
    new, new_ingest_s = timed(lambda: ingest_landing(spark, fs, lake, names[args.history_landings], models))
    history_records = sum(
        landing.models["customers"].changes + landing.models["customers"].deletes
        for landing in read_ingested(fs, lake).values()
    )

    [incremental], incremental_s = timed(
        lambda: [r for r in cut_batches(spark, fs, lake, models, now_ms=FAR_FUTURE_MS) if r.model == "customers"]
    )
    incremental_print = fingerprint(read_batches(spark, fs, lake, [incremental.batch]))
    [full], full_s = timed(
        lambda: [
            r for r in cut_batches(spark, fs, lake, models, now_ms=FAR_FUTURE_MS, full=True) if r.model == "customers"
        ]
    )
    full_print = fingerprint(read_batches(spark, fs, lake, [full.batch]))
    assert incremental.batch.boundary_ms == full.batch.boundary_ms
    assert incremental_print == full_print, "the incremental batch differs from the full recompute"

    (table, _), plan_s = timed(lambda: latest_table(spark, fs, lake, customers))
    rows_at_batch, latest_at_batch_s = timed(lambda: table.count())
    ingest_landing(spark, fs, lake, names[args.history_landings + 1], models)
    (table, sources), fresh_plan_s = timed(lambda: latest_table(spark, fs, lake, customers))
    rows_fresh, latest_fresh_s = timed(lambda: table.count())
    assert sources.batch is not None and sources.batch.boundary_ms == full.batch.boundary_ms

    env = {**os.environ, "SNOWPLOW_LAKE": lake.root}
    command = [str(Path(sys.executable).parent / "snowplow-assets"), "latest", "customers", "--format", "json"]
    started = time.perf_counter()
    done = subprocess.run(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, check=True)
    cli_s = time.perf_counter() - started
    cli_lines = done.stdout.count(b"\n")

    # A truncate at the start of the newest landing's hour: the keys changed in that hour after it stay.
    truncate_ms = int((START + (total - 1) * options.interval).timestamp() * 1000)
    write_truncate_landing(landings_root / truncate_landing, truncate_ms)
    _, truncate_ingest_s = timed(lambda: ingest_landing(spark, fs, lake, truncate_landing, models))
    (table, _), truncate_plan_s = timed(lambda: latest_table(spark, fs, lake, customers))
    rows_after_truncate, truncate_count_s = timed(lambda: table.count())
    [truncated], truncated_s = timed(
        lambda: [r for r in cut_batches(spark, fs, lake, models, now_ms=FAR_FUTURE_MS) if r.model == "customers"]
    )
    truncated_print = fingerprint(read_batches(spark, fs, lake, [truncated.batch]))
    [truncated_full] = [
        r for r in cut_batches(spark, fs, lake, models, now_ms=FAR_FUTURE_MS, full=True) if r.model == "customers"
    ]
    assert truncated.batch.mode == "incremental" and truncated.batch.truncated_ms == truncate_ms
    assert truncated_print == fingerprint(read_batches(spark, fs, lake, [truncated_full.batch]))
    assert truncated.batch.rows == rows_after_truncate < rows_fresh

    batch = latest_batch(fs, lake, "customers")
    results.update(
        {
            "history_records": history_records,
            "ingest_seconds_per_history_landing": ingest_seconds,
            "first_batch_seconds": round(first_s, 1),
            "new_landing_records": new.models["customers"].changes + new.models["customers"].deletes,
            "new_landing_ingest_seconds": round(new_ingest_s, 1),
            "batch_rows": incremental.batch.rows,
            "batch_tombstones": incremental.batch.tombstones,
            "incremental": {"seconds": round(incremental_s, 1), "records_read": incremental.batch.records_read,
                            "files_read": incremental.batch.files_read, "landings_read": incremental.batch.landings_read},
            "full": {"seconds": round(full_s, 1), "records_read": full.batch.records_read,
                     "files_read": full.batch.files_read, "landings_read": full.batch.landings_read},
            "identical": incremental_print == full_print,
            "latest_in_process_seconds_at_batch": round(latest_at_batch_s + plan_s, 1),
            "latest_in_process_seconds_one_landing_after": round(fresh_plan_s + latest_fresh_s, 1),
            "latest_rows": rows_fresh,
            "latest_rows_at_batch": rows_at_batch,
            "latest_cli_seconds": round(cli_s, 1),
            "latest_cli_lines": cli_lines,
            "truncate": {"ingest_seconds": round(truncate_ingest_s, 1),
                         "latest_in_process_seconds": round(truncate_plan_s + truncate_count_s, 1),
                         "latest_rows": rows_after_truncate,
                         "incremental_seconds": round(truncated_s, 1),
                         "incremental_records_read": truncated.batch.records_read,
                         "incremental_landings_read": truncated.batch.landings_read,
                         "identical_to_full": True},
            "newest_batch_boundary_ms": batch.boundary_ms if batch else None,
            "machine": f"{platform.machine()}, {os.cpu_count()} cores, {platform.python_implementation()} {platform.python_version()}, Spark {spark.version}, {settings.spark_master}, driver {settings.spark_driver_memory}, {settings.spark_shuffle_partitions} shuffle partitions",
            "load_average_at_end": os.getloadavg(),
            "when": datetime.now(UTC).isoformat(timespec="seconds"),
        }
    )  # fmt: skip
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "cdc_batches.json").write_text(json.dumps(results, indent=2) + "\n")
    print(json.dumps(results, indent=2))
    print()
    print("| | seconds | records read | files read |")
    print("|---|---:|---:|---:|")
    print(
        f"| incremental batch ({results['new_landing_records']:,} new records) | {incremental_s:.1f} | {incremental.batch.records_read:,} + the previous batch ({first.batch.rows + first.batch.tombstones:,} keys) | {incremental.batch.files_read} |"
    )
    print(f"| full recompute (same batch) | {full_s:.1f} | {full.batch.records_read:,} | {full.batch.files_read} |")
    print(f"| `latest` in process (plan and count), at the batch | {plan_s + latest_at_batch_s:.1f} | | |")
    print(
        f"| `latest` in process (plan and count), one landing after the batch | {fresh_plan_s + latest_fresh_s:.1f} | | |"
    )
    print(
        f"| `snowplow-assets latest customers --format json`: new process, every row printed ({cli_lines:,} lines) | {cli_s:.1f} | | |"
    )
    print(
        f"| `latest` in process, two landings after the batch, the second a truncate ({rows_after_truncate:,} rows left) | {truncate_plan_s + truncate_count_s:.1f} | | |"
    )
    print(
        f"| incremental batch with that truncate | {truncated_s:.1f} | {truncated.batch.records_read:,} of {truncated.batch.landings_read} landings + the previous batch | {truncated.batch.files_read} |"
    )
    start_load, end_load = (
        ", ".join(f"{x:.1f}" for x in results[k]) for k in ("load_average_at_start", "load_average_at_end")
    )
    print(f"\n{results['machine']}; load average (1, 5, 15 min) {start_load} at the start, {end_load} at the end.")


if __name__ == "__main__":
    main()
