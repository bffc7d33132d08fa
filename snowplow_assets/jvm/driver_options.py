"""The default JVM options of the Spark driver, which on a local master runs every task too.

A Dagster run starts a new JVM, and a new JVM spends about a third of a shred run's CPU time compiling, on
the same cores as the tasks (README, Performance). The options that make it compile less were each measured
against the job without them (benchmarks/README.md):

- `-XX:+UseParallelGC`, smaller inlining limits: the parallel collector (probably through its simpler write
  barriers) and less inlining make compilation cheaper and the job about a fifth faster.
- `compiler_directives.json`: keeps HotSpot's optimising compiler (C2) off the libraries that only build
  queries on the driver: Janino, which compiles the Java that Spark generates; ANTLR, which parses SQL
  text; the ASM class reader of Spark's closure cleaner; and ICU. They run once per query, not once per
  row, so C2's work on them (some of Janino's parser methods take over a second each) is rarely repaid;
  the quick C1 compiler still compiles them, and per row nothing changes. A run compiles for 7-15 fewer
  CPU-seconds; at 1,000,000 events it was about 5% faster in interleaved runs, and no faster or slower at
  20,000 and 250,000. Compiler directives are a diagnostic HotSpot feature, hence the unlock option.
- `-XX:+DisplayVMOutputToStderr`: HotSpot's own messages ("1 compiler directives added" as the JVM starts,
  thread dumps) go to stderr. The JVM shares the stdout of the command that started Spark, and a command's
  stdout may be data (`--json`).

These are the driver's options only: executors on a cluster keep their own (SNOWPLOW_SPARK_CONF), as
nothing was measured there.
"""

from __future__ import annotations

import shlex
from pathlib import Path

COMPILER_DIRECTIVES = Path(__file__).resolve().parent / "compiler_directives.json"


def driver_java_options(compiler_directives: Path = COMPILER_DIRECTIVES) -> str:
    # Spark's launcher splits the options as a shell would, so a path with a space must be quoted.
    return (
        "-XX:+UseParallelGC -XX:FreqInlineSize=100 -XX:MaxInlineSize=20 -XX:+UnlockDiagnosticVMOptions "
        f"-XX:CompilerDirectivesFile={shlex.quote(str(compiler_directives))} -XX:+DisplayVMOutputToStderr"
    )


DEFAULT_DRIVER_JAVA_OPTIONS = driver_java_options()
