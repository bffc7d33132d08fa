"""The Spark Connect server that runs share by default (snowplow_assets/shared_spark_server.py).

Its servers are real JVMs, started by real keepers; a client that runs queries on one is a process of its own,
since this one's session is classic (conftest.py's spark_connect_server).
"""

import json
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import dagster as dg
from click.testing import CliRunner

from snowplow_assets.cli import main
from snowplow_assets.processes import alive
from snowplow_assets.settings import Settings
from snowplow_assets.shared_spark_server import SharedServer, default_shared_server_root
from snowplow_assets.spark_connect_server import TOKEN_VARIABLE
from snowplow_assets_tests.conftest import TEST_SPARK_CONFIG, TEST_SPARK_SETTINGS, read_lines
from snowplow_assets_tests.events.test_shred_batch import RUN
from snowplow_assets_tests.test_spark_connect_server import CLI, OTHER_RUN, two_batches_and_a_dagster_home

# A Dagster run whose Spark resource is on the shared server; it prints what its step counted and whether
# the process still holds a lock (Linux's /proc/locks names each lock's process) once the run has ended.
RUN_ON_SHARED_SERVER = """
import json, os, sys
import dagster as dg
from click.testing import CliRunner
from snowplow_assets.defs.resources.spark import SparkResource

root, idle_seconds, config = sys.argv[1], float(sys.argv[2]), json.loads(sys.argv[3])

@dg.op
def count_keys(spark: SparkResource) -> int:
    return spark.spark_session.range(1000).selectExpr("id % 7 AS k").distinct().count()

@dg.job(executor_def=dg.in_process_executor)
def count_on_shared_server():
    count_keys()

resource = SparkResource(spark_config=config, shared_server_folder=root, shared_server_idle_seconds=idle_seconds)
with dg.DagsterInstance.ephemeral() as instance:
    result = count_on_shared_server.execute_in_process(instance=instance, resources={"spark": resource})
with open("/proc/locks") as locks:
    held = any(line.split()[4] == str(os.getpid()) for line in locks)
print(result.output_for_node("count_keys"), "holds a lease" if held else "gave its lease back")
"""

# A client that takes a lease on the shared server and holds it until it is killed.
HOLD_A_LEASE = """
import json, sys, time
from pathlib import Path
from snowplow_assets.shared_spark_server import SharedServer

with SharedServer(Path(sys.argv[1]), float(sys.argv[2])).lease(json.loads(sys.argv[3])) as server:
    print(server.url, flush=True)
    time.sleep(600)
"""


# A run's session on the shared server (spark.spark_session): one query, then, once told, another.
QUERY_AFTER_BEING_TOLD = """
import json, sys, time
from pathlib import Path
from snowplow_assets.shared_spark_server import SharedServer
from snowplow_assets.spark import spark_session

shared = SharedServer(Path(sys.argv[1]), float(sys.argv[2]))
with spark_session(json.loads(sys.argv[3]), shared) as session:
    print(session.range(10).count(), flush=True)
    sys.stdin.readline()
    started = time.monotonic()
    try:
        session.range(10).count()
        print("answered")
    except Exception as error:
        print(f"failed after {time.monotonic() - started:.0f} s: {type(error).__name__}: {error}", flush=True)
"""


def _address(folder: Path) -> dict | None:
    try:
        return json.loads((folder / "server.json").read_text())
    except FileNotFoundError:
        return None


def _listens(address: dict) -> bool:
    with socket.socket() as probe:
        return probe.connect_ex((address["host"], address["port"])) == 0


def _wait_for(condition, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, what
        time.sleep(0.2)


def test_the_root_is_the_users_runtime_folder_else_their_cache():
    assert default_shared_server_root({"XDG_RUNTIME_DIR": "/run/user/7"}) == Path(
        "/run/user/7/snowplow-assets/spark-servers"
    )
    assert default_shared_server_root({"XDG_CACHE_HOME": "/c"}) == Path("/c/snowplow-assets/spark-servers")
    assert default_shared_server_root({}) == Path.home() / ".cache" / "snowplow-assets" / "spark-servers"


def test_runs_share_a_server_only_with_the_same_settings_and_environment(tmp_path):
    """The environment's AWS credentials reach the server's Python workers, and a token in the environment is
    what its clients present: either makes another server. What PySpark sets in a client process, and what the
    server does not read, do not."""
    shared = SharedServer(tmp_path, 60)
    environ = {"AWS_ACCESS_KEY_ID": "a", "PATH": "/bin", "PYSPARK_PYTHON": sys.executable}
    folder = shared.folder(TEST_SPARK_CONFIG, environ)
    assert folder.parent == tmp_path
    assert folder == shared.folder(
        dict(TEST_SPARK_CONFIG), {**environ, "PATH": "/usr/bin", "SPARK_CONNECT_MODE_ENABLED": "1"}
    )
    others = [
        shared.folder({**TEST_SPARK_CONFIG, "spark.driver.memory": "2g"}, environ),
        shared.folder(TEST_SPARK_CONFIG, {**environ, "AWS_ACCESS_KEY_ID": "b"}),
        shared.folder(TEST_SPARK_CONFIG, {**environ, TOKEN_VARIABLE: "chosen"}),
        shared.folder(TEST_SPARK_CONFIG, {**environ, "PYSPARK_PYTHON": "/other/python"}),
    ]
    assert len({folder, *others}) == 5
    # A virtual environment's interpreter by any of its names is one; another environment's is not.
    venv = tmp_path / "venv" / "bin"
    venv.mkdir(parents=True)
    (venv / "python3").symlink_to(sys.executable)
    (venv / "python").symlink_to("python3")
    named = {
        name: shared.folder(TEST_SPARK_CONFIG, {**environ, "PYSPARK_PYTHON": str(venv / name)})
        for name in ("python", "python3")
    }
    assert named["python"] == named["python3"] != folder


def test_clients_that_start_at_once_start_one_server_which_stops_once_idle(tmp_path):
    """Three clients take leases at the same moment: one starts the server, and all three get its URL. A
    Dagster run with the Spark resource runs on it, and gives its lease back as it ends. Held past the idle
    time, a lease keeps the server. A client killed while it holds one gives it back without a word, and the
    server still waits the idle time from then; then it stops, its address removed first."""
    shared = SharedServer(tmp_path, idle_seconds=4)
    folder = shared.folder(TEST_SPARK_CONFIG)
    start, urls, release, errors = threading.Barrier(3), [], threading.Event(), []

    def client() -> None:
        try:
            start.wait()
            with shared.lease(TEST_SPARK_CONFIG) as server:
                urls.append(server.url)
                release.wait(300)
        except BaseException as error:  # reported below, in the test's thread
            errors.append(error)

    threads = [threading.Thread(target=client) for _ in range(3)]
    for thread in threads:
        thread.start()
    _wait_for(lambda: len(urls) + len(errors) == 3, 240, "three leases within 240 s")
    assert not errors, errors
    assert len(set(urls)) == 1
    assert (folder / "keeper.log").read_text().count("listening on") == 1
    address = _address(folder)
    assert oct((folder / "server.json").stat().st_mode & 0o777) == "0o600"
    assert oct(folder.stat().st_mode & 0o777) == "0o700"
    assert address["token"] in urls[0] and address["token"] not in (folder / "launch.json").read_text()
    assert Path(f"/proc/{address['jvm_pid']}/cwd").resolve() == folder.resolve(), "the server runs in its folder"
    run = [
        sys.executable,
        "-c",
        RUN_ON_SHARED_SERVER,
        str(tmp_path),
        str(shared.idle_seconds),
        json.dumps(TEST_SPARK_CONFIG),
    ]
    done = subprocess.run(run, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[-1] == "7 gave its lease back"
    assert (folder / "keeper.log").read_text().count("listening on") == 1, "the run was a client of the server"

    hold = [sys.executable, "-c", HOLD_A_LEASE, str(tmp_path), str(shared.idle_seconds), json.dumps(TEST_SPARK_CONFIG)]
    holder = subprocess.Popen(hold, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == urls[0]
        time.sleep(2 * shared.idle_seconds + 1)  # the keeper looks every idle_seconds / 4
        assert _address(folder) == address and _listens(address), "held leases keep the server"
        release.set()
        for thread in threads:
            thread.join()
        # The lease file was last touched by a client as the threads gave theirs back, longer ago than the
        # idle time by the time the holder dies.
        time.sleep(shared.idle_seconds + 1)
        assert _address(folder) == address, "the killed client's lease keeps the server while it lives"
    finally:
        holder.kill()
        holder.wait()
    time.sleep(shared.idle_seconds / 2)
    assert _address(folder) == address, "the idle time counts from when the killed client's lease was last seen"
    _wait_for(lambda: not alive(address["jvm_pid"]) and not alive(address["keeper_pid"]), 60, "the server stops")
    assert _address(folder) is None
    assert "idle for 4 s: stopping" in (folder / "keeper.log").read_text()


def test_runs_use_the_shared_server_by_default_and_a_killed_keeper_takes_its_server_along(tmp_path, monkeypatch):
    """`snowplow-assets process` with the default SNOWPLOW_SPARK_SERVER: its two Dagster runs are clients of
    one server that the first started (no JVM of their own announces its compiler directives), their output
    is the shredder's, and the server outlives the command, for the next runs. Killing its keeper at once
    (SIGKILL) stops the JVM too, and a run on it then fails at once; the next lease starts a new server.
    `snowplow-assets shared-spark-server` shows the server idle or in use, and stops it at once."""
    lake, home = two_batches_and_a_dagster_home(tmp_path)
    env = {
        **os.environ,
        "DAGSTER_HOME": str(home),
        "SNOWPLOW_LAKE": lake.root,
        "SNOWPLOW_WEB_MODELS": "",
        "SNOWPLOW_SPARK_SERVER": "shared",
        "SNOWPLOW_SPARK_SERVER_FOLDER": str(tmp_path / "servers"),
        "SNOWPLOW_SPARK_SERVER_IDLE_MINUTES": "5",
        **TEST_SPARK_SETTINGS,
    }
    done = subprocess.run([CLI, "process"], env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "registered 2 run folder(s)" in done.stdout
    assert "compiler directives" not in done.stderr
    with dg.DagsterInstance.from_config(str(home)) as instance:
        runs = instance.get_run_records(dg.RunsFilter(job_name="shred_enriched_run"))
        assert [r.dagster_run.status for r in runs] == [dg.DagsterRunStatus.SUCCESS] * 2
        assert sorted(r.dagster_run.tags["dagster/partition"] for r in runs) == sorted([RUN, OTHER_RUN])
    assert len(read_lines(Path(lake.shredded_good(RUN)) / "atomic-events")) == 4
    assert len(read_lines(Path(lake.shredded_bad(RUN)))) == 2

    (folder,) = (tmp_path / "servers").iterdir()
    assert (folder / "keeper.log").read_text().count("listening on") == 1
    address = _address(folder)
    assert address and _listens(address), "the server outlives the command"
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    shown = CliRunner().invoke(main, ["shared-spark-server"])
    assert shown.exit_code == 0, shown.output
    assert f"folder: {folder}\nrunning: JVM {address['jvm_pid']} (keeper {address['keeper_pid']})" in shown.output
    assert re.search(r"idle for \d+\.\d min; stops after 5 min without a run\n", shown.output)

    config = Settings().spark_config
    run = _session_then_a_query_when_told(tmp_path / "servers", 600, config)
    try:
        assert run.stdout.readline().strip() == "10", "a run's session on the server"
        os.kill(address["keeper_pid"], signal.SIGKILL)
        # A JVM whose main thread has ended shows as a zombie while its other threads shut Spark down.
        _wait_for(lambda: not alive(address["jvm_pid"]) and not _listens(address), 60, "the JVM dies with its keeper")
        outcome = run.communicate("go\n", timeout=60)[0].strip()
        assert run.returncode == 0
    finally:
        run.kill()
    _assert_failed_at_once(outcome, address["jvm_pid"], folder / "server.log")
    shared = SharedServer(tmp_path / "servers", idle_seconds=600)
    with shared.lease(config) as server:
        assert shared.folder(config) == folder, "the command's settings"
        restarted = _address(folder)
        assert restarted["keeper_pid"] != address["keeper_pid"] and restarted["token"] in server.url
        assert _listens(restarted)
        # Started with 10 idle minutes: the server's own setting, not the command's 5.
        assert "in use by a run; stops after 10 min without a run (as set when it started; " in (
            CliRunner().invoke(main, ["shared-spark-server"]).output
        )
    stopped = CliRunner().invoke(main, ["shared-spark-server", "--stop"])
    assert stopped.exit_code == 0 and stopped.output.endswith("stopped\n"), stopped.output
    assert not alive(restarted["jvm_pid"]) and not alive(restarted["keeper_pid"]) and _address(folder) is None
    assert "told to stop (SIGTERM): stopping" in (folder / "keeper.log").read_text()
    assert not shared.stop(config), "none runs"
    assert "no shared server runs for these settings" in CliRunner().invoke(main, ["shared-spark-server"]).output


def _session_then_a_query_when_told(root: Path, idle_seconds: float, config: dict[str, str]) -> subprocess.Popen:
    """A run's session on the shared server under `root`, in a process of its own: it prints a query's answer,
    then waits for a line on its stdin before the next query."""
    command = [sys.executable, "-c", QUERY_AFTER_BEING_TOLD, str(root), str(idle_seconds), json.dumps(config)]
    return subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)


def _assert_failed_at_once(outcome: str, jvm_pid: int, log: Path) -> None:
    """PySpark's client retries a server it cannot reach for ten minutes and more; a shared server that ended
    (killed, its JVM out of memory, say) never comes back, so the run's session gives up once the JVM is gone,
    within the test's minute."""
    assert re.fullmatch(
        rf"failed after \d+ s: SharedServerEnded: the shared Spark server \(JVM {jvm_pid}\) ended while "
        rf"this session used it: killed, or out of memory\? Its log: {re.escape(str(log))}\. The next run starts another\.",
        outcome,
    ), outcome
    assert int(outcome.split()[2]) < 30, outcome
