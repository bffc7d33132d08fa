"""The one way this project builds a SparkSession, shared by Dagster runs, the CLI and the benchmarks."""

from __future__ import annotations

from collections.abc import Mapping

from pyspark.sql import SparkSession

# Fixed for correctness, not tunable: timestamps in the formats are UTC, and partition folder values
# (vendor=com.acme, version=1-0-0) must stay strings when read back.
REQUIRED_SPARK_CONFIG: dict[str, str] = {
    "spark.sql.session.timeZone": "UTC",
    "spark.driver.extraJavaOptions": "-Duser.timezone=UTC",
    "spark.executor.extraJavaOptions": "-Duser.timezone=UTC",
    "spark.sql.sources.partitionColumnTypeInference.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
}


def spark_session_config(settings_config: Mapping[str, str]) -> dict[str, str]:
    return {**settings_config, **REQUIRED_SPARK_CONFIG}


def build_spark_session(config: Mapping[str, str], app_name: str = "snowplow-assets") -> SparkSession:
    builder = SparkSession.builder.appName(app_name)
    for key, value in spark_session_config(config).items():
        builder = builder.config(key, value)
    session = builder.getOrCreate()
    session.sparkContext.setLogLevel("WARN")
    return session
