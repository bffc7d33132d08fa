"""The project's Spark functions written in Java (`src/`), compiled into a jar on first use. (The Spark
driver's default JVM options, which concern the same JVM, are in driver_options.py.)

Only what Spark cannot do fast enough as it comes lives here: the shredder's fast path for canonical lines
(`CanonicalLine`, used by snowplow_assets/events/canonical.py, with `CanonicalForms`, its quick checks of
the typed fields' forms); `SharedCodeConnectServer`, Spark's Spark Connect server with sessions that
share compiled code (snowplow_assets/spark_connect_server.py starts it); and `PosixLocalFileSystem`,
Hadoop's local file system minus a process per folder it creates (spark.py). The fast path's Java holds
mechanism only; what it checks and renders comes from the Python definitions, as a spec that the jar
carries as a resource: Spark then creates the function from its class name alone, which is all a Spark
Connect client can hand over.

The jar is built with the JDK's `javac` against the installed PySpark's jars and cached under
`SNOWPLOW_JVM_CACHE` (default `~/.cache/snowplow-assets/jvm`), named by a hash of the sources, the spec and
the PySpark version, so a change to any of them builds a new one and nothing needs a build step at install
time. `spark.jars` carries it to the driver and, on a cluster, to every executor; a Spark Connect server
started by `snowplow-assets spark-server` has it the same way (another server needs it in its `spark.jars`).
Without a JDK (`javac` in `JAVA_HOME/bin` or on PATH), with a JDK older than 17, or where the cache cannot
be written, there is no jar: every line then takes the full parser, which is correct, only slower
(benchmarks/README.md), and a Spark Connect server is Spark's own.
"""

from __future__ import annotations

import functools
import hashlib
import logging
import os
import re
import shutil
import subprocess
import tempfile
import zipfile
from pathlib import Path

import pyspark
from dotenv import dotenv_values

SOURCES = Path(__file__).parent / "src"
CANONICAL_LINE_CLASS = "snowplow_assets.jvm.CanonicalLine"
CANONICAL_LINE_SPEC_CLASS = "snowplow_assets.jvm.CanonicalLineSpec"
# Spark's Spark Connect server with sessions that share compiled code (spark_connect_server.py).
SHARED_CODE_CONNECT_SERVER_CLASS = "snowplow_assets.jvm.SharedCodeConnectServer"
# Hadoop's local file system without checksum files, setting permissions without a chmod process (spark.py).
POSIX_LOCAL_FILE_SYSTEM_CLASS = "snowplow_assets.jvm.PosixLocalFileSystem"
# Beside the class, where CanonicalLine.bundledSpec() looks for it.
CANONICAL_LINE_SPEC_RESOURCE = "snowplow_assets/jvm/canonical_line_spec.json"
# What the jar is compiled for: the Java that PySpark 4 needs. An older javac cannot build it.
JAVA_RELEASE = 17

log = logging.getLogger(__name__)


def _javac() -> str | None:
    java_home = os.environ.get("JAVA_HOME")
    if java_home and (Path(java_home) / "bin" / "javac").is_file():
        return str(Path(java_home) / "bin" / "javac")
    return shutil.which("javac")


def _javac_version(javac: str) -> int | None:
    """The major version `javac -version` prints (`javac 17.0.15`, or `javac 1.8.0_292` for 8)."""
    try:
        result = subprocess.run([javac, "-version"], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return None
    match = re.search(r"javac (?:1\.)?(\d+)", result.stdout + result.stderr)
    return int(match.group(1)) if match else None


def _cache_dir() -> Path:
    # Read as the settings read every SNOWPLOW_ variable (settings.py): the environment first, then the working
    # folder's .env. From the environment alone, a value in .env was ignored by the CLI, which built the jar in
    # the default folder, and honoured by `dagster dev`, which loads .env into its environment (until 2026-11-28).
    configured = os.environ.get("SNOWPLOW_JVM_CACHE") or dotenv_values(".env").get("SNOWPLOW_JVM_CACHE")
    return Path(configured) if configured else Path.home() / ".cache" / "snowplow-assets" / "jvm"


@functools.cache
def functions_jar() -> Path | None:
    """The jar of the project's Spark functions, built if needed; None when no JDK can build it."""
    sources = sorted(SOURCES.rglob("*.java"))
    resources = _resources()
    digest = hashlib.sha256(pyspark.__version__.encode())
    for source in sources:
        digest.update(source.relative_to(SOURCES).as_posix().encode() + b"\0" + source.read_bytes())
    for name, content in sorted(resources.items()):
        digest.update(name.encode() + b"\0" + content)
    jar = _cache_dir() / f"snowplow-assets-functions-{digest.hexdigest()[:16]}.jar"
    if jar.is_file():
        return jar
    javac = _javac()
    if javac is None:
        log.warning("no javac (JDK) found: the shredder's fast path is off and every line takes the full parser")
        return None
    version = _javac_version(javac)
    if version is None or version < JAVA_RELEASE:
        log.warning(
            "%s is not a JDK %d or newer (%s): the shredder's fast path is off",
            javac,
            JAVA_RELEASE,
            "version unknown" if version is None else f"version {version}",
        )
        return None
    try:
        _build(javac, sources, resources, jar)
    except OSError as error:  # e.g. a read-only home: run without the fast path rather than not at all
        log.warning("could not build %s (%s): the shredder's fast path is off", jar, error)
        return None
    return jar


def _resources() -> dict[str, bytes]:
    """What the jar carries besides its classes: the spec of CanonicalLine, so that Spark can create the
    function from its class name alone (a Spark Connect client has no other way to hand it over)."""
    from snowplow_assets.events.canonical import function_spec  # the events package imports this one

    return {CANONICAL_LINE_SPEC_RESOURCE: function_spec().encode()}


def _build(javac: str, sources: list[Path], resources: dict[str, bytes], jar: Path) -> None:
    spark_jars = Path(pyspark.__file__).parent / "jars"
    jar.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=jar.parent) as work:
        classes = Path(work) / "classes"
        command = [javac, "--release", str(JAVA_RELEASE), "-nowarn", "-cp", str(spark_jars / "*"), "-d", str(classes)]
        result = subprocess.run([*command, *map(str, sources)], capture_output=True, text=True)
        if result.returncode != 0:
            raise RuntimeError(f"compiling the project's Spark functions failed:\n{result.stderr}")
        built = Path(work) / jar.name
        with zipfile.ZipFile(built, "w", zipfile.ZIP_DEFLATED) as archive:
            for path in sorted(classes.rglob("*.class")):
                archive.write(path, path.relative_to(classes).as_posix())
            for name, content in sorted(resources.items()):
                archive.writestr(name, content)
        os.replace(built, jar)  # atomic: a concurrent build never leaves a half-written jar under the name
