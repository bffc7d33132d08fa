"""Shred runs that overlap on the shared Spark server: two at once against one alone, in time and memory.

    .venv/bin/python benchmarks/overlapping_runs.py [--events 1000000] [--rounds 2]

The README (Spark: a shared server, …) says that runs which overlap on the shared server take turns on its
cores rather than multiply its memory: on a local master no more tasks run at once than the master has
cores, whatever the number of runs, and Spark's memory manager divides the heap among the tasks that run.
This measures it. It takes shred.py's data (generated once, cached under benchmarks/work/shred/) and a second
lake whose run folder is hard links to the first's (the input is only read), and leases one shared server
(snowplow_assets/shared_spark_server.py) with the project's settings on `--master` (default local[2], driver
memory 1g). After a first run that compiles everything, each round shreds one lake alone, then both at once,
each run a client process of its own as Dagster runs are, with every deduplication on and the default lake
event manifest, from an empty output and manifest. It records each run's seconds and counts, the wall time,
and the server's peak resident memory over each (VmHWM, reset before). Results:
benchmarks/results/overlapping_runs.json, and a table on stdout.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import shred  # noqa: E402  (the shred benchmark's data, settings and server)


def client(url: str, lake_root: str, master: str) -> dict[str, Any]:
    """One shred run of `lake_root`'s run folder on the server at `url`, in this process."""
    from snowplow_assets.events.dedup import InBatchDedup
    from snowplow_assets.events.shred_batch import ShredOptions, shred_run_folder
    from snowplow_assets.lake import Lake
    from snowplow_assets.manifest.lake_event_manifest import LakeEventManifest
    from snowplow_assets.spark import build_spark_session
    from snowplow_assets.storage import LocalFileSystem

    spark = build_spark_session({**shred.spark_config(master, profile=False), "spark.remote": url})
    fs, lake = LocalFileSystem(), Lake(lake_root)
    options = ShredOptions(
        dedup=InBatchDedup(natural=True, synthetic=True),
        compression="NONE",
        event_manifest=LakeEventManifest(fs, lake),
        cross_batch_synthetic=True,
    )
    started = time.perf_counter()
    report = shred_run_folder(spark, fs, lake, shred.RUN, options)
    seconds = time.perf_counter() - started
    spark.stop()
    return {"seconds": round(seconds, 2), "counts": shred.shred_counts(report)}


def _clean(lakes: list[Path]) -> None:
    for lake in lakes:
        for output in ("shredded", "event-manifest"):
            shutil.rmtree(lake / output, ignore_errors=True)


def _second_lake(events: int) -> Path:
    """A lake beside the size's own (so regenerating the data removes it too) whose run folder is hard links to
    the first's: the same input, no second copy on disk."""
    second = shred.data_folder(events) / "second-lake"
    folder = second / "enriched" / shred.RUN
    if not folder.exists():
        folder.parent.mkdir(parents=True, exist_ok=True)
        shutil.copytree(shred.data_folder(events) / "lake" / "enriched" / shred.RUN, folder, copy_function=os.link)
    return second


def measure(events: int, rounds: int, master: str) -> dict[str, Any]:
    lakes = [shred.data_folder(events) / "lake", _second_lake(events)]
    samples: dict[str, list[dict[str, Any]]] = {"alone": [], "two at once": []}
    with shred.shared_connect_server(events, master, profile=False) as (url, server_pid):

        def runs(which: list[Path]) -> dict[str, Any]:
            _clean(lakes)
            shred.reset_peak_rss(server_pid)
            started = time.perf_counter()
            command = [sys.executable, __file__, "--client", url, "--master", master]
            processes = [
                subprocess.Popen([*command, "--lake", str(lake)], stdout=subprocess.PIPE, text=True) for lake in which
            ]
            outputs = [json.loads(p.communicate()[0].strip().splitlines()[-1]) for p in processes]
            if any(p.returncode for p in processes):
                raise RuntimeError(f"a run failed: exit {[p.returncode for p in processes]}")
            return {
                "wall_seconds": round(time.perf_counter() - started, 2),
                "run_seconds": [o["seconds"] for o in outputs],
                "server_peak_rss_mb": round(shred.status_kb(server_pid, "VmHWM") / 1024),
                "counts": [o["counts"] for o in outputs],
            }

        first_run = runs(lakes[:1])
        for round_ in range(1, rounds + 1):
            for label, which in (("alone", lakes[:1]), ("two at once", lakes)):
                samples[label].append(runs(which))
                sample = samples[label][-1]
                print(f"round {round_}/{rounds}, {label}: wall {sample['wall_seconds']:.1f} s, runs "
                      f"{sample['run_seconds']}, server peak RSS {sample['server_peak_rss_mb']} MB", file=sys.stderr, flush=True)  # fmt: skip
        _clean(lakes)
    counts = [c for label in samples for sample in samples[label] for c in sample["counts"]]
    return {"first_run": first_run, "samples": samples, "counts_agree": all(c == counts[0] for c in counts)}


def table(results: dict[str, Any]) -> str:
    lines = [
        f"Shred runs on one shared server, {results['events']:,} events each, {results['master']}:",
        "",
        "| round | one alone: seconds | server peak RSS MB | two at once: wall seconds | each run's seconds | server peak RSS MB |",
        "|---|---:|---:|---:|---|---:|",
    ]
    for index, (alone, both) in enumerate(zip(results["samples"]["alone"], results["samples"]["two at once"]), 1):
        lines.append(
            f"| {index} | {alone['run_seconds'][0]:.1f} | {alone['server_peak_rss_mb']:,} | {both['wall_seconds']:.1f} | "
            f"{', '.join(f'{s:.1f}' for s in both['run_seconds'])} | {both['server_peak_rss_mb']:,} |"
        )
    lines += [
        "",
        f"The server's first run: {results['first_run']['run_seconds'][0]:.1f} s. Counts agree: {results['counts_agree']}.",
    ]
    return "\n".join(lines)


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--events", type=int, default=1_000_000, help="distinct events of each run's batch")
    parser.add_argument("--rounds", type=int, default=2, help="rounds of one alone, then two at once")
    parser.add_argument("--files", type=int, default=4, help="part files of the run folder")
    parser.add_argument("--master", default="local[2]", help="Spark master of the server")
    parser.add_argument("--output", type=Path, default=shred.RESULTS / "overlapping_runs.json", help="results file")
    # internal: one shred run, in a child process
    parser.add_argument("--client", help=argparse.SUPPRESS)
    parser.add_argument("--lake", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)

    if args.client:
        print(json.dumps(client(args.client, args.lake, args.master)))
        return
    shred.ensure_data(args.events, args.files, rebuild=False)
    load_before = os.getloadavg()
    measured = measure(args.events, args.rounds, args.master)
    results = {
        "when": datetime.now(UTC).isoformat(timespec="seconds"),
        "command": "benchmarks/overlapping_runs.py " + " ".join(argv),
        "events": args.events,
        "master": args.master,
        "spark_config": shred.spark_config(args.master, profile=False),
        "load_average_before": [round(x, 2) for x in load_before],
        "load_average_after": [round(x, 2) for x in os.getloadavg()],
        **measured,
    }
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(results, indent=2) + "\n")
    print(table(results))
    print(f"\nresults: {args.output}")


if __name__ == "__main__":
    main(sys.argv[1:])
