"""Shred throughput and memory, against the floor of what Spark can do and a single-process baseline.

    .venv/bin/python benchmarks/shred.py [--events 250000 1000000] [--runs 3] [--driver-memory 1g] [--profile]

For each size it generates (once; cached under benchmarks/work/shred/<events>/) one run folder of that many
distinct enriched events with the generator's default defects (2% natural duplicates, 1% synthetic
duplicates, 1% bad lines; `snowplow-assets generate enriched`), in `--files` plain TSV part files. Then it
repeats `--runs` rounds of five jobs, in this order so that a change in the machine's load hits all
five alike, each in a process of its own:

- **floor**: a Spark job on the same master that reads the run folder's files as text and writes the lines
  back unchanged. No job that reads and writes these bytes can be faster.
- **shred**: `shred_run_folder` (snowplow_assets/events/shred_batch.py) as the Dagster asset calls it, with
  every deduplication on: in-batch natural and synthetic, and cross-batch through the default `lake` event
  manifest with cross-batch synthetic renames. Timed from the call to the published output, marker
  included. The manifest and the output are removed before every run, so every run is the same first
  batch (a manifest that already holds other batches adds a read of their entries; not measured here).
- **shred_connect**: the same, as a client of the shared Spark Connect server
  (snowplow_assets/shared_spark_server.py), as Dagster runs are by default. Each size gets a new server
  with the same settings; its first run, which compiles everything, comes before the rounds and is
  reported apart.
- **one_pass_connect**: the one-pass bound (benchmarks/one_pass_bound.py) on the same server: every line
  read, parsed by the fast path's Java function and its output written at once, with no staging,
  deduplication, bad rows or event manifest. The least the job's own work costs, however its passes are
  arranged; its ratio to the floor says whether the floor target is within that work's reach.
- **baseline**: benchmarks/single_process_baseline.py: the same job, written as a fair streaming Python
  program without Spark. Its counts are checked against the shred jobs'.

A process per Spark job means a new JVM per floor and shred job, as a Dagster run of the shred job gets
with SNOWPLOW_SPARK_SERVER=own, and as a new shared server's first run in effect does: so each run pays
for compiling Spark's generated code, reported as JIT seconds (the JVM's compilation time, spent on the
same two cores, from its performance counters), and its memory peaks are its own. A shred_connect run's
JVM figures are the server's. Spark's start is not timed.

Spark runs on `--master` (default `local[2]`) with the project's other settings (SNOWPLOW_* variables;
driver memory 1g and SNOWPLOW_SPARK_JAVA_OPTIONS by default). Each figure is the median of the runs, with
the fastest and slowest shown. Memory is the peak of each run: the driver's Python process and the JVM as
resident set sizes (the peak counters of /proc/<pid>/status, reset before each run), and the JVM heap as the
sum of the heap pools' peak usage (MemoryPoolMXBean via py4j; an upper bound of the true peak, as pools peak
at different moments; not for a server, whose beans a client cannot reach). The baseline reports its own
peak RSS.

Targets, each reported as measured, for shred and shred_connect alike: at most 2.5 x the floor; at least
2 x faster than the baseline; peak memory that does not grow with batch size (the largest size's peaks at
most 1.25 x the smallest size's, for 4 x the events with the defaults). A JVM fills a large heap lazily, so
whether its peak grows depends on when its collector ran; in a heap that the job fills at every size
(`--driver-memory 512m`) the peaks show what it needs (benchmarks/README.md, Memory).

Results go to benchmarks/results/shred.json with the machine (cores, RAM, Python, Java, Spark versions) and
the load average, and a table on stdout, followed by the shred jobs' phases (ShredReport.phase_seconds:
parse, full parser, decisions, event manifest, summary, output, publish), median and spread. `--profile`
also enables Spark's event log (benchmarks/work/spark-events/, for the history server) and prints the
stages of the last shred run, slowest first.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent
WORK = ROOT / "work" / "shred"
EVENT_LOG = ROOT / "work" / "spark-events"
RESULTS = ROOT / "results"
BASELINE = ROOT / "single_process_baseline.py"
RUN = "run=2026-03-01-10-00-00"
SEED = 42
FLOOR_LIMIT = 2.5
BASELINE_SPEEDUP = 2.0
MEMORY_GROWTH_LIMIT = 1.25
SHRED_JOBS = ("shred", "shred_connect")
BOUND = "one_pass_connect"  # measured beside the shred jobs, bound to no target (one_pass_bound.py)
CONNECT_JOBS = ("shred_connect", BOUND)
SPARK_JOBS = ("floor", "shred", *CONNECT_JOBS)
JOBS = (*SPARK_JOBS, "baseline")


# ---------------------------------------------------------------------------------------------------------
# Data


def data_folder(events: int) -> Path:
    return WORK / str(events)


def ensure_data(events: int, files: int, rebuild: bool) -> dict[str, Any]:
    """Generate the run folder of `events` events unless it is cached with the same options."""
    from snowplow_assets.datagen.enriched import GenerationOptions, generate_run_folder

    folder = data_folder(events)
    marker = folder / "generated.json"
    options = GenerationOptions(events=events, files=files, seed=SEED)
    wanted = {"events": events, "files": files, "seed": SEED, "start": options.start.isoformat()}
    if not rebuild and marker.exists() and json.loads(marker.read_text())["options"] == wanted:
        return json.loads(marker.read_text())
    shutil.rmtree(folder, ignore_errors=True)
    started = time.perf_counter()
    stats = generate_run_folder(folder / "lake" / "enriched" / RUN, options)
    generated = {
        "options": wanted,
        "seconds": round(time.perf_counter() - started, 1),
        "lines": stats.lines_written,
        "bytes": sum(path.stat().st_size for path in stats.files),
        "natural_duplicates": stats.natural_duplicates,
        "synthetic_duplicates": stats.synthetic_duplicates,
        "bad_lines": stats.bad_lines,
    }
    marker.write_text(json.dumps(generated, indent=2))
    return generated


# ---------------------------------------------------------------------------------------------------------
# Peak memory of the driver and the JVM


def status_kb(pid: int | str, key: str) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(key + ":"):
            return int(line.split()[1])
    raise RuntimeError(f"/proc/{pid}/status has no {key}")


def reset_peak_rss(pid: int | str) -> None:
    """Reset the kernel's peak RSS counter (VmHWM) of a process to its current RSS (Linux 4.0+)."""
    Path(f"/proc/{pid}/clear_refs").write_text("5")


class MemoryProbe:
    """Peaks of the driver's RSS, the JVM's RSS and, where the driver can reach the JVM's management beans (a
    JVM of its own, not a Spark Connect server's), the JVM's heap, over one measured call."""

    def __init__(self, jvm_pid: int, heap_pools: list[Any]):
        self.jvm_pid = jvm_pid
        self.heap_pools = heap_pools

    @classmethod
    def of_session(cls, spark: Any) -> MemoryProbe:
        management = spark.sparkContext._jvm.java.lang.management.ManagementFactory
        pools = [p for p in management.getMemoryPoolMXBeans() if p.getType().name() == "HEAP"]
        return cls(int(management.getRuntimeMXBean().getPid()), pools)

    def reset(self) -> None:
        for pid in ("self", self.jvm_pid):
            reset_peak_rss(pid)
        for pool in self.heap_pools:
            pool.resetPeakUsage()

    def peaks(self) -> dict[str, float]:
        peaks = {
            "driver_rss_mb": round(status_kb("self", "VmHWM") / 1024, 1),
            "jvm_rss_mb": round(status_kb(self.jvm_pid, "VmHWM") / 1024, 1),
        }
        if self.heap_pools:
            peaks["jvm_heap_mb"] = round(sum(p.getPeakUsage().getUsed() for p in self.heap_pools) / 2**20, 1)
        return peaks


def cpu_steal_seconds() -> float:
    """CPU seconds that the host gave to others while this virtual machine's vCPUs wanted them, summed over
    the vCPUs since boot (`steal` in /proc/stat; 0 on bare metal). The machine's drift (benchmarks/README.md)
    is largely this: a run whose share is high was measured on a machine that was partly elsewhere."""
    fields = Path("/proc/stat").read_text().splitlines()[0].split()
    return int(fields[8]) / os.sysconf("SC_CLK_TCK") if len(fields) > 8 else 0.0


class StealMeter:
    """The share of the machine's CPU time stolen by its host over one measured call, in percent."""

    def __init__(self) -> None:
        self.started, self.stolen = time.perf_counter(), cpu_steal_seconds()

    def percent(self) -> float:
        elapsed = (time.perf_counter() - self.started) * (os.cpu_count() or 1)
        return round(100 * (cpu_steal_seconds() - self.stolen) / elapsed, 1)


def jvm_seconds(pid: int) -> tuple[float, float]:
    """Seconds the JVM's JIT compilers and garbage collectors have spent so far, from its performance
    counters (`jcmd PID PerfCounter.print`), which reach a Spark Connect server's JVM as well as a driver's."""
    done = subprocess.run(["jcmd", str(pid), "PerfCounter.print"], capture_output=True, text=True, check=True)
    counters = dict(line.split("=", 1) for line in done.stdout.splitlines() if "=" in line)
    ticks = int(counters["sun.os.hrt.frequency"])
    gc = sum(int(v) for k, v in counters.items() if k.startswith("sun.gc.collector.") and k.endswith(".time"))
    return int(counters["java.ci.totalTime"]) / ticks, gc / ticks


# ---------------------------------------------------------------------------------------------------------
# One size, in its own process


@dataclass
class Paths:
    lake: Path
    floor: Path
    one_pass: Path
    baseline: Path

    @classmethod
    def of(cls, events: int) -> Paths:
        folder = data_folder(events)
        return cls(folder / "lake", folder / "floor-output", folder / "one-pass-output", folder / "baseline-output")

    def clean(self) -> None:
        """Remove every output, so each run starts from the same state: input only, empty event manifest."""
        for path in (self.lake / "shredded", self.lake / "event-manifest", self.floor, self.one_pass, self.baseline):
            shutil.rmtree(path, ignore_errors=True)


def spark_config(master: str, profile: bool) -> dict[str, str]:
    from snowplow_assets.settings import Settings

    config = {**Settings().spark_config, "spark.master": master}
    if profile:
        EVENT_LOG.mkdir(parents=True, exist_ok=True)
        config.update(
            {"spark.eventLog.enabled": "true", "spark.eventLog.dir": EVENT_LOG.as_uri(), "spark.ui.enabled": "true"}
        )
    return config


def _stages(spark: Any, group: str) -> list[dict[str, Any]]:
    """The stages of the jobs of one job group, from the Spark UI's REST API, slowest first."""
    sc = spark.sparkContext
    base = f"{sc.uiWebUrl}/api/v1/applications/{sc.applicationId}"

    def get(path: str) -> Any:
        with urllib.request.urlopen(base + path, timeout=30) as response:
            return json.load(response)

    stage_ids = {s for job in get("/jobs") if job.get("jobGroup") == group for s in job["stageIds"]}
    rows = []
    for stage in get("/stages"):
        if stage["stageId"] in stage_ids and stage["status"] == "COMPLETE":
            started = datetime.fromisoformat(stage["submissionTime"].replace("GMT", "+00:00"))
            ended = datetime.fromisoformat(stage["completionTime"].replace("GMT", "+00:00"))
            rows.append(
                {
                    "stage": stage["stageId"],
                    "seconds": round((ended - started).total_seconds(), 1),
                    "task_seconds": round(stage["executorRunTime"] / 1000, 1),
                    "task_cpu_seconds": round(stage["executorCpuTime"] / 1e9, 1),
                    "tasks": stage["numTasks"],
                    "input_mb": round(stage["inputBytes"] / 2**20),
                    "output_mb": round(stage["outputBytes"] / 2**20),
                    "shuffle_read_mb": round(stage["shuffleReadBytes"] / 2**20, 1),
                    "shuffle_write_mb": round(stage["shuffleWriteBytes"] / 2**20, 1),
                    "name": stage["name"],
                }
            )
    return sorted(rows, key=lambda r: -r["seconds"])


def shred_counts(report: Any) -> dict[str, Any]:
    from snowplow_assets.events import dedup

    return {
        "lines_read": report.lines_read,
        "good": report.good,
        "bad": report.bad,
        "natural_duplicates_removed": report.duplicates.get(dedup.NATURAL_DUPLICATE, 0),
        "synthetic_duplicates_renamed": report.duplicates.get(dedup.SYNTHETIC_RENAME, 0),
        "cross_batch_decisions": sum(
            report.duplicates.get(a, 0)
            for a in (dedup.CROSS_BATCH_DUPLICATE, dedup.CROSS_BATCH_RENAME, dedup.MANIFEST_ERROR)
        ),
        "entities": {
            f"{t.schema} {t.kind}": t.count for t in sorted(report.entity_types, key=lambda t: (t.schema, t.kind))
        },
    }


def measure_job(
    job: str, events: int, master: str, profile: bool, remote: str | None = None, server_pid: int | None = None
) -> dict[str, Any]:
    """One timed run of `floor`, `shred`, `shred_connect` or `one_pass_connect` in this process.

    `floor` and `shred` start a JVM of their own, as a Dagster run of the shred job does with
    SNOWPLOW_SPARK_SERVER=own: every run pays, like it, for compiling Spark's generated code (the JIT figures
    show how much). `shred_connect` is the same job as a client of the shared Spark Connect server at
    `remote`, as Dagster runs are by default; the JVM figures are then the server's (`server_pid`), as they
    are for `one_pass_connect`, the one-pass bound on the same server.
    """
    from one_pass_bound import write_one_pass  # benchmarks/, this script's folder

    from snowplow_assets.events.dedup import InBatchDedup
    from snowplow_assets.events.shred_batch import ShredOptions, shred_run_folder
    from snowplow_assets.lake import Lake
    from snowplow_assets.manifest.lake_event_manifest import LakeEventManifest
    from snowplow_assets.spark import build_spark_session, spark_session_config
    from snowplow_assets.storage import LocalFileSystem

    paths = Paths.of(events)
    files = sorted(str(p) for p in (paths.lake / "enriched" / RUN).glob("part-*"))
    config = spark_config(master, profile)
    spark = build_spark_session(
        {**config, **({"spark.remote": remote} if remote else {})}, app_name=f"benchmark-shred-{job}-{events}"
    )
    if remote and server_pid is None:
        raise ValueError("a run on a Spark Connect server needs the server's pid for its JVM figures")
    probe = MemoryProbe(server_pid, []) if server_pid is not None else MemoryProbe.of_session(spark)
    fs, lake = LocalFileSystem(), Lake(str(paths.lake))
    options = ShredOptions(
        dedup=InBatchDedup(natural=True, synthetic=True),
        compression="NONE",
        event_manifest=LakeEventManifest(fs, lake),
        cross_batch_synthetic=True,
    )

    def action() -> Any:
        if job == "floor":
            return spark.read.text(files).write.text(str(paths.floor))
        if job == BOUND:
            return write_one_pass(spark, files, str(paths.one_pass))
        return shred_run_folder(spark, fs, lake, RUN, options)

    paths.clean()
    if not remote:
        spark.sparkContext.setJobGroup(job, job)
    jit_before, gc_before = jvm_seconds(probe.jvm_pid)
    load = os.getloadavg()[0]
    probe.reset()
    started, steal = time.perf_counter(), StealMeter()
    report = action()
    seconds = time.perf_counter() - started
    stolen = steal.percent()
    peaks = probe.peaks()
    jit_after, gc_after = jvm_seconds(probe.jvm_pid)
    paths.clean()
    result: dict[str, Any] = {
        "sample": {
            "seconds": round(seconds, 2),
            **peaks,
            "jit_seconds": round(jit_after - jit_before, 1),
            "gc_seconds": round(gc_after - gc_before, 1),
            "load_average": round(load, 2),
            "cpu_steal_percent": stolen,
        },
        "spark_config": dict(sorted(spark_session_config(config).items())),
        "java": _java_version(probe.jvm_pid),
        "spark": spark.version,
    }
    if job == BOUND:
        result["counts"] = report
    elif job != "floor":
        result["counts"] = shred_counts(report)
        result["sample"]["phase_seconds"] = {name: round(t, 2) for name, t in report.phase_seconds.items()}
        if profile and not remote:
            result["stages"] = _stages(spark, job)
    spark.stop()
    return result


def _java_version(pid: int) -> str:
    done = subprocess.run(["jcmd", str(pid), "VM.system_properties"], capture_output=True, text=True, check=True)
    return next(line.split("=", 1)[1] for line in done.stdout.splitlines() if line.startswith("java.version="))


# ---------------------------------------------------------------------------------------------------------
# The shared Spark Connect server of `shred_connect`, a new one for each size


@contextmanager
def shared_connect_server(events: int, master: str, profile: bool) -> Iterator[tuple[str, int]]:
    """The shared server that Dagster runs lease by default (snowplow_assets/shared_spark_server.py), with the
    benchmark's Spark settings, new for the size: yields its client URL and its JVM's pid, and stops it."""
    from snowplow_assets.shared_spark_server import SharedServer

    config = spark_config(master, profile)
    shared = SharedServer(WORK / f"spark-servers-{events}", idle_seconds=3600)
    shared.stop(config)  # one left by an interrupted benchmark
    try:
        with shared.lease(config) as address:
            yield address.url, address.jvm_pid
    finally:
        shared.stop(config)


def run_baseline(events: int) -> dict[str, Any]:
    paths = Paths.of(events)
    files = sorted(str(p) for p in (paths.lake / "enriched" / RUN).glob("part-*"))
    paths.clean()
    load = os.getloadavg()[0]
    command = [sys.executable, str(BASELINE), "--output", str(paths.baseline), *files]
    steal = StealMeter()
    result = json.loads(subprocess.run(command, stdout=subprocess.PIPE, check=True, text=True).stdout)
    stolen = steal.percent()
    paths.clean()
    sample = {
        "seconds": round(result["seconds"], 2),
        "baseline_rss_mb": result["peak_rss_mb"],
        "load_average": round(load, 2),
        "cpu_steal_percent": stolen,
    }
    return {"sample": sample, "counts": result["counts"]}


def measure_size(events: int, runs: int, master: str, profile: bool) -> dict[str, Any]:
    """`runs` rounds of floor, shred, shred_connect, one_pass_connect and baseline, each in a process of its
    own.

    The size gets a new Spark Connect server, whose first shred run (its JVM's first, untimed among the
    rounds) is reported apart, as `connect_first_run`."""
    samples: dict[str, list[dict[str, float]]] = {job: [] for job in JOBS}
    counts: dict[str, list[dict[str, Any]]] = {"shred": [], "shred_connect": [], BOUND: [], "baseline": []}
    spark_runs = {}
    with shared_connect_server(events, master, profile) as (server_url, server_pid):

        def spark_job(job: str) -> dict[str, Any]:
            command = [sys.executable, __file__, "--measure", job, "--events", str(events), "--master", master]
            if job in CONNECT_JOBS:
                command += ["--remote", server_url, "--server-pid", str(server_pid)]
            done = subprocess.run(
                [*command, *(["--profile"] if profile else [])], stdout=subprocess.PIPE, check=True, text=True
            )
            return json.loads(done.stdout.strip().splitlines()[-1])

        first_run = spark_job("shred_connect")
        counts["shred_connect"].append(first_run["counts"])
        for run in range(1, runs + 1):
            for job in SPARK_JOBS:
                spark_runs[job] = spark_job(job)
                samples[job].append(spark_runs[job]["sample"])
            for job in (*SHRED_JOBS, BOUND):
                counts[job].append(spark_runs[job]["counts"])
            baseline = run_baseline(events)
            samples["baseline"].append(baseline["sample"])
            counts["baseline"].append(baseline["counts"])
            print(
                f"{events:,} events, run {run}/{runs}: "
                + ", ".join(f"{job} {samples[job][-1]['seconds']:.1f} s" for job in JOBS)
                + f" (the Connect server's first run {first_run['sample']['seconds']:.1f} s)",
                file=sys.stderr,
                flush=True,
            )
    result = {
        "events": events,
        "samples": samples,
        "connect_first_run": first_run["sample"],
        "shred_counts": counts["shred"][0],
        "baseline_counts": counts["baseline"][0],
        "one_pass_counts": counts[BOUND][0],
        "counts_stable": all(c == counts["shred"][0] for c in counts["shred"] + counts["shred_connect"])
        and all(c == counts[job][0] for job in (BOUND, "baseline") for c in counts[job]),
        "spark_config": spark_runs["shred"]["spark_config"],
        "java": spark_runs["shred"]["java"],
        "spark": spark_runs["shred"]["spark"],
    }
    if profile:
        result["profile"] = {"event_log": str(EVENT_LOG), "shred_stages": spark_runs["shred"]["stages"]}
    return result


# ---------------------------------------------------------------------------------------------------------
# Summary, targets and the table


def _spread(values: list[float]) -> dict[str, float]:
    return {"median": round(statistics.median(values), 2), "min": round(min(values), 2), "max": round(max(values), 2)}


def summarise(size: dict[str, Any], generated: dict[str, Any]) -> dict[str, Any]:
    lines = generated["lines"]
    jobs = {}
    for job, samples in size["samples"].items():
        seconds = _spread([s["seconds"] for s in samples])
        memory = {k: max(s[k] for s in samples) for k in samples[0] if k.endswith("_mb")}
        medians = {
            k: statistics.median(s[k] for s in samples)
            for k in ("jit_seconds", "gc_seconds", "load_average", "cpu_steal_percent")
            if k in samples[0]
        }
        jobs[job] = {
            "seconds": seconds,
            "events_per_second": round(size["events"] / seconds["median"]),
            "lines_per_second": round(lines / seconds["median"]),
            "peak_mb": memory,
            **medians,
        }
        if "phase_seconds" in samples[0]:
            jobs[job]["phase_seconds"] = {
                p: _spread([s["phase_seconds"].get(p, 0.0) for s in samples]) for p in samples[0]["phase_seconds"]
            }
    shred, baseline = size["shred_counts"], size["baseline_counts"]
    compared = ("lines_read", "good", "bad", "natural_duplicates_removed", "synthetic_duplicates_renamed", "entities")

    def ratio(a: str, b: str) -> float:
        return round(jobs[a]["seconds"]["median"] / jobs[b]["seconds"]["median"], 2)

    return {
        "events": size["events"],
        "lines": lines,
        "input_bytes": generated["bytes"],
        "jobs": jobs,
        "connect_first_run": size["connect_first_run"],
        **{f"{job}_over_floor": ratio(job, "floor") for job in SHRED_JOBS},
        **{f"baseline_over_{job}": ratio("baseline", job) for job in SHRED_JOBS},
        f"{BOUND}_over_floor": ratio(BOUND, "floor"),
        f"shred_connect_over_{BOUND}": ratio("shred_connect", BOUND),
        # The bound must have read every line the shred jobs read, or it bounds less work than theirs.
        "counts_agree": all(shred[k] == baseline[k] for k in compared)
        and size["one_pass_counts"]["lines"] == shred["lines_read"]
        and size["counts_stable"],
        "shred_counts": shred,
        "baseline_counts": baseline,
        "one_pass_counts": size["one_pass_counts"],
    }


def targets(sizes: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The issue's three targets, for the job in a new JVM and on a long-lived server alike."""
    largest, smallest = sizes[-1], sizes[0]
    found = []
    for job in SHRED_JOBS:
        found += [
            {
                "target": f"{job} <= {FLOOR_LIMIT} x floor ({largest['events']:,} events)",
                "measured": f"{largest[f'{job}_over_floor']:.2f} x",
                "pass": largest[f"{job}_over_floor"] <= FLOOR_LIMIT,
            },
            {
                "target": f"{job} >= {BASELINE_SPEEDUP:g} x faster than the baseline ({largest['events']:,} events)",
                "measured": f"{largest[f'baseline_over_{job}']:.2f} x",
                "pass": largest[f"baseline_over_{job}"] >= BASELINE_SPEEDUP,
            },
        ]
        if len(sizes) > 1:
            big, small = largest["jobs"][job]["peak_mb"], smallest["jobs"][job]["peak_mb"]
            growth = {k: round(big[k] / small[k], 2) for k in big}
            found.append(
                {
                    "target": f"{job} peak memory does not grow: {largest['events']:,} vs {smallest['events']:,} "
                    f"events, each peak <= {MEMORY_GROWTH_LIMIT} x",
                    "measured": ", ".join(
                        f"{k.removesuffix('_mb').replace('_', ' ')} {v:.2f} x" for k, v in growth.items()
                    ),
                    "pass": all(v <= MEMORY_GROWTH_LIMIT for v in growth.values()),
                }
            )
    return found


def _mb(value: float | None) -> str:
    return "" if value is None else f"{value:,.0f}"


def _number(value: float | None) -> str:
    return "" if value is None else f"{value:.1f}"


def table(results: dict[str, Any]) -> str:
    from snowplow_assets.events.shred_batch import PHASES

    machine = results["machine"]
    out = [
        f"Shred benchmark, {machine['cores']} cores, {machine['ram_gb']} GB RAM, Spark {machine['spark']} {machine['master']}, "
        f"driver memory {machine['driver_memory']}, Python {machine['python']}, Java {machine['java']} "
        f"({machine['spark_config'].get('spark.driver.extraJavaOptions')}); "
        f"load average {results['load_average_before'][0]:.1f} before, {results['load_average_after'][0]:.1f} after. "
        f"Seconds: median of {results['runs']} runs (fastest-slowest), each job in a process of its own: floor and shred "
        f"start a new JVM, shred_connect and one_pass_connect are clients of a server started for the size; JIT: of that, seconds "
        f"the JVM spent compiling code (median). Memory: highest peak of the runs, MB (the server's JVM for "
        f"shred_connect and one_pass_connect, whose heap the client cannot read). "
        f"Load: median 1-minute load average at the start of the runs. Steal: median share of the machine's "
        f"CPU time its host took for others during the runs (/proc/stat), which slows every job.",
        "",
        "| events (lines, input) | job | seconds | events/s | lines/s | JIT s | load | steal % | driver RSS | JVM RSS | JVM heap | baseline RSS |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    labels = {
        "floor": "floor: Spark reads the lines, writes them back",
        "shred": "shred: full job, every dedup, lake manifest",
        "shred_connect": "shred_connect: the same on the shared Spark Connect server",
        BOUND: "one_pass_connect: the bound, on that server: parse and write, nothing else",
        "baseline": "baseline: one Python process",
    }
    for size in results["sizes"]:
        first = f"{size['events']:,} ({size['lines']:,}, {size['input_bytes'] / 1e9:.2f} GB)"
        for job in JOBS:
            data = size["jobs"][job]
            s, peak = data["seconds"], data["peak_mb"]
            out.append(
                f"| {first} | {labels[job]} | {s['median']:.1f} ({s['min']:.1f}-{s['max']:.1f}) | {data['events_per_second']:,} | {data['lines_per_second']:,} "
                f"| {_number(data.get('jit_seconds'))} | {data['load_average']:.1f} | {_number(data.get('cpu_steal_percent'))} "
                f"| {_mb(peak.get('driver_rss_mb'))} | {_mb(peak.get('jvm_rss_mb'))} | {_mb(peak.get('jvm_heap_mb'))} "
                f"| {_mb(peak.get('baseline_rss_mb'))} |"
            )
            first = ""
        first_run = size["connect_first_run"]
        out.append(
            f"| | the Connect server's first run (its JVM new): {first_run['seconds']:.1f} s | | | | "
            f"{_number(first_run['jit_seconds'])} | | | | | | |"
        )
        out.append(
            "| | "
            + "; ".join(
                f"{job} / floor = {size[f'{job}_over_floor']:.2f}, baseline / {job} = {size[f'baseline_over_{job}']:.2f}"
                for job in SHRED_JOBS
            )
            + f"; {BOUND} / floor = {size[f'{BOUND}_over_floor']:.2f}, "
            f"shred_connect / {BOUND} = {size[f'shred_connect_over_{BOUND}']:.2f}"
            + f"; counts {'agree' if size['counts_agree'] else 'DIFFER'} | | | | | | | | | | |"
        )
    out += ["", "| target | measured | result |", "|---|---|---|"]
    out += [f"| {t['target']} | {t['measured']} | {'pass' if t['pass'] else 'FAIL'} |" for t in results["targets"]]
    out += ["", "Shred job's phases (ShredReport.phase_seconds), seconds: median of the runs (fastest-slowest).", ""]
    columns = [(size, job) for size in results["sizes"] for job in SHRED_JOBS]
    out += [
        "| phase | " + " | ".join(f"{size['events']:,} events, {job}" for size, job in columns) + " |",
        "|---|" + "---:|" * len(columns),
    ]
    measured = {p for size, job in columns for p in size["jobs"][job].get("phase_seconds", {})}
    for phase in (p for p in PHASES if p in measured):
        spreads = [size["jobs"][job].get("phase_seconds", {}).get(phase) for size, job in columns]
        out.append(
            f"| {phase} | "
            + " | ".join("" if t is None else f"{t['median']:.1f} ({t['min']:.1f}-{t['max']:.1f})" for t in spreads)
            + " |"
        )
    return "\n".join(out)


def _ram_gb() -> float:
    total_kb = next(
        int(line.split()[1]) for line in Path("/proc/meminfo").read_text().splitlines() if line.startswith("MemTotal:")
    )
    return round(total_kb / 2**20, 1)


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument(
        "--events", type=int, nargs="+", default=[250_000, 1_000_000], help="batch sizes, distinct events"
    )
    parser.add_argument("--runs", type=int, default=3, help="runs of each job per size; figures are their median")
    parser.add_argument("--files", type=int, default=4, help="part files per run folder")
    parser.add_argument("--master", default="local[2]", help="Spark master of the floor and the shred job")
    parser.add_argument("--profile", action="store_true", help="event log, and the stages of the last shred run")
    parser.add_argument("--rebuild", action="store_true", help="generate the data again even if cached")
    parser.add_argument("--output", type=Path, default=RESULTS / "shred.json", help="results file")
    parser.add_argument(
        "--driver-memory",
        help="the JVMs' heap (SNOWPLOW_SPARK_DRIVER_MEMORY, the project's setting, 1g by default) for every Spark "
        "job and the server; a heap the jobs fill at every size shows whether what they need grows",
    )
    # internal: one timed Spark job of the one size in --events, in a child process
    parser.add_argument("--measure", choices=SPARK_JOBS, help=argparse.SUPPRESS)
    parser.add_argument("--remote", help=argparse.SUPPRESS)
    parser.add_argument("--server-pid", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.driver_memory is not None:
        os.environ["SNOWPLOW_SPARK_DRIVER_MEMORY"] = args.driver_memory  # read by Settings, here and in every child

    if args.measure is not None:
        print(
            json.dumps(
                measure_job(args.measure, args.events[0], args.master, args.profile, args.remote, args.server_pid)
            )
        )
        return

    sizes = sorted(set(args.events))
    generated = {}
    for events in sizes:
        generated[events] = ensure_data(events, args.files, args.rebuild)
        print(f"data: {events:,} events, {generated[events]['lines']:,} lines, {generated[events]['bytes'] / 1e9:.2f} GB "
              f"in {data_folder(events)}", file=sys.stderr, flush=True)  # fmt: skip

    load_before = os.getloadavg()
    measured = [measure_size(events, args.runs, args.master, args.profile) for events in sizes]
    load_after = os.getloadavg()

    summaries = [summarise(size, generated[size["events"]]) for size in measured]
    results: dict[str, Any] = {
        "when": datetime.now(UTC).isoformat(timespec="seconds"),
        "command": "benchmarks/shred.py " + " ".join(argv),
        "runs": args.runs,
        "machine": {
            "cores": os.cpu_count(),
            "ram_gb": _ram_gb(),
            "platform": platform.platform(),
            "python": platform.python_version(),
            "java": measured[0]["java"],
            "spark": measured[0]["spark"],
            "master": args.master,
            "driver_memory": measured[0]["spark_config"].get("spark.driver.memory"),
            "spark_config": measured[0]["spark_config"],
        },
        "load_average_before": [round(x, 2) for x in load_before],
        "load_average_after": [round(x, 2) for x in load_after],
        "sizes": summaries,
        "targets": targets(summaries),
        "samples": {str(size["events"]): size["samples"] for size in measured},
    }
    if args.profile:
        results["profile"] = {str(size["events"]): size["profile"] for size in measured}
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(results, indent=2) + "\n")
    print(table(results))
    if args.profile:
        for size in measured:
            print(f"\nStages of the last shred run, {size['events']:,} events (event log: {EVENT_LOG}):\n")
            print(
                "| stage | seconds | task seconds | task CPU seconds | tasks | input MB | output MB | shuffle read MB | shuffle write MB | name |"
            )
            print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|")
            for s in size["profile"]["shred_stages"]:
                print(f"| {s['stage']} | {s['seconds']} | {s['task_seconds']} | {s['task_cpu_seconds']} | {s['tasks']} | {s['input_mb']} | {s['output_mb']} "
                      f"| {s['shuffle_read_mb']} | {s['shuffle_write_mb']} | {s['name']} |")  # fmt: skip
    print(f"\nresults: {args.output}")


if __name__ == "__main__":
    main(sys.argv[1:])
