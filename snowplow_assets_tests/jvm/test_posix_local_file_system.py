"""The local file system Spark writes a local lake with (jvm/src/.../PosixLocalFileSystem.java): Hadoop's,
the same permissions, without a chmod process per folder."""

import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

from snowplow_assets.jvm import POSIX_LOCAL_FILE_SYSTEM_CLASS


def _file_systems(spark):
    jvm = spark.sparkContext._jvm
    root = jvm.java.net.URI("file:///")
    conf = spark.sparkContext._jsc.hadoopConfiguration()
    hadoops = jvm.org.apache.hadoop.fs.RawLocalFileSystem()
    hadoops.initialize(root, conf)
    return jvm, jvm.org.apache.hadoop.fs.FileSystem.get(root, conf), hadoops


def _modes(folder) -> dict[str, str]:
    return {
        os.path.relpath(os.path.join(parent, name), folder): oct(os.stat(os.path.join(parent, name)).st_mode)
        for parent, folders, files in os.walk(folder)
        for name in folders + files
    }


def test_the_sessions_local_file_system_sets_the_permissions_hadoops_own_sets(spark, tmp_path):
    jvm, ours, hadoops = _file_systems(spark)
    assert ours.getClass().getName() == POSIX_LOCAL_FILE_SYSTEM_CLASS
    permission = jvm.org.apache.hadoop.fs.permission.FsPermission.createImmutable
    for name, fs in (("ours", ours), ("hadoops", hadoops)):
        path = lambda relative: jvm.org.apache.hadoop.fs.Path(f"file://{tmp_path}/{name}/{relative}")  # noqa: E731
        assert fs.mkdirs(path("a/b/c"))
        fs.create(path("a/file")).close()
        for relative, mode in (("a/file", 0o640), ("a/b", 0o700), ("a/b/c", 0o1777), ("a", 0o751)):
            fs.setPermission(path(relative), permission(mode))
        fs.mkdirs(path("d"), permission(0o777))  # the umask applies
    assert _modes(tmp_path / "ours") == _modes(tmp_path / "hadoops")
    assert _modes(tmp_path / "ours")["a/b/c"] == oct(0o41777), "the sticky bit goes Hadoop's way"


def test_creating_folders_starts_no_process(spark, tmp_path):
    """Java Flight Recorder, asked of the running JVM, records every process it starts."""
    jcmd, jfr = shutil.which("jcmd"), shutil.which("jfr")
    if jcmd is None or jfr is None:
        pytest.skip("no jcmd and jfr (JDK tools) to record the JVM's processes")
    jvm, ours, hadoops = _file_systems(spark)
    # jcmd splits its arguments at spaces, and the tests' temporary folder has one (conftest.py).
    plain = Path(tempfile.mkdtemp(prefix="snowplow-assets-jfr-", dir="/tmp"))
    pid, recording = str(jvm.java.lang.ProcessHandle.current().pid()), plain / "processes.jfr"

    def processes_started(fs, folder: str) -> list[str]:
        subprocess.run([jcmd, pid, "JFR.start", "name=folders", "settings=default"], check=True, capture_output=True)
        try:
            for i in range(3):
                fs.mkdirs(jvm.org.apache.hadoop.fs.Path(f"file://{tmp_path}/{folder}/{i}/part"))
        finally:
            subprocess.run(
                [jcmd, pid, "JFR.stop", "name=folders", f"filename={recording}"], check=True, capture_output=True
            )
        printed = subprocess.run(
            [jfr, "print", "--events", "jdk.ProcessStart", str(recording)], check=True, capture_output=True, text=True
        ).stdout
        # Only the processes that name this folder: the recording sees the whole JVM, whose other threads may
        # start processes of their own meanwhile (under a heavy load the test once failed, its cause unseen).
        commands = [line.strip() for line in printed.splitlines() if line.strip().startswith("command =")]
        return [command for command in commands if f"{tmp_path}/{folder}" in command]

    try:
        assert len(processes_started(hadoops, "hadoops")) == 7, "a chmod per folder: the recording sees them"
        assert processes_started(ours, "ours") == []
    finally:
        shutil.rmtree(plain)
