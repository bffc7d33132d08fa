import json
import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from snowplow_assets.cdc.history import ingest_landing
from snowplow_assets.cdc.models import parse_models
from snowplow_assets.jvm.driver_options import COMPILER_DIRECTIVES, DEFAULT_DRIVER_JAVA_OPTIONS, driver_java_options
from snowplow_assets.lake import Lake
from snowplow_assets.storage import LocalFileSystem
from snowplow_assets_tests.cdc.builders import record, write_landing, write_models
from snowplow_assets_tests.conftest import TEST_SPARK_SETTINGS


def _excluded_from_c2() -> list[str]:
    [directive] = json.loads(COMPILER_DIRECTIVES.read_text())
    assert directive["c2"] == {"Exclude": True}
    return directive["match"]


def test_the_default_options_name_the_packaged_directives_and_survive_a_path_with_a_space(tmp_path):
    assert f"-XX:CompilerDirectivesFile={COMPILER_DIRECTIVES}" in shlex.split(DEFAULT_DRIVER_JAVA_OPTIONS)
    spaced = tmp_path / "a folder" / "directives.json"
    assert f"-XX:CompilerDirectivesFile={spaced}" in shlex.split(driver_java_options(spaced))


def test_the_session_jvm_keeps_c2_off_the_query_building_libraries(spark):
    """The tests' JVM starts with the default options, so a directives file HotSpot rejected would have
    stopped it; here the running JVM is asked which directives it holds."""
    jvm = spark.sparkContext._jvm
    diagnostics = jvm.java.lang.management.ManagementFactory.getPlatformMXBean(
        jvm.java.lang.Class.forName("com.sun.management.HotSpotDiagnosticMXBean")
    )
    assert diagnostics.getVMOption("CompilerDirectivesFile").getValue() == str(COMPILER_DIRECTIVES)
    jcmd = shutil.which("jcmd")
    if jcmd is None:
        pytest.skip("no jcmd (a JDK tool) to list the JVM's compiler directives")
    pid = jvm.java.lang.ProcessHandle.current().pid()
    listing = subprocess.run([jcmd, str(pid), "Compiler.directives_print"], capture_output=True, text=True, timeout=60)
    ours = next(block for block in listing.stdout.split("Directive:") if "org/codehaus/*.*" in block)
    matching = ours.split("matching:")[1].splitlines()[0]
    assert sorted(p.strip() for p in matching.split(",")) == sorted(_excluded_from_c2())
    c1, c2 = ours.split("c2 directives:")
    assert "Exclude:true" in c2 and "Exclude:false" in c1


NOTES_YAML = "models:\n  notes:\n    topics: [{topic: notes, contract: partial}]\n"


def test_a_command_in_a_jvm_of_its_own_keeps_hotspots_messages_off_its_data(spark, tmp_path):
    """`snowplow-assets latest` prints rows on stdout, in a process of its own whose JVM (SNOWPLOW_SPARK_SERVER=own)
    starts with the default options and shares that stdout: HotSpot's note that it read the compiler directives
    goes to stderr (-XX:+DisplayVMOutputToStderr), and stdout holds the rows alone. The one test of a command
    starting a JVM of its own; `process` as a subprocess, on the shared server, is in test_shared_spark_server.py."""
    lake, fs = Lake(str(tmp_path / "lake")), LocalFileSystem()
    models_file = write_models(tmp_path / "models.yaml", NOTES_YAML)
    write_landing(
        lake,
        "landing=notes",
        [record("notes", {"text": "kept"}, "a", 1_000, 0), record("notes", {"text": "x"}, "b", 1_000, 1)],
    )
    ingest_landing(spark, fs, lake, "landing=notes", parse_models(NOTES_YAML))
    env = {
        **{k: v for k, v in os.environ.items() if k != "SNOWPLOW_SPARK_JAVA_OPTIONS"},  # the default JVM options
        **TEST_SPARK_SETTINGS,
        "SNOWPLOW_SPARK_SERVER": "own",
        "SNOWPLOW_LAKE": lake.root,
        "SNOWPLOW_CDC_MODELS": str(models_file),
    }
    command = [str(Path(sys.executable).parent / "snowplow-assets"), "latest", "notes"]
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=600, cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "compiler directives added" in done.stderr
    assert [json.loads(line) for line in done.stdout.splitlines()] == [
        {"id": "a", "text": "kept"}, {"id": "b", "text": "x"},
    ]  # fmt: skip
