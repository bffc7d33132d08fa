import json
import shlex
import shutil
import subprocess

import pytest

from snowplow_assets.jvm.driver_options import COMPILER_DIRECTIVES, DEFAULT_DRIVER_JAVA_OPTIONS, driver_java_options


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
