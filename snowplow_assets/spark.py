"""The one way this project builds a SparkSession, shared by Dagster runs, the CLI and the benchmarks.

With `spark.remote` (SNOWPLOW_SPARK_REMOTE) the session is a Spark Connect client's: the JVM, and with it
`spark.master`, the driver's memory and JVM options and `spark.jars`, is the server's, which
spark_connect_server.py starts with this same configuration. The session settings (`spark.sql.*`) are still
set by each client.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterator, Mapping
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from pyspark.sql import Observation, SparkSession

from snowplow_assets.jvm import POSIX_LOCAL_FILE_SYSTEM_CLASS, functions_jar
from snowplow_assets.processes import alive

if TYPE_CHECKING:  # which imports this module, to start its servers with the same configuration
    from snowplow_assets.shared_spark_server import SharedServer

# Fixed for correctness, not tunable: timestamps in the formats are UTC; partition folder values
# (vendor=com.acme, version=1-0-0) must stay strings when read back; and a local lake gets no hidden .crc
# files beside every part file, which loaders do not expect and which make an edited file unreadable (with
# the project's jar, the same file system in a form that starts no chmod process per folder it creates).
REQUIRED_SPARK_CONFIG: dict[str, str] = {
    "spark.hadoop.fs.file.impl": "org.apache.hadoop.fs.RawLocalFileSystem",
    "spark.sql.session.timeZone": "UTC",
    "spark.driver.extraJavaOptions": "-Duser.timezone=UTC",
    "spark.executor.extraJavaOptions": "-Duser.timezone=UTC",
    "spark.sql.sources.partitionColumnTypeInference.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
}


# Tuning, which SNOWPLOW_SPARK_CONF may override. Spark fuses a chain of projections into one generated
# method; past 8,000 bytes of bytecode HotSpot never compiles a method, so a fused stage that large (the
# shredder's fast path is) would run interpreted, nearly twice as slow as Spark's unfused code. At this limit
# Spark falls back to the unfused code instead: Spark's own advice for HotSpot, measured in benchmarks/README.md.
DEFAULT_SPARK_CONFIG: dict[str, str] = {
    "spark.sql.codegen.hugeMethodLimit": "8000",
    # Spark keeps the classes it compiles from generated code in a cache of 100 entries by default, split
    # across the cache's segments. A shred run compiles about a hundred, so a JVM that runs the job again (a
    # backfill in one run, the tests) evicted them and compiled about 80 anew each run (benchmarks/README.md).
    "spark.sql.codegen.cache.maxEntries": "5000",
}

# Settings of the JVM's SQL engine rather than of a session (Spark's static SQL settings): a Spark Connect
# client leaves them to its server, which ignores a session's, with a warning at every client's start.
STATIC_SQL_CONFIG = ("spark.sql.codegen.cache.maxEntries",)


def spark_session_config(settings_config: Mapping[str, str]) -> dict[str, str]:
    config = {**DEFAULT_SPARK_CONFIG, **settings_config, **REQUIRED_SPARK_CONFIG}
    if "spark.remote" in config:
        # A Spark Connect client sets its session's settings only; the rest, the project's jar among them, are
        # the server's, which spark_connect_server.py starts with this configuration (Spark refuses a master
        # beside a remote). So a client neither builds the jar nor warns that it has no JDK to build it.
        return {
            key: value
            for key, value in config.items()
            if key == "spark.remote" or (key.startswith("spark.sql.") and key not in STATIC_SQL_CONFIG)
        }
    # JVM options are one string per JVM: keep the settings' tuning and put the required ones last, so they win.
    for key in ("spark.driver.extraJavaOptions", "spark.executor.extraJavaOptions"):
        config[key] = " ".join(filter(None, (settings_config.get(key), REQUIRED_SPARK_CONFIG[key])))
    # The project's own Spark functions (snowplow_assets/jvm/), beside any jars the settings name.
    jar = functions_jar()
    config["spark.jars"] = ",".join(filter(None, (settings_config.get("spark.jars"), jar and str(jar))))
    if not config["spark.jars"]:
        del config["spark.jars"]
    if jar and config.get("spark.master", "local").startswith("local"):
        # Spark reads spark.jars through the file system itself, so the class must be on the JVM's class path
        # from its start. A cluster's executors get the jar only later, and keep Hadoop's class.
        config["spark.hadoop.fs.file.impl"] = POSIX_LOCAL_FILE_SYSTEM_CLASS
        classpath = (settings_config.get("spark.driver.extraClassPath"), str(jar))
        config["spark.driver.extraClassPath"] = os.pathsep.join(filter(None, classpath))
    return config


def python_workers_interpreter(config: Mapping[str, str]) -> str | None:
    """The interpreter that local Python workers (the DynamoDB event manifest's puts run in them) must run:
    this one, with its packages, not whatever `python3` comes first on PATH. None where PYSPARK_PYTHON
    already names one, or where the master is a cluster's, whose machines have their own."""
    if config.get("spark.master", "").startswith("local") and "PYSPARK_PYTHON" not in os.environ:
        return sys.executable
    return None


def use_python_workers_interpreter(config: Mapping[str, str]) -> None:
    """Give this process's Spark the interpreter of python_workers_interpreter. PySpark reads PYSPARK_PYTHON
    as its SparkContext starts; `spark.pyspark.python` is read by spark-submit only, never in-process."""
    if python := python_workers_interpreter(config):
        os.environ["PYSPARK_PYTHON"] = python


def build_spark_session(config: Mapping[str, str], app_name: str = "snowplow-assets") -> SparkSession:
    """A session on the JVM this process starts, or with `spark.remote` set, a Spark Connect server's."""
    use_python_workers_interpreter(config)
    builder = SparkSession.builder.appName(app_name)
    for key, value in spark_session_config(config).items():
        builder = builder.config(key, value)
    session = builder.getOrCreate()
    if not is_spark_connect(session):
        session.sparkContext.setLogLevel("WARN")
    return session


@contextmanager
def spark_session(
    config: Mapping[str, str], shared_server: SharedServer | None = None, app_name: str = "snowplow-assets"
) -> Iterator[SparkSession]:
    """The session for one piece of work, such as a Dagster run: on `shared_server` under a lease, and closed
    after the work, so that the server may stop once idle; else build_spark_session's, which this process
    keeps for its next piece of work."""
    if shared_server is None:
        yield build_spark_session(config, app_name)
        return
    with shared_server.lease(config) as server:
        session = build_spark_session({**config, "spark.remote": server.url}, app_name)
        _retry_while_alive(session, server.jvm_pid, shared_server.folder(config) / "server.log")
        try:
            yield session
        finally:
            session.stop()


@contextmanager
def lazy_spark_session(
    config: Mapping[str, str], shared_server: SharedServer | None = None, app_name: str = "snowplow-assets"
) -> Iterator[Callable[[], SparkSession]]:
    """A function that starts spark_session's session the first time it is called, and returns it every time;
    the session ends with the block. Work that finds nothing to do (a populate of no folder, a skip with no
    entry to release) then starts no Spark."""
    with ExitStack() as scope:
        started: list[SparkSession] = []

        def session() -> SparkSession:
            if not started:
                started.append(scope.enter_context(spark_session(config, shared_server, app_name)))
            return started[0]

        yield session


class SharedServerEnded(RuntimeError):
    """The shared server a session was on has ended: its work is lost, and the next lease starts another."""


def _retry_while_alive(session: SparkSession, jvm_pid: int, server_log: Path) -> None:
    """Retry the server only while its JVM lives. A Connect client retries a server it cannot reach for 10
    minutes and more (PySpark's DefaultPolicy), as it would one restarting behind a load balancer; but a shared
    server that ended (killed, out of memory, `shared-spark-server --stop`) never comes back, and its runs
    would hang for those minutes, then fail with gRPC's "failed to connect to all addresses". So the policy
    raises SharedServerEnded instead of another retry: PySpark passes an error that is not gRPC's on as it is.
    """
    from pyspark.sql.connect.client.retries import DefaultPolicy

    class WhileTheServerLives(DefaultPolicy):
        def can_retry(self, e: BaseException) -> bool:
            if super().can_retry(e) and not alive(jvm_pid):
                raise SharedServerEnded(
                    f"the shared Spark server (JVM {jvm_pid}) ended while this session used it: killed, or out "
                    f"of memory? Its log: {server_log}. The next run starts another."
                ) from e
            return super().can_retry(e)

    session.client.set_retry_policies([WhileTheServerLives()])  # type: ignore[attr-defined]


def is_spark_connect(spark: SparkSession) -> bool:
    """Whether the session is a Spark Connect client's: its JVM is the server's, out of this process's reach."""
    return type(spark).__module__.startswith("pyspark.sql.connect")


@contextmanager
def session_conf(spark: SparkSession, settings: dict[str, str]) -> Iterator[None]:
    """Session settings for one piece of work, restored after it: a run's steps share the session."""
    previous = {key: spark.conf.get(key, None) for key in settings}
    for key, value in settings.items():
        spark.conf.set(key, value)
    try:
        yield
    finally:
        for key, value in previous.items():
            if value is None:
                spark.conf.unset(key)
            else:
                spark.conf.set(key, value)


def unsorted_partitioned_write(open_files_per_task: int) -> dict[str, str]:
    """Settings for session_conf under which a partitioned write keeps a file open per partition, up to
    `open_files_per_task` in each task, instead of sorting all of a task's rows by their partition first
    (past that many, Spark sorts the rest).

    For a write to a few partitions, an open file each costs less than the sort, which also spills once a
    task's rows outgrow its share of memory (benchmarks/README.md). An open text file is a small buffer, but
    an open Parquet file holds its row group, so a Parquet write allows no more files than it has partitions.
    """
    return {
        "spark.sql.optimizer.plannedWrite.enabled": "false",  # a planned write always sorts
        "spark.sql.maxConcurrentOutputFileWriters": str(open_files_per_task),
    }


def single_phase_aggregation() -> dict[str, str]:
    """Settings for session_conf under which a grouping aggregation runs once, after its shuffle, without the
    partial aggregation before it (Spark 4.3's `spark.sql.execution.bypassPartialAggregation`; an earlier
    Spark ignores the setting and aggregates in two phases as always).

    Over keys that are nearly all distinct, the partial aggregation keeps a hash map as large as its input
    and reduces nothing. The lake event manifest's check groups a batch's keys with every live entry of the
    other batches: with 6,000,000 entries of three other batches it took 7.5-7.8 seconds in one phase
    against 12.5-14.4 in two (benchmarks/event_manifest_check.py).
    """
    return {"spark.sql.execution.bypassPartialAggregation": "true"}


def observed_counts(observation: Observation) -> dict[str, int]:
    """An observation's metrics as counts: a count over no rows, or a sum of none, is null, and means 0."""
    return {name: int(value or 0) for name, value in observation.get.items()}
