"""The Spark Connect server that runs share (snowplow_assets/spark_connect_server.py), and runs on it.

The server is real, started by `snowplow-assets spark-server` (the `spark_connect_server` fixture), and its
clients are processes of their own, as Dagster runs are.
"""

import os
import re
import subprocess
import sys
from pathlib import Path

import boto3
import dagster as dg
import pytest
from click.testing import CliRunner

from snowplow_assets.cli import main
from snowplow_assets.jvm import POSIX_LOCAL_FILE_SYSTEM_CLASS, SHARED_CODE_CONNECT_SERVER_CLASS, functions_jar
from snowplow_assets.jvm.driver_options import DEFAULT_DRIVER_JAVA_OPTIONS
from snowplow_assets.lake import Lake
from snowplow_assets.settings import Settings
from snowplow_assets.spark_connect_server import (
    DEFAULT_HOST,
    SPARK_CONNECT_SERVER_CLASS,
    TOKEN_VARIABLE,
    RunningServer,
    client_url,
    connection_note,
    free_port,
    spark_connect_server_command,
    spark_connect_server_environment,
)
from snowplow_assets_tests.conftest import read_lines, write_run_folder
from snowplow_assets_tests.events.test_shred_batch import GOLDEN_INPUT, RUN
from snowplow_assets_tests.manifest.conftest import REGION, new_table

OTHER_RUN = "run=2026-03-01-11-00-00"
CLI = str(Path(sys.executable).parent / "snowplow-assets")


def two_batches_and_a_dagster_home(root: Path) -> tuple[Lake, Path]:
    """A lake under `root` with two run folders for `process`, the second's lines copies of the first's, and
    a Dagster home beside it."""
    lake = Lake(str(root / "lake"))
    write_run_folder(lake, RUN, GOLDEN_INPUT)
    write_run_folder(lake, OTHER_RUN, GOLDEN_INPUT[:3])
    home = root / "dagster_home"
    home.mkdir()
    (home / "dagster.yaml").write_text("telemetry:\n  enabled: false\n")
    return lake, home


def _confs(command: list[str]) -> dict[str, str]:
    return dict(command[i + 1].split("=", 1) for i, part in enumerate(command) if part == "--conf")


def test_the_server_runs_with_the_projects_spark_settings_on_the_loopback_address(monkeypatch):
    monkeypatch.setenv("SNOWPLOW_SPARK_REMOTE", "sc://elsewhere:15002")  # a client's setting, not the server's
    command = spark_connect_server_command(Settings(_env_file=None).spark_config, port=15099)
    assert Path(command[0]).name == "spark-submit"
    assert command[command.index("--class") + 1] == SHARED_CODE_CONNECT_SERVER_CLASS, "the server in the project's jar"
    confs = _confs(command)
    assert (confs["spark.connect.grpc.binding.address"], confs["spark.connect.grpc.binding.port"]) == (
        "127.0.0.1",
        "15099",
    )
    assert confs["spark.master"] == "local[*]" and confs["spark.driver.memory"] == "1g"
    assert confs["spark.driver.extraJavaOptions"] == f"{DEFAULT_DRIVER_JAVA_OPTIONS} -Duser.timezone=UTC"
    assert confs["spark.jars"] == str(functions_jar()), "the server holds the shredder's fast path"
    assert confs["spark.hadoop.fs.file.impl"] == POSIX_LOCAL_FILE_SYSTEM_CLASS
    assert confs["spark.driver.extraClassPath"] == str(functions_jar())
    assert "spark.remote" not in confs
    assert not [part for part in command if "authenticate" in part], "the token goes by the environment, unseen"


def test_a_loopback_server_keeps_its_spark_ui_on_the_loopback_address():
    """spark-submit's JVM serves the Spark UI on every interface unless SPARK_LOCAL_IP says otherwise (checked
    with `ss -ltn` on 2026-11-27: *:4040 without it, 127.0.0.1:4040 with it); a cluster's executors must reach
    the driver, and a server put on another address by its user is theirs to expose."""
    local = Settings(_env_file=None).spark_config

    def local_ip(config: dict[str, str], environ: dict[str, str], host: str = DEFAULT_HOST) -> str | None:
        return spark_connect_server_environment(config, "token", environ, host).get("SPARK_LOCAL_IP")

    assert local_ip(local, {}) == "127.0.0.1"
    assert local_ip(local, {}, host="localhost") == "127.0.0.1"
    assert local_ip(local, {"SPARK_LOCAL_IP": "10.0.0.5"}) == "10.0.0.5", "the user's own setting"
    assert local_ip(local, {}, host="0.0.0.0") is None
    assert local_ip({**local, "spark.master": "spark://cluster:7077"}, {}) is None


def test_without_the_projects_jar_the_server_is_sparks_own(monkeypatch):
    """No JDK, no jar: the server that shares compiled code is in the jar, so Spark's own server runs."""
    monkeypatch.setattr("snowplow_assets.spark_connect_server.functions_jar", lambda: None)
    monkeypatch.setattr("snowplow_assets.spark.functions_jar", lambda: None)
    command = spark_connect_server_command(Settings(_env_file=None).spark_config, port=15099)
    assert command[command.index("--class") + 1] == SPARK_CONNECT_SERVER_CLASS
    confs = _confs(command)
    assert "spark.jars" not in confs and "spark.driver.extraClassPath" not in confs
    assert confs["spark.hadoop.fs.file.impl"] == "org.apache.hadoop.fs.RawLocalFileSystem"


def test_a_server_that_stops_or_never_listens_is_reported_with_its_log(tmp_path):
    """What waiting for a server reports when its command fails at once, or outlasts the wait without
    listening (and is then killed, not left behind)."""
    log = tmp_path / "server.log"
    failing = [sys.executable, "-c", "import sys; print('no Java here'); sys.exit(3)"]
    with pytest.raises(RuntimeError, match=re.escape(f"stopped (exit 3); see {log}")):
        RunningServer.start(failing, DEFAULT_HOST, free_port(), log, os.environ)
    assert log.read_text() == "no Java here\n"

    silent = RunningServer.launch(
        [sys.executable, "-c", "import time; time.sleep(60)"], DEFAULT_HOST, free_port(), log, os.environ
    )
    with pytest.raises(RuntimeError, match="did not listen on 127.0.0.1:[0-9]+ within 1 s"):
        silent.wait_until_listening(timeout=1)
    assert silent.process.returncode is not None, "killed and reaped"


def test_clients_reach_a_loopback_server_as_localhost_with_its_token():
    """PySpark sends a token without TLS only to `localhost`."""
    assert client_url("127.0.0.1", 15002, "t0k") == "sc://localhost:15002/;token=t0k"
    assert client_url("::1", 15002) == "sc://localhost:15002"
    assert client_url("spark.internal", 15002, "t0k") == "sc://spark.internal:15002/;token=t0k"
    assert client_url("fd00::7", 15002) == "sc://[fd00::7]:15002"


def test_the_server_tells_its_user_how_clients_connect():
    """The URL holds the token unless the server's environment does (an empty variable holds none), and a
    server off the loopback address is said to need TLS in front of it."""
    made = connection_note("127.0.0.1", 15002, "t0k", environ={})
    assert made == "clients of this server: SNOWPLOW_SPARK_REMOTE='sc://localhost:15002/;token=t0k'"
    assert connection_note("127.0.0.1", 15002, "t0k", environ={TOKEN_VARIABLE: ""}) == made
    shared = connection_note("127.0.0.1", 15002, "t0k", environ={TOKEN_VARIABLE: "t0k"})
    assert (
        shared == f"clients of this server, with {TOKEN_VARIABLE} as here: SNOWPLOW_SPARK_REMOTE=sc://localhost:15002"
    )
    assert "need TLS in front" in connection_note("0.0.0.0", 15002, "t0k", environ={})
    assert "TLS" not in made


def test_the_server_accepts_only_clients_with_its_token(spark_connect_server):
    """Whoever the server accepts runs queries as its user, so a client without its token, or with another,
    is refused; one with the token in its URL, or in SPARK_CONNECT_AUTHENTICATE_TOKEN, is not. The token is in
    no process's command line, and the server names the URL its clients use."""
    assert spark_connect_server.token not in Path(f"/proc/{spark_connect_server.pid}/cmdline").read_text()
    port = spark_connect_server.port
    plain = f"sc://localhost:{port}"
    assert f"with {TOKEN_VARIABLE} as here: SNOWPLOW_SPARK_REMOTE={plain}\n" in spark_connect_server.log.read_text()
    script = (
        "import os, sys\n"
        "from pyspark.sql import SparkSession\n"
        "for url in sys.argv[1:]:\n"
        "    if url.startswith('token:'):\n"  # the token, in the variable, for the URLs after it
        f"        os.environ[{TOKEN_VARIABLE!r}] = url.removeprefix('token:')\n"
        "        continue\n"
        "    try:\n"
        "        print(SparkSession.builder.remote(url).create().range(3).count())\n"
        "    except Exception as error:\n"
        "        print('refused' if 'UNAUTHENTICATED' in str(error) else repr(error))\n"
    )
    urls = [plain, f"sc://127.0.0.1:{port}", f"{plain}/;token=not-the-token", spark_connect_server.url,
            f"token:{spark_connect_server.token}", plain]  # fmt: skip
    client_env = {key: value for key, value in os.environ.items() if key != TOKEN_VARIABLE}
    done = subprocess.run(
        [sys.executable, "-c", script, *urls], capture_output=True, text=True, timeout=300, env=client_env
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["refused", "refused", "refused", "3", "3"]


def test_a_client_of_the_server_has_the_fast_path(spark_connect_server):
    script = (
        "from snowplow_assets.spark import build_spark_session, is_spark_connect\n"
        "from snowplow_assets.events.canonical import fast_path_available\n"
        f"spark = build_spark_session({{'spark.remote': {spark_connect_server.url!r}}})\n"
        "print(is_spark_connect(spark), fast_path_available(spark), spark.conf.get('spark.sql.session.timeZone'))\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["True", "True", "UTC"]


def test_sessions_on_the_server_share_compiled_code(spark_connect_server):
    """Two sessions run the same query, one after the other: the server's log (Spark's code generator logs
    each class it compiles) shows code compiled for the first session only. Spark's own server, which gives
    every session a class loader of its own, compiles it again for the second."""
    script = (
        "import sys\n"
        "from pyspark.sql import SparkSession\n"
        "url, log = sys.argv[1], sys.argv[2]\n"
        "def compiled():\n"
        "    with open(log, errors='replace') as server_log:\n"
        "        return server_log.read().count('Code generated in')\n"
        "for _ in range(2):\n"
        "    session = SparkSession.builder.remote(url).create()\n"
        "    before = compiled()\n"
        # Constants of this test's own, so that no other test's query has compiled the same code.
        "    session.range(100).selectExpr('id * 7919 + 104729 AS n', 'id % 613 AS k').groupBy('k').sum('n').collect()\n"
        "    print(compiled() - before, flush=True)\n"
        # A session made by create() keeps the process alive until it is stopped.
        "    session.stop()\n"
    )
    command = [sys.executable, "-c", script, spark_connect_server.url, str(spark_connect_server.log)]
    done = subprocess.run(command, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    first, second = map(int, done.stdout.split())
    assert first > 0, "the first session's query compiles its code"
    assert second == 0, "the second session's query reuses it"


def _shredded(lake: Lake, run: str) -> tuple[list[str], int]:
    good, bad = Path(lake.shredded_good(run)), Path(lake.shredded_bad(run))
    return read_lines(good), len(read_lines(bad))


def test_runs_on_the_server_shred_as_runs_in_a_jvm_of_their_own(
    tmp_path, monkeypatch, spark, spark_connect_server, moto_server
):
    """`snowplow-assets process` with SNOWPLOW_SPARK_REMOTE: Dagster runs of two folders on the server, the
    second's lines copies of the first's, checked in DynamoDB from the server's Python workers (the lines
    are dated March 2026, so by today's clock the first batch's entries have expired and the copies are
    kept). The same folders shredded by the same command in this process's classic session come out the
    same."""
    dynamodb = boto3.client("dynamodb", region_name=REGION, endpoint_url=moto_server)
    outputs = {}
    for place in ("connect", "classic"):
        lake, home = two_batches_and_a_dagster_home(tmp_path / place)
        table = new_table(moto_server, place)
        env = {
            "DAGSTER_HOME": str(home),
            "SNOWPLOW_LAKE": lake.root,
            "SNOWPLOW_WEB_MODELS": "",
            "SNOWPLOW_EVENT_MANIFEST": "dynamodb",
            "SNOWPLOW_EVENT_MANIFEST_DYNAMODB_TABLE": table.table,
            "SNOWPLOW_EVENT_MANIFEST_DYNAMODB_REGION": REGION,
            "SNOWPLOW_EVENT_MANIFEST_DYNAMODB_ENDPOINT_URL": moto_server,
        }
        if place == "connect":
            env["SNOWPLOW_SPARK_REMOTE"] = spark_connect_server.url
            done = subprocess.run(
                [CLI, "process"], env={**os.environ, **env}, capture_output=True, text=True, timeout=600
            )
            assert done.returncode == 0, done.stdout + done.stderr
            # A JVM announces the default options' compiler directives as it starts: the client started none.
            assert "compiler directives" not in done.stderr
            assert "fast path is not in this Spark session" not in done.stdout + done.stderr
        else:
            for key, value in env.items():
                monkeypatch.setenv(key, value)
            done = CliRunner().invoke(main, ["process"])
            assert done.exit_code == 0, done.output
        with dg.DagsterInstance.from_config(str(home)) as instance:
            runs = instance.get_run_records(dg.RunsFilter(job_name="shred_enriched_run"))
            assert [r.dagster_run.status for r in runs] == [dg.DagsterRunStatus.SUCCESS] * 2
        items = dynamodb.scan(TableName=table.table, ConsistentRead=True)["Items"]
        outputs[place] = (_shredded(lake, RUN), _shredded(lake, OTHER_RUN), sorted(i["eventId"]["S"] for i in items))
    (_, bad), _, items = outputs["connect"]
    assert (
        len(read_lines(Path(Lake(str(tmp_path / "connect" / "lake")).shredded_good(RUN)) / "atomic-events")),
        bad,
    ) == (4, 2)
    assert items, "the server's workers wrote the manifest"
    assert outputs["connect"] == outputs["classic"]
