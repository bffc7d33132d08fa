"""The Spark Connect server that runs share by default: started by the first run that needs one, stopped once idle.

Every Dagster run is a process of its own, and a JVM of its own spends 30 seconds or more of a shred run's two
cores compiling (spark_connect_server.py). So by default (SNOWPLOW_SPARK_SERVER=shared) a run takes a lease on
a server for its Spark settings, starting one if there is none, and runs as its client; the server, warm from
the runs before, stops once no run has held a lease for the idle time. It is the server `snowplow-assets
spark-server` runs, with a token that only the user who started it can read.

One server per configuration: each has a folder of its own under the root (SNOWPLOW_SPARK_SERVER_FOLDER), named
by a hash of the server's command (the Spark settings, the project's jar, itself named by a hash of its
sources) and of the environment its Python workers and JVM inherit (AWS credentials, the interpreter, the
token's variable). A run with other settings, or after an upgrade, gets a server of its own; the old one idles
out. The folder holds:

- `lease`: each client holds a shared lock on it while it uses the server, and touches it as it takes and
  gives the lease back; the keeper touches it too whenever it finds a lease held, so that a client killed
  mid-run, whose lock the kernel releases without a touch, starts the idle time when it dies, not when it
  began. The server's keeper (`main`, below, the parent of the server's JVM) stops the server only while it
  holds the exclusive lock, which it gets only while no client holds a lease, and only once the file is
  idle_seconds old. A client that finds the server's address holds its lease already, so no stop can
  race it: the keeper removes the address before it lets go of the lock.
- `start.lock`: held by the client that starts a server, so that clients starting at once start one.
- `launch.json`: the command, address and idle time that the starting client gives the keeper; the token
  goes through the keeper's environment.
- `server.json`: the keeper's pid and where the server listens, with its token (readable by its owner only),
  written once the server listens and removed before it stops.
- `keeper.log` and `server.log`: the keeper's output and the server's.

Runs share the server's heap and its task slots. On a local master at most as many tasks run at once as the
master has cores, whatever the number of runs, and Spark's memory manager divides the heap among the tasks
that run: runs that overlap take turns on the cores rather than multiply the memory that tasks use. The
concurrency pools (defs/pools.py) keep the heaviest steps, the shreds, from overlapping at all.

The keeper starts in a session of its own, so that stopping a `dagster dev` or a CLI command leaves the server
to its idle stop; its JVM is set to die with it, so that killing the keeper (its pid is in `server.json`)
stops the server, as `SharedServer.stop` does at once.
"""

from __future__ import annotations

import ctypes
import fcntl
import hashlib
import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from snowplow_assets.processes import alive
from snowplow_assets.spark_connect_server import (
    DEFAULT_HOST,
    LOCAL_IP_VARIABLE,
    TOKEN_VARIABLE,
    RunningServer,
    client_url,
    free_port,
    server_token,
    spark_connect_server_command,
    spark_connect_server_environment,
)

# What of its environment a server's JVM and Python workers use, besides its command: AWS's credentials and
# settings (the DynamoDB event manifest's puts run in the workers), the workers' interpreter, the installations
# of Java, Spark and Hadoop, and the token.
SERVER_ENVIRONMENT_PREFIXES = ("AWS_",)
SERVER_ENVIRONMENT_VARIABLES = (
    "PYSPARK_PYTHON",
    "JAVA_HOME",
    "SPARK_HOME",
    "SPARK_CONF_DIR",
    "HADOOP_CONF_DIR",
    LOCAL_IP_VARIABLE,
    TOKEN_VARIABLE,
)
# Longer than an hour, so that hourly batches, a common cadence of enriched run folders, find the server warm.
DEFAULT_IDLE_MINUTES = 90
START_TIMEOUT_SECONDS = 180.0
_PR_SET_PDEATHSIG = 1


def default_shared_server_root(environ: Mapping[str, str] = os.environ) -> Path:
    """The user's runtime folder where there is one (private to the user, and emptied as they log out), else
    their cache folder."""
    if runtime := environ.get("XDG_RUNTIME_DIR"):
        return Path(runtime) / "snowplow-assets" / "spark-servers"
    cache = Path(environ["XDG_CACHE_HOME"]) if environ.get("XDG_CACHE_HOME") else Path.home() / ".cache"
    return cache / "snowplow-assets" / "spark-servers"


@dataclass(frozen=True)
class ServerAddress:
    """What `server.json` holds."""

    keeper_pid: int
    jvm_pid: int
    host: str
    port: int
    token: str

    @property
    def url(self) -> str:
        return client_url(self.host, self.port, self.token)


@dataclass(frozen=True)
class ServerStatus:
    """The server of a folder: its address if it runs, and whether a client holds a lease, or else for how
    long none has."""

    folder: Path
    address: ServerAddress | None
    in_use: bool
    idle_seconds: float | None
    # How long this server waits idle before it stops: the setting of the client that started it, which the
    # server's keeper read from launch.json, whatever later clients' settings say.
    stops_after_seconds: float | None = None


@dataclass(frozen=True)
class SharedServer:
    """The shared servers under `root`, each stopped once no client has held a lease for `idle_seconds`."""

    root: Path
    idle_seconds: float

    def folder(self, config: Mapping[str, str], environ: Mapping[str, str] = os.environ) -> Path:
        """The folder of the server for `config` started from `environ`."""
        command = _server_command(config, 0)
        # The token's variable is among what identifies a server: clients with it present its token,
        # whatever their URL says. Without it each server makes its own, which identifies nothing.
        server_environ = spark_connect_server_environment(config, environ.get(TOKEN_VARIABLE, ""), environ)
        environment = {
            key: value
            for key, value in server_environ.items()
            if key.startswith(SERVER_ENVIRONMENT_PREFIXES) or key in SERVER_ENVIRONMENT_VARIABLES
        }
        if python := environment.get("PYSPARK_PYTHON"):
            # One interpreter by its names in a folder (a virtual environment's python, python3, …: `dagster`
            # and `snowplow-assets` start with one, a run's process with another), but each folder's its own.
            environment["PYSPARK_PYTHON"] = json.dumps(
                [os.path.dirname(os.path.abspath(python)), os.path.realpath(python)]
            )
        identity = {"command": command, "environment": environment}
        return self.root / hashlib.sha256(json.dumps(identity, sort_keys=True).encode()).hexdigest()[:16]

    @contextmanager
    def lease(self, config: Mapping[str, str], environ: Mapping[str, str] = os.environ) -> Iterator[ServerAddress]:
        """Hold a lease on the server for `config`, started now if none runs, and yield its address (its
        client URL, with its token, and its JVM's pid). The server does not stop while the lease is held."""
        folder = self.folder(config, environ)
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        os.chmod(folder, 0o700)  # mkdir's mode is masked by the umask, and the folder may be older
        with (folder / "lease").open("a") as lease:
            fcntl.flock(lease, fcntl.LOCK_SH)  # waits while a keeper is stopping its server
            os.utime(lease.fileno())
            try:
                address = _reachable_address(folder)
                if address is None:
                    address = self._start(folder, config, environ)
                yield address
            finally:
                os.utime(lease.fileno())

    def status(self, config: Mapping[str, str], environ: Mapping[str, str] = os.environ) -> ServerStatus:
        """Whether the server for `config` runs, and whether a client holds a lease on it now."""
        folder = self.folder(config, environ)
        address = _reachable_address(folder)
        if address is None:
            return ServerStatus(folder, None, False, None)
        stops_after = float(_read_launch(folder)["idle_seconds"])
        with (folder / "lease").open("a") as lease:
            try:
                fcntl.flock(lease, fcntl.LOCK_EX | fcntl.LOCK_NB)  # let go at once: a client may be waiting
            except BlockingIOError:
                return ServerStatus(folder, address, True, None, stops_after)
            fcntl.flock(lease, fcntl.LOCK_UN)
            idle = time.time() - os.fstat(lease.fileno()).st_mtime
            return ServerStatus(folder, address, False, idle, stops_after)

    def stop(self, config: Mapping[str, str], environ: Mapping[str, str] = os.environ, timeout: float = 60) -> bool:
        """Stop the server for `config` now, if one runs, failing any run on it, and wait until its JVM has
        ended (its keeper, which waits for it, has). Whether one ran."""
        address = _reachable_address(self.folder(config, environ))
        if address is None:
            return False
        os.kill(address.keeper_pid, signal.SIGTERM)
        deadline = time.monotonic() + timeout
        while alive(address.keeper_pid):
            if time.monotonic() > deadline:
                raise RuntimeError(
                    f"the shared Spark Connect server {address.jvm_pid} did not stop within {timeout:g} s"
                )
            time.sleep(0.2)
        return True

    def _start(self, folder: Path, config: Mapping[str, str], environ: Mapping[str, str]) -> ServerAddress:
        with (folder / "start.lock").open("a") as start_lock:
            fcntl.flock(start_lock, fcntl.LOCK_EX)
            if address := _reachable_address(folder):
                return address  # another client started it while this one waited
            port = free_port(DEFAULT_HOST)
            command = _server_command(config, port)
            server_environ = spark_connect_server_environment(config, server_token(environ), environ)
            (folder / "launch.json").write_text(
                json.dumps({"command": command, "host": DEFAULT_HOST, "port": port, "idle_seconds": self.idle_seconds})
            )
            with (folder / "keeper.log").open("w") as log:
                keeper = subprocess.Popen(
                    [sys.executable, "-m", __name__, str(folder)],
                    stdin=subprocess.DEVNULL,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    env=server_environ,
                    # Not the client's folder, which may go before the server does, and where Spark would
                    # leave its spark-warehouse: the lake's paths reach the server absolute.
                    cwd=folder,
                    start_new_session=True,
                )
            deadline = time.monotonic() + START_TIMEOUT_SECONDS
            while time.monotonic() < deadline:
                if (address := read_address(folder)) and address.keeper_pid == keeper.pid:
                    return address
                if keeper.poll() is not None:
                    raise RuntimeError(
                        f"the shared Spark Connect server did not start (exit {keeper.returncode}); see {folder / 'keeper.log'}"
                    )
                time.sleep(0.2)
            keeper.terminate()
            raise RuntimeError(
                f"the shared Spark Connect server did not start within {START_TIMEOUT_SECONDS:g} s; see {folder / 'keeper.log'}"
            )


def _server_command(config: Mapping[str, str], port: int) -> list[str]:
    """`snowplow-assets spark-server`'s command, its log at WARN unless the settings say otherwise: a server that
    runs for days would log some hundreds of kilobytes at INFO for each run."""
    return spark_connect_server_command({"spark.log.level": "WARN", **config}, DEFAULT_HOST, port)


def read_address(folder: Path) -> ServerAddress | None:
    """The address in a server's folder, None before its server listens and after it stops."""
    try:
        return ServerAddress(**json.loads((folder / "server.json").read_text()))
    except (FileNotFoundError, json.JSONDecodeError, TypeError):
        return None


def _reachable_address(folder: Path) -> ServerAddress | None:
    """The address in `server.json` if its keeper lives and its server accepts connections: a keeper killed
    at once (SIGKILL) leaves its file behind, and its JVM dies with it."""
    address = read_address(folder)
    if address is None or not alive(address.keeper_pid):
        return None
    with socket.socket() as probe:
        probe.settimeout(5)
        return address if probe.connect_ex((address.host, address.port)) == 0 else None


def _die_with_parent() -> None:
    """Run in the server's process before it execs: Linux sends it SIGTERM when its keeper dies, however.
    Elsewhere (macOS) a keeper killed at once leaves its JVM to be stopped by hand."""
    if sys.platform.startswith("linux"):
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)


def _write_address(folder: Path, address: ServerAddress) -> None:
    pending = folder / f"server.json.{os.getpid()}"
    descriptor = os.open(pending, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(descriptor, "w") as output:
        json.dump(address.__dict__, output)
    os.replace(pending, folder / "server.json")


def _read_launch(folder: Path) -> dict:
    """What the starting client gave the keeper (`launch.json`): command, host, port and idle time."""
    return json.loads((folder / "launch.json").read_text())


def _remove_address(folder: Path) -> None:
    """Remove `server.json` if it is this keeper's: a keeper whose server stopped listening may have been
    replaced by another's."""
    if (address := read_address(folder)) and address.keeper_pid == os.getpid():
        (folder / "server.json").unlink(missing_ok=True)


def main(folder: Path) -> int:
    """The keeper: start the server that `launch.json` describes, publish its address once it listens, and
    stop it once it has been idle, or when the keeper is told to stop (SIGTERM)."""
    launch = _read_launch(folder)
    idle_seconds = float(launch["idle_seconds"])
    server = RunningServer.launch(
        launch["command"],
        launch["host"],
        launch["port"],
        folder / "server.log",
        os.environ,
        preexec_fn=_die_with_parent,
    )

    def stop(*_: object) -> None:
        _remove_address(folder)
        server.stop()
        sys.exit(0)

    def stop_when_told(*_: object) -> None:
        print("told to stop (SIGTERM): stopping", flush=True)
        stop()

    signal.signal(signal.SIGTERM, stop_when_told)
    server.wait_until_listening(START_TIMEOUT_SECONDS)
    _write_address(folder, ServerAddress(os.getpid(), server.pid, server.host, server.port, server.token))
    print(f"shared Spark Connect server {server.pid} listening on {server.host}:{server.port}", flush=True)
    with (folder / "lease").open("a") as lease:
        while server.process.poll() is None:
            time.sleep(min(10.0, max(0.2, idle_seconds / 4)))
            try:
                fcntl.flock(lease, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                # A client holds a lease. The idle time counts from the last time one was seen held, not only
                # from the clients' own touches: a client killed mid-run never touches the file as it gives
                # its lease back, and its lock goes with it.
                os.utime(lease.fileno())
                continue
            try:
                if time.time() - os.fstat(lease.fileno()).st_mtime >= idle_seconds:
                    print(f"idle for {idle_seconds:g} s: stopping", flush=True)
                    stop()
            finally:
                fcntl.flock(lease, fcntl.LOCK_UN)
    _remove_address(folder)
    print(f"the server stopped by itself (exit {server.process.returncode})", flush=True)
    return 1


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1])))
