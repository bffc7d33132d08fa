import shlex
import sys

import pytest

from snowplow_assets.jvm import POSIX_LOCAL_FILE_SYSTEM_CLASS, functions_jar
from snowplow_assets.jvm.driver_options import DEFAULT_DRIVER_JAVA_OPTIONS
from snowplow_assets.settings import Settings
from snowplow_assets.spark import session_conf, spark_session_config, unsorted_partitioned_write
from snowplow_assets.storage import LocalFileSystem
from snowplow_assets_tests.conftest import write_plan

JAVA_OPTIONS = ("spark.driver.extraJavaOptions", "spark.executor.extraJavaOptions")


def test_the_default_jvm_options_reach_the_driver_with_the_required_ones_last(monkeypatch):
    monkeypatch.delenv("SNOWPLOW_SPARK_JAVA_OPTIONS", raising=False)
    config = spark_session_config(Settings(_env_file=None).spark_config)
    assert config["spark.driver.extraJavaOptions"] == f"{DEFAULT_DRIVER_JAVA_OPTIONS} -Duser.timezone=UTC"
    assert config["spark.executor.extraJavaOptions"] == "-Duser.timezone=UTC", "a cluster's executors are left alone"


def test_executor_options_from_spark_conf_keep_the_required_ones(monkeypatch):
    monkeypatch.setenv("SNOWPLOW_SPARK_CONF", '{"spark.executor.extraJavaOptions": "-XX:+UseG1GC"}')
    config = spark_session_config(Settings(_env_file=None).spark_config)
    assert config["spark.executor.extraJavaOptions"] == "-XX:+UseG1GC -Duser.timezone=UTC"


def test_jvm_options_can_be_replaced_or_emptied_but_utc_stays(monkeypatch):
    monkeypatch.setenv("SNOWPLOW_SPARK_JAVA_OPTIONS", "-XX:+UseG1GC -Duser.timezone=Europe/Paris")
    config = spark_session_config(Settings(_env_file=None).spark_config)
    assert config["spark.driver.extraJavaOptions"] == "-XX:+UseG1GC -Duser.timezone=Europe/Paris -Duser.timezone=UTC"
    monkeypatch.setenv("SNOWPLOW_SPARK_JAVA_OPTIONS", "")
    config = spark_session_config(Settings(_env_file=None).spark_config)
    assert [config[key] for key in JAVA_OPTIONS] == ["-Duser.timezone=UTC"] * 2


def test_the_running_jvm_has_the_options(spark):
    jvm = spark.sparkContext._jvm
    management = jvm.java.lang.management.ManagementFactory
    arguments = list(management.getRuntimeMXBean().getInputArguments())
    assert set(shlex.split(DEFAULT_DRIVER_JAVA_OPTIONS)) <= set(arguments)
    assert jvm.java.lang.System.getProperty("user.timezone") == "UTC", "the required option comes last and wins"
    collectors = {str(gc.getName()) for gc in management.getGarbageCollectorMXBeans()}
    assert collectors == {"PS Scavenge", "PS MarkSweep"}, "the parallel collector"


def test_fused_code_too_large_to_jit_compile_is_not_used_unless_spark_conf_says_so(spark, monkeypatch):
    assert spark.conf.get("spark.sql.codegen.hugeMethodLimit") == "8000", "the test session runs as deployed"
    monkeypatch.setenv("SNOWPLOW_SPARK_CONF", '{"spark.sql.codegen.hugeMethodLimit": "65535"}')
    assert spark_session_config(Settings(_env_file=None).spark_config)["spark.sql.codegen.hugeMethodLimit"] == "65535"


def test_the_projects_jar_joins_the_jars_spark_conf_names(monkeypatch):
    jar = str(functions_jar())
    monkeypatch.delenv("SNOWPLOW_SPARK_CONF", raising=False)
    assert spark_session_config(Settings(_env_file=None).spark_config)["spark.jars"] == jar
    monkeypatch.setenv("SNOWPLOW_SPARK_CONF", '{"spark.jars": "/opt/jars/hadoop-aws.jar"}')
    assert (
        spark_session_config(Settings(_env_file=None).spark_config)["spark.jars"] == f"/opt/jars/hadoop-aws.jar,{jar}"
    )


def test_session_conf_restores_what_was_set_and_unsets_what_was_not_even_after_a_failure(spark):
    before = spark.conf.get("spark.sql.shuffle.partitions")
    with pytest.raises(RuntimeError, match="inside"):
        with session_conf(spark, {"spark.sql.shuffle.partitions": "3", "spark.snowplow.test.unset": "x"}):
            assert spark.conf.get("spark.sql.shuffle.partitions") == "3"
            assert spark.conf.get("spark.snowplow.test.unset") == "x"
            raise RuntimeError("inside")
    assert spark.conf.get("spark.sql.shuffle.partitions") == before != "3"
    assert spark.conf.get("spark.snowplow.test.unset", None) is None


def test_an_unsorted_partitioned_write_keeps_a_file_open_per_partition_instead_of_sorting(spark, tmp_path):
    rows = spark.range(3000).selectExpr("id", "CAST(id % 3 AS STRING) AS part")
    rows.write.partitionBy("part").parquet(str(tmp_path / "sorted"))
    assert "Sort (" in write_plan(spark, str(tmp_path / "sorted"))
    with session_conf(spark, unsorted_partitioned_write(open_files_per_task=3)):
        rows.write.partitionBy("part").parquet(str(tmp_path / "unsorted"))
    assert "Sort (" not in write_plan(spark, str(tmp_path / "unsorted"))
    assert (
        spark.read.parquet(LocalFileSystem().spark_read_path(str(tmp_path / "unsorted")))
        .exceptAll(spark.read.parquet(LocalFileSystem().spark_read_path(str(tmp_path / "sorted"))))
        .count()
        == 0
    )
    assert spark.read.parquet(LocalFileSystem().spark_read_path(str(tmp_path / "unsorted"))).count() == 3000


def test_a_local_master_writes_through_the_jars_file_system_on_the_jvms_class_path(monkeypatch):
    jar = str(functions_jar())
    monkeypatch.setenv("SNOWPLOW_SPARK_CONF", '{"spark.driver.extraClassPath": "/opt/jars/extra.jar"}')
    config = spark_session_config(Settings(_env_file=None).spark_config)
    assert config["spark.hadoop.fs.file.impl"] == POSIX_LOCAL_FILE_SYSTEM_CLASS
    assert config["spark.driver.extraClassPath"] == f"/opt/jars/extra.jar:{jar}"
    monkeypatch.setenv("SNOWPLOW_SPARK_MASTER", "spark://cluster.example:7077")
    config = spark_session_config(Settings(_env_file=None).spark_config)
    assert config["spark.hadoop.fs.file.impl"] == "org.apache.hadoop.fs.RawLocalFileSystem", "a cluster's executors"
    assert config["spark.driver.extraClassPath"] == "/opt/jars/extra.jar"
    monkeypatch.setattr("snowplow_assets.spark.functions_jar", lambda: None)
    monkeypatch.delenv("SNOWPLOW_SPARK_MASTER")
    config = spark_session_config(Settings(_env_file=None).spark_config)
    assert config["spark.hadoop.fs.file.impl"] == "org.apache.hadoop.fs.RawLocalFileSystem", "no JDK, no jar"


def test_a_spark_connect_client_sets_only_its_sessions_settings(monkeypatch):
    monkeypatch.setenv("SNOWPLOW_SPARK_REMOTE", "sc://spark.example:15002")
    config = spark_session_config(Settings(_env_file=None).spark_config)
    assert config["spark.remote"] == "sc://spark.example:15002"
    assert config["spark.sql.session.timeZone"] == "UTC" and config["spark.sql.codegen.hugeMethodLimit"] == "8000"
    # Spark refuses a master beside a remote; memory, JVM options and jars are the server's (spark_connect_server.py).
    assert sorted(k for k in config if not k.startswith("spark.sql.")) == ["spark.remote"]
    # So are the SQL engine's static settings, which a session cannot change.
    assert "spark.sql.codegen.cache.maxEntries" not in config
    monkeypatch.delenv("SNOWPLOW_SPARK_REMOTE")
    assert spark_session_config(Settings(_env_file=None).spark_config)["spark.sql.codegen.cache.maxEntries"] == "5000"


def test_python_workers_run_this_interpreter_with_its_packages(spark):
    def interpreter(_):
        import sys

        import pyarrow  # noqa: F401  (partition_tasks.py's batches; not on every python3 on PATH)

        yield sys.executable

    assert spark.sparkContext.parallelize([0], 1).mapPartitions(interpreter).collect() == [sys.executable]


def test_a_query_run_again_in_the_same_jvm_compiles_no_generated_code_again(spark):
    """More distinct generated classes than Spark's default cache of 100 holds: the earliest are still there."""
    codegen = spark.sparkContext._jvm.org.apache.spark.metrics.source.CodegenMetrics
    # Each literal is written into its query's generated code, so every query compiles classes of its own.
    queries = [spark.range(2).selectExpr(f"id * {i} + {i} AS v") for i in range(60)]
    before = codegen.METRIC_COMPILATION_TIME().getCount()
    for query in queries:
        query.collect()
    compiled = codegen.METRIC_COMPILATION_TIME().getCount()
    assert compiled - before > 100, "two classes a query: more than Spark's default cache holds"
    # The least recently used, which a cache of 100 drops first (measured: it compiled 18 classes again).
    for query in queries[:20]:
        query.collect()
    assert codegen.METRIC_COMPILATION_TIME().getCount() == compiled
