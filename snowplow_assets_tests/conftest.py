"""Shared fixtures: one real local[2] SparkSession for the whole test session, and temporary lakes."""

from __future__ import annotations

import gzip
import json
import logging
import os
import shutil
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from snowplow_assets.events.shred_batch import ShredReport, shred_run_folder
from snowplow_assets.jvm.driver_options import DEFAULT_DRIVER_JAVA_OPTIONS
from snowplow_assets.lake import Lake
from snowplow_assets.spark import build_spark_session
from snowplow_assets.spark_connect_server import DEFAULT_HOST, TOKEN_VARIABLE, RunningServer, free_port
from snowplow_assets.storage import LocalFileSystem

# Dagster's SQLite storage syncs each event of a run to disk: on this project's 2-core machine a run of one
# trivial op took 0.9-1.6 s with its instance on the disk and 0.4 s in RAM, and the tests of runs and
# manifests without Spark took half the time (README, Development). The tests' temporary files go to a RAM
# disk when there is one with room, unless the user chose a place for them (TMPDIR, --basetemp).
RAM_DISK = Path("/dev/shm")
RAM_DISK_ROOM = 4 << 30


def _is_tmpfs(path: Path) -> bool:
    try:
        mounts = Path("/proc/mounts").read_text().splitlines()
    except OSError:
        return False
    return any(line.split()[1:3] == [str(path), "tmpfs"] for line in mounts)


# Every lake of the tests lies below a folder whose name Hadoop expands as a glob in a path Spark reads (`{a,b}`
# matches `a` or `b`, not itself), so that a read of a lake path left unescaped fails somewhere in the suite
# (storage/base.py, spark_read_path): a lake under `checkout [old]` failed every shred until 2026-11-28. Not
# `?`, which ends the path of the SQLite URLs of Dagster's storage, nor `[`, which Dagster 1.13's SQLite event
# log storage globs its own folder with, so that backfills never start; storage/test_base.py reads a lake
# named with every glob character.
GLOB_CHARACTERS_FOLDER = "snowplow-assets tests {a,b}*"


def pytest_configure(config: pytest.Config) -> None:
    if config.option.basetemp or os.environ.get("TMPDIR") or os.environ.get("PYTEST_DEBUG_TEMPROOT"):
        return
    ram_disk = (
        _is_tmpfs(RAM_DISK) and os.access(RAM_DISK, os.W_OK) and shutil.disk_usage(RAM_DISK).free >= RAM_DISK_ROOM
    )
    temporary = (RAM_DISK if ram_disk else Path(tempfile.gettempdir())) / GLOB_CHARACTERS_FOLDER
    temporary.mkdir(exist_ok=True)
    os.environ["TMPDIR"] = str(temporary)  # the commands, servers and runs the tests start, too
    tempfile.tempdir = None  # read TMPDIR again


# The project's default JVM options, so the tests run Spark as a deployment does.
TEST_SPARK_CONFIG = {
    "spark.driver.extraJavaOptions": DEFAULT_DRIVER_JAVA_OPTIONS,
    "spark.master": "local[2]",
    "spark.driver.memory": "1g",
    "spark.sql.shuffle.partitions": "2",
    "spark.default.parallelism": "2",
    "spark.ui.enabled": "false",
}

# The same, as the SNOWPLOW_* settings of a process of its own (a command, a server).
TEST_SPARK_SETTINGS = {
    "SNOWPLOW_SPARK_MASTER": TEST_SPARK_CONFIG["spark.master"],
    "SNOWPLOW_SPARK_DRIVER_MEMORY": TEST_SPARK_CONFIG["spark.driver.memory"],
    "SNOWPLOW_SPARK_SHUFFLE_PARTITIONS": TEST_SPARK_CONFIG["spark.sql.shuffle.partitions"],
    "SNOWPLOW_SPARK_CONF": json.dumps({"spark.ui.enabled": "false", "spark.default.parallelism": "2"}),
}


# Fake AWS credentials that only the moto server accepts. Set before Spark starts, so its Python workers
# inherit them too.
TEST_AWS_ENVIRONMENT = {
    "AWS_ACCESS_KEY_ID": "testing",
    "AWS_SECRET_ACCESS_KEY": "testing",
    "AWS_SESSION_TOKEN": "testing",
    "AWS_DEFAULT_REGION": "us-east-1",
    "AWS_CONFIG_FILE": os.devnull,
    "AWS_SHARED_CREDENTIALS_FILE": os.devnull,
}


@pytest.fixture(scope="session", autouse=True)
def _isolated_environment() -> Iterator[None]:
    """Tests never touch the developer's lake, Dagster instance or AWS account."""
    saved = {
        k: os.environ.pop(k)
        for k in list(os.environ)
        if k.startswith(("SNOWPLOW_", "AWS_")) or k in ("DAGSTER_HOME", TOKEN_VARIABLE)
    }
    os.environ.update(TEST_AWS_ENVIRONMENT)
    # Runs in this process use its one classic session; tests of the shared server ask for it.
    os.environ["SNOWPLOW_SPARK_SERVER"] = "own"
    yield
    for k in [*TEST_AWS_ENVIRONMENT, "SNOWPLOW_SPARK_SERVER"]:
        os.environ.pop(k, None)
    os.environ.update(saved)


@pytest.fixture(scope="session")
def moto_server() -> Iterator[str]:
    """One moto server over HTTP for every AWS service of the session; yields its endpoint URL.

    It keeps no per-service state of its own: tests that share it use their own bucket and table names.
    """
    from moto.server import ThreadedMotoServer

    logging.getLogger("werkzeug").setLevel(logging.ERROR)  # one access-log line per request otherwise
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    yield f"http://{host}:{port}"
    server.stop()


@pytest.fixture(scope="session")
def spark() -> SparkSession:
    return build_spark_session(TEST_SPARK_CONFIG, app_name="snowplow-assets-tests")


@pytest.fixture(scope="session", autouse=True)
def _launched_spark_connect_server(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory, _isolated_environment: None
) -> Iterator[RunningServer | None]:
    """The Spark Connect server, launched as the session starts if any collected test uses it.

    Its JVM takes 10-15 seconds to listen, on a machine whose two cores the first tests leave partly idle
    (a single-threaded driver planning small queries), so it starts while they run rather than when the
    first test that needs it does.
    """
    if not any("spark_connect_server" in item.fixturenames for item in request.session.items):
        yield None
        return
    port = free_port()
    env = {**os.environ, **TEST_SPARK_SETTINGS}
    command = [str(Path(sys.executable).parent / "snowplow-assets"), "spark-server", "--port", str(port)]
    log = tmp_path_factory.mktemp("spark-connect-server") / "server.log"
    server = RunningServer.launch(command, DEFAULT_HOST, port, log, env)
    yield server
    server.stop()


@pytest.fixture(scope="session")
def spark_connect_server(_launched_spark_connect_server: RunningServer | None) -> RunningServer:
    """A Spark Connect server started as users start one, `snowplow-assets spark-server`, with the tests'
    Spark settings.

    Its clients must be processes of their own: once a Python process has made a Spark Connect session,
    PySpark builds every column for Spark Connect (SPARK_CONNECT_MODE_ENABLED), and this process's session
    is classic.
    """
    assert _launched_spark_connect_server is not None, "launched for every session whose tests use it"
    _launched_spark_connect_server.wait_until_listening()
    return _launched_spark_connect_server


@pytest.fixture(scope="session")
def golden(spark: SparkSession, tmp_path_factory: pytest.TempPathFactory) -> tuple[Lake, ShredReport]:
    """The golden batch of events/test_shred_batch.py shredded once, with the default options, in a lake of its
    own: its lake and report. A shred costs seconds whatever its size, so every test that reads this output
    shares it; none may change the lake (the checks' tests damage copies)."""
    from snowplow_assets_tests.events.test_shred_batch import GOLDEN_INPUT, RUN

    lake = Lake(str(tmp_path_factory.mktemp("golden") / "lake"))
    write_run_folder(lake, RUN, GOLDEN_INPUT)
    return lake, shred_run_folder(spark, LocalFileSystem(), lake, RUN)


@pytest.fixture
def lake(tmp_path: Path) -> Lake:
    return Lake(str(tmp_path / "lake"))


@pytest.fixture
def fs() -> LocalFileSystem:
    return LocalFileSystem()


def write_run_folder(
    lake: Lake,
    run: str,
    lines: list[str],
    *,
    name: str = "part-00000",
    compress: bool = False,
    success_marker: bool = True,
) -> Path:
    folder = Path(lake.enriched_run(run))
    folder.mkdir(parents=True, exist_ok=True)
    text = "".join(line + "\n" for line in lines).encode("utf-8")
    if compress:
        (folder / f"{name}.gz").write_bytes(gzip.compress(text))
    else:
        (folder / name).write_bytes(text)
    if success_marker:
        (folder / "_SUCCESS").touch()
    return folder


def write_plan(spark: SparkSession, path: str) -> str:
    """The physical plan of the session's last write to `path`, as Spark's SQL listener recorded it."""
    jvm_session = spark._jsparkSession
    jvm_session.sparkContext().listenerBus().waitUntilEmpty()
    executions = jvm_session.sharedState().statusStore().executionsList()
    for position in reversed(range(executions.size())):
        plan = executions.apply(position).physicalPlanDescription()
        if "InsertIntoHadoopFsRelationCommand" in plan and path in plan:
            return plan
    raise AssertionError(f"the session recorded no write to {path}")


def read_lines(folder: str | Path) -> list[str]:
    """Every line of the non-hidden part files below a folder, sorted."""
    lines: list[str] = []
    for path in sorted(Path(folder).rglob("part-*")):
        opener = gzip.open if path.suffix == ".gz" else open
        with opener(path, "rt", encoding="utf-8") as f:  # type: ignore[operator]
            lines.extend(line.rstrip("\n") for line in f)
    return sorted(lines)
