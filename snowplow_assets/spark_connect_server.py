"""A long-lived Spark Connect server, so that Dagster runs share one JVM instead of starting one each: the one
they start by themselves (shared_spark_server.py), or one that `snowplow-assets spark-server` runs.

Each Dagster run is a process of its own, and with a local master a JVM of its own spends about a third of a
shred run's CPU compiling Spark's code and the code Spark generates (benchmarks/README.md). Runs that connect
to a server share its JVM, compiled once and warm from then on. The server is Spark's, from PySpark's jars
(with one change, below), started with the project's configuration (spark.py): the same master, driver
memory, JVM options and jar of the project's functions as a run's own JVM would get. Each client keeps a session of its own, with its own SQL settings and functions.

Spark's server gives each session a class loader of its own ("artifact isolation"), and so compiles all of
a run's generated code again for every session. Started from the project's jar, the server is
`SharedCodeConnectServer` (snowplow_assets/jvm/), Spark's with that isolation off: its sessions share
compiled code, and a warm run compiles none of it again, about 10 CPU-seconds less at a million events
(benchmarks/README.md). Jars or Python files that a client uploads (`addArtifacts`) are then every
session's; this project's clients upload none. Without the jar (no JDK), the server is Spark's own.

**Who may connect.** Whoever a server accepts runs any query, and reads the lake, as the server's user. So it
binds to 127.0.0.1 unless told otherwise, and it accepts only clients that present its token (Spark Connect's
pre-shared token): `SPARK_CONNECT_AUTHENTICATE_TOKEN` from the environment that starts it, Spark's own
variable, or else a random one made for it. The token reaches the server through its environment, never its
command line, which every user of the machine can read. A client presents it in its URL
(`sc://localhost:15002/;token=…`, `client_url`) or in the same variable. PySpark sends a token without TLS
only to a host named `localhost`, so a server on the loopback address is reached by that name; one on
another address needs TLS in front of it.
"""

from __future__ import annotations

import os
import secrets
import socket
import subprocess
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

import pyspark

from snowplow_assets.jvm import SHARED_CODE_CONNECT_SERVER_CLASS, functions_jar
from snowplow_assets.spark import python_workers_interpreter, spark_session_config

SPARK_CONNECT_SERVER_CLASS = "org.apache.spark.sql.connect.service.SparkConnectServer"
DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 15002
# Spark's variable for a Spark Connect server's token, which its server and PySpark's clients both read.
TOKEN_VARIABLE = "SPARK_CONNECT_AUTHENTICATE_TOKEN"
# What PySpark sets in a process once it has made a Spark Connect session: the client's, not the server's,
# which a server started by a client must not inherit (its Python workers would take themselves for clients).
CLIENT_MODE_VARIABLES = ("SPARK_CONNECT_MODE_ENABLED", "SPARK_REMOTE", "SPARK_LOCAL_REMOTE")
_LOOPBACK = {"127.0.0.1", "localhost", "::1"}
# The address Spark's driver binds its services to, its web UI included (0.0.0.0 when unset).
LOCAL_IP_VARIABLE = "SPARK_LOCAL_IP"


def spark_connect_server_command(
    config: Mapping[str, str], host: str = DEFAULT_HOST, port: int = DEFAULT_PORT
) -> list[str]:
    """The `spark-submit` command that runs the server in the foreground with the given Spark settings."""
    server_config = spark_session_config({key: value for key, value in config.items() if key != "spark.remote"})
    server_config["spark.connect.grpc.binding.address"] = host
    server_config["spark.connect.grpc.binding.port"] = str(port)
    # spark-submit puts spark.jars, the project's jar among them, on the class path of the main class.
    server_class = SHARED_CODE_CONNECT_SERVER_CLASS if functions_jar() else SPARK_CONNECT_SERVER_CLASS
    command = [str(Path(pyspark.__file__).parent / "bin" / "spark-submit"), "--class", server_class]
    command += ["--name", "snowplow-assets Spark Connect server"]
    for key, value in sorted(server_config.items()):
        command += ["--conf", f"{key}={value}"]
    # spark-submit wants an application; the server's class is already on the classpath.
    return [*command, "spark-internal"]


def spark_connect_server_environment(
    config: Mapping[str, str], token: str, environ: Mapping[str, str] = os.environ, host: str = DEFAULT_HOST
) -> dict[str, str]:
    """The server's environment: `environ` but for its client-mode variables, the token its clients must
    present, and PYSPARK_PYTHON, from which a Spark Connect server too takes the interpreter of its Python
    workers (spark.py's python_workers_interpreter).

    A server on the loopback address with a local master also keeps its Spark UI there (SPARK_LOCAL_IP, unless
    set): spark-submit's JVM otherwise serves the UI on every interface, without authentication, and the UI
    shows every query and can kill its jobs. A cluster's executors must reach the driver, so a cluster master
    keeps Spark's default."""
    python = python_workers_interpreter({key: value for key, value in config.items() if key != "spark.remote"})
    loopback = host in _LOOPBACK and config.get("spark.master", "local").startswith("local")
    return {
        **{key: value for key, value in environ.items() if key not in CLIENT_MODE_VARIABLES},
        TOKEN_VARIABLE: token,
        **({"PYSPARK_PYTHON": python} if python and "PYSPARK_PYTHON" not in environ else {}),
        **({LOCAL_IP_VARIABLE: "127.0.0.1"} if loopback and LOCAL_IP_VARIABLE not in environ else {}),
    }


def server_token(environ: Mapping[str, str] = os.environ) -> str:
    """The token a server started from `environ` accepts: its SPARK_CONNECT_AUTHENTICATE_TOKEN, or a new one."""
    return environ.get(TOKEN_VARIABLE) or secrets.token_urlsafe(32)


def client_url(host: str, port: int, token: str | None = None) -> str:
    """The Spark Connect URL (SNOWPLOW_SPARK_REMOTE) of a server listening on `host`, with its token unless the
    client has it in SPARK_CONNECT_AUTHENTICATE_TOKEN; a loopback address by the name `localhost`, to which
    PySpark sends the token without TLS."""
    name = "localhost" if host in _LOOPBACK else f"[{host}]" if ":" in host else host
    return f"sc://{name}:{port}" + (f"/;token={token}" if token is not None else "")


def connection_note(host: str, port: int, token: str, environ: Mapping[str, str] = os.environ) -> str:
    """What `snowplow-assets spark-server` tells its user about its clients: the URL they use, without the
    token when `environ`, the server's, holds it already (clients started from the same environment read it
    there), and that a server off the loopback address needs TLS in front of it."""
    if environ.get(TOKEN_VARIABLE) == token:
        note = f"clients of this server, with {TOKEN_VARIABLE} as here: SNOWPLOW_SPARK_REMOTE={client_url(host, port)}"
    else:
        note = f"clients of this server: SNOWPLOW_SPARK_REMOTE='{client_url(host, port, token)}'"
    if host not in _LOOPBACK:
        note += " (PySpark sends a token without TLS only to localhost: other machines need TLS in front of the server)"
    return note


@dataclass
class RunningServer:
    """A server process started by this one (the benchmarks and the tests start theirs so)."""

    process: subprocess.Popen
    host: str
    port: int
    log: Path
    token: str

    @property
    def url(self) -> str:
        return client_url(self.host, self.port, self.token)

    @property
    def pid(self) -> int:
        """The JVM's: `snowplow-assets spark-server` execs spark-submit, which execs the JVM in the end."""
        return self.process.pid

    @classmethod
    def start(
        cls, command: list[str], host: str, port: int, log: Path, env: Mapping[str, str], timeout: float = 180
    ) -> RunningServer:
        """Run `command` (the server's, on `port`) with its output in `log`, and wait until the port listens."""
        server = cls.launch(command, host, port, log, env)
        server.wait_until_listening(timeout)
        return server

    @classmethod
    def launch(
        cls,
        command: list[str],
        host: str,
        port: int,
        log: Path,
        env: Mapping[str, str],
        preexec_fn: Callable[[], None] | None = None,
    ) -> RunningServer:
        """Run `command` with its output in `log`, without waiting for it: the JVM takes seconds to listen,
        which the caller may spend on other work first. The server's token is `env`'s, or one made for it."""
        token = server_token(env)
        with log.open("w") as output:
            process = subprocess.Popen(
                command,
                stdin=subprocess.DEVNULL,
                stdout=output,
                stderr=subprocess.STDOUT,
                env={**env, TOKEN_VARIABLE: token},
                preexec_fn=preexec_fn,
            )
        return cls(process, host, port, log, token)

    def wait_until_listening(self, timeout: float = 180) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"the Spark Connect server stopped (exit {self.process.returncode}); see {self.log}")
            with socket.socket() as client:
                if client.connect_ex((self.host, self.port)) == 0:
                    return
            time.sleep(0.5)
        self.process.kill()
        self.process.wait()
        raise RuntimeError(
            f"the Spark Connect server did not listen on {self.host}:{self.port} within {timeout:g} s; see {self.log}"
        )

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(60)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


def free_port(host: str = DEFAULT_HOST) -> int:
    """A port nothing listens on now (another process may take it before the server does: rare, and loud)."""
    with socket.socket() as probe:
        probe.bind((host, 0))
        return probe.getsockname()[1]
