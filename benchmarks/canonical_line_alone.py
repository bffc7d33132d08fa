"""The fast path's Java function by itself, without Spark: what it costs a line, on one thread and on two.

    .venv/bin/python benchmarks/canonical_line_alone.py [--events 1000000] [--lines 260000] [--rounds 12]

The parse pass runs the function (snowplow_assets/jvm/src/.../CanonicalLine.java) inside Spark, which decodes
each line into a Java string and converts the row the function returns into its own. This calls the same
function, from the project's jar, in a loop over lines held in memory (benchmarks/jvm/CanonicalLineAlone.java,
compiled here against that jar), in a JVM with the project's collector and a heap that holds the lines, so
that a parse pass's time can be split into the function and Spark's interface to it (benchmarks/README.md,
Where a warm parse pass goes, by subtraction). Two sets of steps, each on one thread and on two:

- `function`: the function alone, on lines held as Java strings;
- `spark`: what Spark does around it as well: the lines held as Spark holds them (UTF-8), each decoded into a
  string, and the returned row converted by Spark's converter for the function's result type
  (canonical.py's) and written into one of Spark's rows.

It reads the first `--lines` lines of shred.py's data for `--events` (generated there, once), and reports
the median of the last half of the rounds, the JVM being warm by then, per line and scaled to the batch's
lines. Results: benchmarks/results/canonical_line_alone.json.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pyspark

sys.path.insert(0, str(Path(__file__).resolve().parent))
import shred  # noqa: E402  (the shred benchmark's data)

HARNESS = Path(__file__).resolve().parent / "jvm" / "CanonicalLineAlone.java"


STEPS = ("function", "spark")


def compile_harness(classes: str) -> str:
    """Compile the harness into `classes`; the class path to run it with."""
    from snowplow_assets.jvm import JAVA_RELEASE, functions_jar

    jar = functions_jar()
    javac = shutil.which("javac")
    if jar is None or javac is None:
        raise RuntimeError("no jar of the project's Spark functions, or no javac: a JDK 17 or newer is needed")
    classpath = f"{jar}:{Path(pyspark.__file__).parent / 'jars' / '*'}"
    subprocess.run(
        [javac, "--release", str(JAVA_RELEASE), "-nowarn", "-cp", classpath, "-d", classes, str(HARNESS)], check=True
    )
    return f"{classes}:{classpath}"


def measure(classpath: str, part_file: Path, lines: int, threads: int, rounds: int, steps: str) -> list[float]:
    """Seconds of each round, from a JVM of its own."""
    from snowplow_assets.events.canonical import function_spec

    result_type = json.loads(function_spec())["result"]  # what the function returns, as Spark SQL writes types
    java = shutil.which("java")
    if java is None:
        raise RuntimeError("java is needed")
    done = subprocess.run(
        [java, "-Xmx3g", "-XX:+UseParallelGC", "-cp", classpath, HARNESS.stem,
         str(part_file), str(lines), str(threads), str(rounds), steps, result_type],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    return [float(line.split()[3]) for line in done.stdout.splitlines()]


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--events", type=int, default=1_000_000, help="whose data (shred.py's) to read")
    parser.add_argument("--lines", type=int, default=260_000, help="lines held in memory and run through")
    parser.add_argument("--rounds", type=int, default=12, help="rounds per thread count; the last half count")
    parser.add_argument("--output", type=Path, default=shred.RESULTS / "canonical_line_alone.json", help="results file")
    args = parser.parse_args(argv)

    generated = shred.ensure_data(args.events, files=4, rebuild=False)
    part_file = sorted((shred.data_folder(args.events) / "lake" / "enriched" / shred.RUN).glob("part-*"))[0]
    results: dict[str, Any] = {
        "when": datetime.now(UTC).isoformat(timespec="seconds"),
        "command": "benchmarks/canonical_line_alone.py " + " ".join(argv),
        "part_file": str(part_file),
        "batch_lines": generated["lines"],
        "steps": {},
    }
    with tempfile.TemporaryDirectory() as classes:
        classpath = compile_harness(classes)
        for steps in STEPS:
            for threads in (1, 2):
                seconds = measure(classpath, part_file, args.lines, threads, args.rounds, steps)
                warm = seconds[len(seconds) // 2 :]
                per_line = statistics.median(warm) / args.lines
                results["steps"].setdefault(steps, {})[threads] = {
                    "rounds_seconds": seconds,
                    "microseconds_per_line_wall": round(per_line * 1e6, 2),
                    "batch_seconds": round(per_line * generated["lines"], 2),
                }
                print(f"{steps}, {threads} thread(s): {per_line * 1e6:.2f} microseconds a line of wall time (median of "
                      f"rounds {len(seconds) - len(warm) + 1}-{len(seconds)}), {per_line * generated['lines']:.2f} seconds "
                      f"for the batch's {generated['lines']:,} lines")  # fmt: skip
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(results, indent=2) + "\n")
    print(f"results: {args.output}")


if __name__ == "__main__":
    main(sys.argv[1:])
