import re
from pathlib import Path

import pytest

from snowplow_assets.settings import DEFAULT_LAKE, PROJECT_ROOT, InvalidSettings, Settings


def test_default_lake_is_inside_the_project():
    assert Settings().lake == str(DEFAULT_LAKE) and DEFAULT_LAKE.parent == PROJECT_ROOT


@pytest.mark.parametrize(
    "given, expected",
    [
        ("my-lake", "{tmp}/my-lake"),
        ("lake:2026", "{tmp}/lake:2026"),
        ("s3://bucket/prefix", "s3://bucket/prefix"),
        ("s3://bucket/", "s3://bucket"),
        ("s3://bucket//prefix/", "s3://bucket/prefix"),
        ("s3://bucket/a//b", "s3://bucket/a/b"),
    ],
)
def test_a_lake_from_the_environment_is_a_folder_made_absolute_or_an_s3_root_without_empty_segments(
    monkeypatch, tmp_path, given, expected
):
    """A colon with no slash after it names no scheme: `lake:2026` is still a folder. An S3 root loses its empty
    segments: listings name keys without them, and with `s3://bucket//prefix` kept, every path below a folder
    was cut a character off, and `_SUCCESS` and a writer's `_temporary/` files were read as data."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("SNOWPLOW_LAKE", given)
    assert Settings().lake == expected.format(tmp=tmp_path)


@pytest.mark.parametrize("lake", ["s3://bucket/./lake", "s3://bucket/a/../lake", "s3://bucket/.."])
def test_an_s3_lake_with_dot_segments_is_refused(monkeypatch, lake):
    """boto3 would address keys under `a/../lake` and Spark's Hadoop file system keys under `lake`."""
    monkeypatch.setenv("SNOWPLOW_LAKE", lake)
    with pytest.raises(InvalidSettings, match=re.escape(f"no '.' or '..' segments: {lake!r}")):
        Settings()


def test_synthetic_without_natural_is_a_clear_error_when_chosen_and_otherwise_gives_way(monkeypatch):
    """As the event manifest's default gives way to SNOWPLOW_DEDUP_NATURAL=false, so does synthetic dedup's."""
    monkeypatch.setenv("SNOWPLOW_DEDUP_NATURAL", "false")
    settings = Settings()
    assert (settings.dedup_natural, settings.dedup_synthetic, settings.event_manifest) == (False, False, "none")
    monkeypatch.setenv("SNOWPLOW_DEDUP_SYNTHETIC", "true")
    with pytest.raises(InvalidSettings, match="SNOWPLOW_DEDUP_SYNTHETIC=true needs SNOWPLOW_DEDUP_NATURAL=true"):
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
    assert not any(key.startswith("spark.hadoop.fs.s3a.endpoint") for key in Settings().spark_config), (
        "EMRFS configures itself"
    )
    monkeypatch.setenv("SNOWPLOW_LAKE", "/data/lake")
    monkeypatch.setenv("SNOWPLOW_S3_SCHEME", "s3a")
    assert "spark.hadoop.fs.s3a.endpoint" not in Settings().spark_config
    monkeypatch.setenv("SNOWPLOW_S3_SCHEME", "gs")
    with pytest.raises(InvalidSettings, match="s3a"):
        Settings()


def test_cross_batch_deduplication_defaults_to_the_lake_manifest_and_presupposes_in_batch(monkeypatch):
    settings = Settings()
    assert (settings.event_manifest, settings.event_manifest_ttl_days, settings.cross_batch_synthetic) == (
        "lake",
        180,
        True,
    )
    # Switching the in-batch kind off takes the cross-batch default with it...
    monkeypatch.setenv("SNOWPLOW_DEDUP_SYNTHETIC", "false")
    assert Settings().cross_batch_synthetic is False
    monkeypatch.setenv("SNOWPLOW_DEDUP_NATURAL", "false")
    assert Settings().event_manifest == "none"
    # ...but asking for both at once is a clear error.
    monkeypatch.setenv("SNOWPLOW_EVENT_MANIFEST", "lake")
    with pytest.raises(InvalidSettings, match="SNOWPLOW_EVENT_MANIFEST=lake needs SNOWPLOW_DEDUP_NATURAL=true"):
        Settings()
    monkeypatch.setenv("SNOWPLOW_DEDUP_NATURAL", "true")
    monkeypatch.setenv("SNOWPLOW_CROSS_BATCH_SYNTHETIC", "true")
    with pytest.raises(
        InvalidSettings, match="SNOWPLOW_CROSS_BATCH_SYNTHETIC=true needs SNOWPLOW_DEDUP_SYNTHETIC=true"
    ):
        Settings()


def test_the_dynamodb_manifest_needs_a_table_and_a_region(monkeypatch):
    monkeypatch.setenv("SNOWPLOW_EVENT_MANIFEST", "dynamodb")
    with pytest.raises(InvalidSettings, match="needs SNOWPLOW_EVENT_MANIFEST_DYNAMODB_TABLE"):
        Settings()
    monkeypatch.setenv("SNOWPLOW_EVENT_MANIFEST_DYNAMODB_TABLE", "manifest")
    monkeypatch.setenv("SNOWPLOW_EVENT_MANIFEST_DYNAMODB_REGION", "eu-west-1")
    monkeypatch.setenv("SNOWPLOW_EVENT_MANIFEST_TTL_DAYS", "30")
    settings = Settings()
    assert (settings.event_manifest_dynamodb_table, settings.event_manifest_ttl_days) == ("manifest", 30)
    assert settings.event_manifest_dynamodb_endpoint_url is None


@pytest.mark.parametrize(
    "lake", ["s3:/bucket/lake", "s3a://bucket/lake", "gs://bucket", "file:///data/lake", "s3://", "s3:///lake"]
)
def test_a_lake_that_names_another_scheme_or_no_bucket_is_a_clear_error(monkeypatch, lake):
    """Taken for a local folder of that name, such a root would leave the sensors finding nothing."""
    monkeypatch.setenv("SNOWPLOW_LAKE", lake)
    with pytest.raises(InvalidSettings) as raised:
        Settings()
    assert (
        str(raised.value) == f"SNOWPLOW_LAKE: the lake is a local folder or an s3://bucket/prefix URI (it is {lake!r})"
    )


def test_web_models_are_checked_when_the_settings_are_read(monkeypatch):
    for models, problem in [
        ("pages", "unknown web model(s) ['pages']"),
        ("sessions_lifecycle,users", "web model 'users' needs ['sessions'] as well"),
    ]:
        monkeypatch.setenv("SNOWPLOW_WEB_MODELS", models)
        with pytest.raises(InvalidSettings, match=re.escape(f"SNOWPLOW_WEB_MODELS: {problem}")):
            Settings()
    for models in ("", "sessions_lifecycle"):
        monkeypatch.setenv("SNOWPLOW_WEB_MODELS", models)
        assert Settings().web_models == models


@pytest.mark.parametrize(
    ("variable", "value", "message"),
    [
        ("SNOWPLOW_CDC_BATCH_CRON", "every half hour", "SNOWPLOW_CDC_BATCH_CRON: a cron schedule of five fields"),
        ("SNOWPLOW_S3_ENDPOINT_URL", "localhost:4566", "SNOWPLOW_S3_ENDPOINT_URL: an http:// or https:// URL"),
        ("SNOWPLOW_WEB_BACKFILL_LIMIT_DAYS", "99999999", "SNOWPLOW_WEB_BACKFILL_LIMIT_DAYS must be at most 3652058"),
        ("SNOWPLOW_WEB_SESSION_LOOKBACK_DAYS", "2", "SNOWPLOW_WEB_SESSION_LOOKBACK_DAYS (2) must be at least"),
        # Failed every run, leaving each item Failed, rather than the command.
        ("SNOWPLOW_SPARK_MASTER", "bogus", "SNOWPLOW_SPARK_MASTER: a Spark master URL"),
        ("SNOWPLOW_SPARK_MASTER", "local[0]", "SNOWPLOW_SPARK_MASTER: a Spark master URL"),
    ],
)
def test_settings_whose_use_would_fail_later_are_refused_when_read(monkeypatch, variable, value, message):
    """Until 2026-11-28 these passed the settings and failed loading the definitions, after `process` had
    registered new folders, with a traceback that did not name the variable."""
    monkeypatch.setenv(variable, value)
    with pytest.raises(InvalidSettings, match=re.escape(message)):
        Settings()


def test_each_wrong_setting_is_named_by_its_variable(monkeypatch):
    monkeypatch.setenv("SNOWPLOW_SPARK_CONF", "{spark.master: local}")
    with pytest.raises(InvalidSettings) as raised:
        Settings()
    assert str(raised.value).startswith("SNOWPLOW_SPARK_CONF: not valid JSON (Expecting property name")
    assert raised.value.__cause__ is None and raised.value.__suppress_context__, "no pydantic traceback beside it"
    monkeypatch.delenv("SNOWPLOW_SPARK_CONF")
    monkeypatch.setenv("SNOWPLOW_SPARK_SERVER", "mine")
    monkeypatch.setenv("SNOWPLOW_SPARK_SHUFFLE_PARTITIONS", "0")
    with pytest.raises(InvalidSettings) as raised:
        Settings()
    assert str(raised.value).splitlines() == [
        "SNOWPLOW_SPARK_SERVER: Input should be 'shared' or 'own' (it is 'mine')",
        "SNOWPLOW_SPARK_SHUFFLE_PARTITIONS: Input should be greater than or equal to 1 (it is '0')",
    ]


def test_the_driver_memory_is_a_size_the_jvm_takes_and_the_remote_a_spark_connect_url(monkeypatch):
    for memory in ("1gb", "1024", "lots", "1.5g"):
        monkeypatch.setenv("SNOWPLOW_SPARK_DRIVER_MEMORY", memory)
        with pytest.raises(
            InvalidSettings,
            match=re.escape(
                f"SNOWPLOW_SPARK_DRIVER_MEMORY: a size with a unit, as the JVM's -Xmx takes it: 512m, 1g, 4G (it is '{memory}')"
            ),
        ):
            Settings()
    for memory in ("512m", "4G", "2048M", "1t"):
        monkeypatch.setenv("SNOWPLOW_SPARK_DRIVER_MEMORY", memory)
        assert Settings().spark_config["spark.driver.memory"] == memory
    monkeypatch.setenv("SNOWPLOW_SPARK_REMOTE", "localhost:15002")
    with pytest.raises(InvalidSettings, match="SNOWPLOW_SPARK_REMOTE: a Spark Connect URL, sc://host:port"):
        Settings()
    monkeypatch.setenv("SNOWPLOW_SPARK_REMOTE", "sc://localhost:15002/;token=abc")
    assert Settings().spark_config["spark.remote"] == "sc://localhost:15002/;token=abc"
    monkeypatch.setenv("SNOWPLOW_SPARK_REMOTE", "")
    assert Settings().spark_remote is None and "spark.remote" not in Settings().spark_config


def test_an_iglu_resolver_config_is_checked_when_read_and_named_by_its_variable(monkeypatch, tmp_path):
    """A config that is not one stops the settings, as a command or `dagster dev` reads them, rather than the
    first shred; a relative path is made absolute, as the run's working folder may differ."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("SNOWPLOW_IGLU_RESOLVER", "resolver.json")
    with pytest.raises(InvalidSettings, match=r"SNOWPLOW_IGLU_RESOLVER: cannot read the Iglu resolver config .*"):
        Settings()
    (tmp_path / "resolver.json").write_text('{"schema": "iglu:com.acme/x/jsonschema/1-0-0", "data": {}}')
    with pytest.raises(InvalidSettings, match=r"SNOWPLOW_IGLU_RESOLVER: the Iglu resolver config .* is not one"):
        Settings()
    (tmp_path / "resolver.json").write_text(
        '{"schema": "iglu:com.snowplowanalytics.iglu/resolver-config/jsonschema/1-0-3", "data": {"repositories": '
        '[{"name": "Local", "priority": 0, "vendorPrefixes": [], "connection": {"embedded": {"path": "iglu"}}}]}}'
    )
    with pytest.raises(InvalidSettings, match="the embedded repository 'Local' has no folder"):
        Settings()
    (tmp_path / "iglu").mkdir()
    assert Settings().iglu_resolver == str(tmp_path / "resolver.json")
    monkeypatch.setenv("SNOWPLOW_IGLU_RESOLVER", "")
    assert Settings().iglu_resolver is None


@pytest.mark.parametrize(
    "master", ["local", "local[2]", "local[*]", "local[4,3]", "yarn", "spark://h:7077", "k8s://https://h"]
)
def test_every_form_of_spark_master_is_taken(monkeypatch, master):
    monkeypatch.setenv("SNOWPLOW_SPARK_MASTER", master)
    assert Settings().spark_config["spark.master"] == master
