import zipfile

import pytest

from snowplow_assets import jvm
from snowplow_assets.events import canonical
from snowplow_assets.events.canonical import fast_path_available, function_spec


@pytest.fixture
def fresh_build(tmp_path, monkeypatch):
    """functions_jar() as on a machine that never built it, caching under a temporary folder."""
    monkeypatch.setenv("SNOWPLOW_JVM_CACHE", str(tmp_path))
    jvm.functions_jar.cache_clear()
    yield tmp_path
    jvm.functions_jar.cache_clear()


def test_the_jar_is_built_once_per_source_version_and_holds_the_functions(fresh_build):
    jar = jvm.functions_jar()
    assert jar is not None and jar.parent == fresh_build
    with zipfile.ZipFile(jar) as archive:
        for name in (jvm.CANONICAL_LINE_CLASS, jvm.CANONICAL_LINE_SPEC_CLASS):
            assert name.replace(".", "/") + ".class" in archive.namelist()
        assert archive.read(jvm.CANONICAL_LINE_SPEC_RESOURCE).decode() == function_spec()
    built = jar.stat().st_mtime_ns
    jvm.functions_jar.cache_clear()
    assert jvm.functions_jar() == jar and jar.stat().st_mtime_ns == built, "a cached jar is not built again"
    assert [p.name for p in fresh_build.iterdir()] == [jar.name], "no build leftovers"


def test_the_cache_folder_is_read_from_the_working_folders_env_file_too(fresh_build, monkeypatch):
    """As every SNOWPLOW_ setting is: until 2026-11-28 the CLI ignored it there, and `dagster dev`, which loads
    .env into its environment, did not."""
    monkeypatch.delenv("SNOWPLOW_JVM_CACHE")
    monkeypatch.chdir(fresh_build)
    (fresh_build / ".env").write_text(f"SNOWPLOW_JVM_CACHE={fresh_build / 'from-env'}\n")
    jar = jvm.functions_jar()
    assert jar is not None and jar.parent == fresh_build / "from-env"


def test_without_a_jdk_there_is_no_jar(fresh_build, monkeypatch):
    monkeypatch.delenv("JAVA_HOME", raising=False)
    monkeypatch.setenv("PATH", str(fresh_build))  # nothing named javac
    assert jvm.functions_jar() is None
    assert list(fresh_build.iterdir()) == []


def test_a_source_that_does_not_compile_is_a_clear_error(fresh_build, tmp_path_factory, monkeypatch):
    sources = tmp_path_factory.mktemp("src")
    (sources / "Broken.java").write_text("class Broken { int x = ; }")
    monkeypatch.setattr(jvm, "SOURCES", sources)
    with pytest.raises(RuntimeError, match=r"(?s)compiling the project.s Spark functions failed:.*Broken.java"):
        jvm.functions_jar()


def test_the_test_session_has_the_functions(spark):
    assert fast_path_available(spark)
    assert spark.sql(f"SELECT {canonical.SPEC_FUNCTION_NAME}()").first()[0] == function_spec(), (
        "the jar's spec, read in Java"
    )


def test_other_definitions_build_another_jar(fresh_build, monkeypatch):
    jar = jvm.functions_jar()
    jvm.functions_jar.cache_clear()
    monkeypatch.setattr(canonical, "function_spec", lambda: '{"fields": []}')
    other = jvm.functions_jar()
    assert other != jar and other.is_file() and jar.is_file()


def test_a_function_built_from_other_definitions_is_refused(spark, monkeypatch):
    """As from a Spark Connect server started before an upgrade: its jar's spec is not the client's."""
    session = spark.newSession()  # the same JVM, functions of its own
    monkeypatch.setattr(canonical, "function_spec", lambda: '{"fields": []}')
    with pytest.raises(RuntimeError, match="built from other definitions than this snowplow-assets"):
        fast_path_available(session)
    assert not session.catalog.functionExists(canonical.FUNCTION_NAME), "never registered, never used"


def test_a_session_without_the_jar_has_no_fast_path(spark, tmp_path, monkeypatch):
    """As a Spark Connect server without the project's jar, or a machine without a JDK: the class is missing."""
    session = spark.newSession()
    monkeypatch.setattr(canonical, "CANONICAL_LINE_SPEC_CLASS", "snowplow_assets.jvm.NoSuchClass")
    assert not fast_path_available(session)
    assert not session.catalog.functionExists(canonical.FUNCTION_NAME)


def test_a_cache_that_cannot_be_written_means_no_jar_not_a_failure(fresh_build, monkeypatch):
    blocked = fresh_build / "a-file-not-a-folder"
    blocked.write_text("")
    monkeypatch.setenv("SNOWPLOW_JVM_CACHE", str(blocked / "jvm"))
    assert jvm.functions_jar() is None


@pytest.mark.parametrize("printed", ["javac 11.0.20", "javac 1.8.0_292", "not a javac at all"])
def test_a_jdk_older_than_17_means_no_jar(fresh_build, tmp_path_factory, monkeypatch, printed):
    # This machine has only JDK 17, so an older one is stood in for by a script that answers `-version` as it
    # would (JDK 8 printed `1.8`), and fails on anything else, as an old javac fails on `--release 17`.
    bin_dir = tmp_path_factory.mktemp("old-jdk")
    javac = bin_dir / "javac"
    javac.write_text(f'#!/bin/sh\n[ "$1" = -version ] && echo "{printed}" >&2 && exit 0\nexit 2\n')
    javac.chmod(0o755)
    monkeypatch.delenv("JAVA_HOME", raising=False)
    monkeypatch.setenv("PATH", str(bin_dir))
    assert jvm.functions_jar() is None
    assert list(fresh_build.iterdir()) == []
