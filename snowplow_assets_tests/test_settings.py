from pathlib import Path

import pytest
from pydantic import ValidationError

from snowplow_assets.settings import DEFAULT_LAKE, PROJECT_ROOT, Settings


def test_default_lake_is_inside_the_project():
    assert Settings().lake == str(DEFAULT_LAKE) and DEFAULT_LAKE.parent == PROJECT_ROOT


def test_lake_from_environment_is_made_absolute(monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("SNOWPLOW_LAKE", "my-lake")
    assert Settings().lake == str(tmp_path / "my-lake")
    monkeypatch.setenv("SNOWPLOW_LAKE", "s3://bucket/prefix")
    assert Settings().lake == "s3://bucket/prefix"


def test_synthetic_without_natural_is_a_clear_error(monkeypatch):
    monkeypatch.setenv("SNOWPLOW_DEDUP_NATURAL", "false")
    with pytest.raises(ValidationError, match="SNOWPLOW_DEDUP_SYNTHETIC=true needs SNOWPLOW_DEDUP_NATURAL=true"):
        Settings()
    monkeypatch.setenv("SNOWPLOW_DEDUP_SYNTHETIC", "false")
    assert Settings().dedup_natural is False


def test_spark_settings_come_from_the_environment(monkeypatch):
    monkeypatch.setenv("SNOWPLOW_SPARK_MASTER", "spark://cluster:7077")
    monkeypatch.setenv("SNOWPLOW_SPARK_DRIVER_MEMORY", "8g")
    monkeypatch.setenv("SNOWPLOW_SPARK_SHUFFLE_PARTITIONS", "64")
    monkeypatch.setenv("SNOWPLOW_SPARK_CONF", '{"spark.executor.cores": "4"}')
    config = Settings().spark_config
    assert config["spark.master"] == "spark://cluster:7077"
    assert config["spark.driver.memory"] == "8g"
    assert config["spark.sql.shuffle.partitions"] == "64"
    assert config["spark.executor.cores"] == "4"


def test_defaults_are_local():
    config = Settings().spark_config
    assert config["spark.master"] == "local[*]"
    assert Path(Settings().lake).is_absolute()


def test_an_s3_lake_gets_the_spark_s3a_settings_of_a_local_stack(monkeypatch):
    monkeypatch.setenv("SNOWPLOW_LAKE", "s3://bucket/lake")
    monkeypatch.setenv("SNOWPLOW_S3_ENDPOINT_URL", "http://localhost:4566")
    monkeypatch.setenv("SNOWPLOW_S3_REGION", "eu-west-1")
    monkeypatch.setenv("SNOWPLOW_SPARK_CONF", '{"spark.hadoop.fs.s3a.path.style.access": "false"}')
    config = Settings().spark_config
    assert config["spark.hadoop.fs.s3a.endpoint"] == "http://localhost:4566"
    assert config["spark.hadoop.fs.s3a.endpoint.region"] == "eu-west-1"
    assert config["spark.hadoop.fs.s3a.path.style.access"] == "false", "SNOWPLOW_SPARK_CONF has the last word"
    monkeypatch.setenv("SNOWPLOW_S3_SCHEME", "s3")
    assert not any(key.startswith("spark.hadoop.fs.s3a.endpoint") for key in Settings().spark_config), "EMRFS configures itself"
    monkeypatch.setenv("SNOWPLOW_LAKE", "/data/lake")
    monkeypatch.setenv("SNOWPLOW_S3_SCHEME", "s3a")
    assert "spark.hadoop.fs.s3a.endpoint" not in Settings().spark_config
    monkeypatch.setenv("SNOWPLOW_S3_SCHEME", "gs")
    with pytest.raises(ValidationError, match="s3a"):
        Settings()


def test_cross_batch_deduplication_defaults_to_the_lake_manifest_and_presupposes_in_batch(monkeypatch):
    settings = Settings()
    assert (settings.event_manifest, settings.event_manifest_ttl_days, settings.cross_batch_synthetic) == ("lake", 180, True)
    # Switching the in-batch kind off takes the cross-batch default with it...
    monkeypatch.setenv("SNOWPLOW_DEDUP_SYNTHETIC", "false")
    assert Settings().cross_batch_synthetic is False
    monkeypatch.setenv("SNOWPLOW_DEDUP_NATURAL", "false")
    assert Settings().event_manifest == "none"
    # ...but asking for both at once is a clear error.
    monkeypatch.setenv("SNOWPLOW_EVENT_MANIFEST", "lake")
    with pytest.raises(ValidationError, match="SNOWPLOW_EVENT_MANIFEST=lake needs SNOWPLOW_DEDUP_NATURAL=true"):
        Settings()
    monkeypatch.setenv("SNOWPLOW_DEDUP_NATURAL", "true")
    monkeypatch.setenv("SNOWPLOW_CROSS_BATCH_SYNTHETIC", "true")
    with pytest.raises(ValidationError, match="SNOWPLOW_CROSS_BATCH_SYNTHETIC=true needs SNOWPLOW_DEDUP_SYNTHETIC=true"):
        Settings()


def test_the_dynamodb_manifest_needs_a_table_and_a_region(monkeypatch):
    monkeypatch.setenv("SNOWPLOW_EVENT_MANIFEST", "dynamodb")
    with pytest.raises(ValidationError, match="needs SNOWPLOW_EVENT_MANIFEST_DYNAMODB_TABLE"):
        Settings()
    monkeypatch.setenv("SNOWPLOW_EVENT_MANIFEST_DYNAMODB_TABLE", "manifest")
    monkeypatch.setenv("SNOWPLOW_EVENT_MANIFEST_DYNAMODB_REGION", "eu-west-1")
    monkeypatch.setenv("SNOWPLOW_EVENT_MANIFEST_TTL_DAYS", "30")
    settings = Settings()
    assert (settings.event_manifest_dynamodb_table, settings.event_manifest_ttl_days) == ("manifest", 30)
    assert settings.event_manifest_dynamodb_endpoint_url is None
