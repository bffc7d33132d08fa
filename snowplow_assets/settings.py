"""Every setting of the project, read from `SNOWPLOW_*` environment variables (and a `.env` file).

Dagster resources are built from one `Settings()` at load time, so `dagster dev`, the CLI and the tests
see the same values. Relative paths are resolved against the directory the process starts in.
"""

from __future__ import annotations

import os
import re
from datetime import date
from pathlib import Path
from typing import Literal

from pydantic import Field, ValidationError, field_validator, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict, SettingsError

from snowplow_assets.events.iglu_resolver import IgluResolver
from snowplow_assets.jvm.driver_options import DEFAULT_DRIVER_JAVA_OPTIONS
from snowplow_assets.shared_spark_server import DEFAULT_IDLE_MINUTES, SharedServer, default_shared_server_root
from snowplow_assets.storage.s3 import spark_s3_config
from snowplow_assets.web.variables import WebVariables, parse_models

PROJECT_ROOT = Path(__file__).resolve().parents[1]
DEFAULT_LAKE = PROJECT_ROOT / "lake"
DEFAULT_CDC_MODELS = Path(__file__).resolve().parent / "cdc" / "models.yaml"

# A lake root that begins with a URI scheme (two characters or more, then ":/") must be an s3:// URI with a bucket:
# a mistyped one (s3:/bucket, s3a://bucket, gs://bucket) would otherwise be taken for a local folder of that
# name, and the sensors would find nothing in it.
_URI_LIKE = re.compile(r"[A-Za-z][A-Za-z0-9+.-]+:/")
_S3_LAKE = re.compile(r"s3://[^/]+(/.*)?")
# Spark starts a local driver's JVM with -Xmx<spark.driver.memory> as written, and the JVM reads a number
# without a unit as bytes and knows no "gb": "1024" and "1gb" stop the JVM before Spark can say why.
_JVM_MEMORY = re.compile(r"\d+[kmgt]", re.IGNORECASE)
_SPARK_MASTER = re.compile(
    r"local(\[(\*|[1-9][0-9]*)(,[0-9]+)?\])?|local-cluster\[[0-9]+, *[0-9]+, *[0-9]+\]|yarn|spark://\S+|k8s://\S+"
)


class InvalidSettings(ValueError):
    """Settings the environment got wrong: a line per setting, named by its variable, so that a command and
    `dagster dev`'s load error say what to fix rather than which field of a pydantic model failed."""


def _checked_lake(lake: str) -> str:
    if _URI_LIKE.match(lake) and not _S3_LAKE.fullmatch(lake):
        raise ValueError("the lake is a local folder or an s3://bucket/prefix URI")
    return lake


def lake_root(lake: str, resolve_links: bool = True) -> str:
    """`lake` as SNOWPLOW_LAKE is read: an s3:// URI without empty segments, or an absolute folder, its symbolic
    links resolved unless `resolve_links` is False (a spelling recorded before a move, say)."""
    _checked_lake(lake)
    if not lake.startswith("s3://"):
        folder = Path(lake).expanduser()
        return str(folder.resolve() if resolve_links else Path(os.path.abspath(folder)))
    # `s3://bucket//lake` and `s3://bucket/lake/` are `s3://bucket/lake`: listings name keys without empty
    # segments, and paths below a root that kept one were cut a character off, so that `_SUCCESS` and a
    # writer's `_temporary/` read as data (until 2026-11-28). Hadoop's s3a drops them as well.
    bucket, _, prefix = lake.removeprefix("s3://").partition("/")
    segments = [segment for segment in prefix.split("/") if segment]
    if {".", ".."} & set(segments):
        # boto3 takes them as key characters and Hadoop resolves them away: two places for one lake.
        raise ValueError(f"an s3:// lake's prefix has no '.' or '..' segments: {lake!r}")
    return "/".join(["s3:/", bucket, *segments])


class Settings(BaseSettings):
    # The working folder's .env, as `dagster dev` reads it. Not also the project's from other folders: its
    # relative paths (a lake, the models file) would then mean another place in every folder.
    model_config = SettingsConfigDict(env_prefix="SNOWPLOW_", env_file=".env", extra="ignore")

    lake: str = Field(
        default=str(DEFAULT_LAKE),
        description="Lake root: a local folder or an s3://bucket/prefix URI.",
    )

    # Spark
    spark_master: str = Field(default="local[*]", description="Spark master URL.")
    spark_remote: str | None = Field(
        default=None,
        description="Spark Connect URL (sc://host:port, with /;token=... unless SPARK_CONNECT_AUTHENTICATE_TOKEN "
        "holds the server's token) of a server to run on instead of the shared server or a JVM of the run's own, such as "
        "`snowplow-assets spark-server` starts; the settings of the JVM are then the server's.",
    )
    spark_server: Literal["shared", "own"] = Field(
        default="shared",
        description="Where a run's Spark runs when SNOWPLOW_SPARK_REMOTE is unset: `shared`, a Spark Connect server "
        "that runs with the same settings share, started by the first that needs it and stopped once idle "
        "(snowplow_assets/shared_spark_server.py); `own`, a JVM that each run starts and stops.",
    )
    spark_server_idle_minutes: float = Field(
        default=DEFAULT_IDLE_MINUTES, gt=0, description="Minutes without a run after which the shared server stops."
    )
    spark_server_folder: Path = Field(
        default_factory=default_shared_server_root,
        description="Folder of the shared servers' addresses, tokens and logs (XDG_RUNTIME_DIR/snowplow-assets/"
        "spark-servers, else ~/.cache/snowplow-assets/spark-servers).",
    )
    # Spark's own default. The shred job's memory is bounded by Spark's memory manager, not by the batch: at
    # 1,000,000 events it ran as fast in 1 GB as in 2 GB, and a 2 GB heap only filled up lazily (README,
    # Performance, Memory).
    spark_driver_memory: str = Field(default="1g", description="spark.driver.memory")
    spark_executor_memory: str | None = Field(default=None, description="spark.executor.memory on a cluster.")
    spark_shuffle_partitions: int = Field(default=8, ge=1, description="spark.sql.shuffle.partitions")
    spark_java_options: str = Field(
        default=DEFAULT_DRIVER_JAVA_OPTIONS,
        description="JVM options of the Spark driver (spark.driver.extraJavaOptions), which runs every task on a "
        "local master; the default makes a new JVM compile less, and the shred job faster there "
        "(snowplow_assets/jvm/driver_options.py).",
    )
    spark_conf: dict[str, str] = Field(
        default_factory=dict, description="Extra Spark configuration, as a JSON object of key to value."
    )

    # Shredding and in-batch deduplication (FORMATS.md §5)
    dedup_natural: bool = Field(default=True, description="Remove in-batch natural duplicates.")
    dedup_synthetic: bool = Field(default=True, description="Rename in-batch synthetic duplicates.")
    output_compression: Literal["NONE", "GZIP"] = Field(default="NONE", description="Compression of shredded output.")

    # Cross-batch deduplication: the event manifest (FORMATS.md §5; snowplow_assets/manifest/)
    event_manifest: Literal["none", "lake", "dynamodb"] = Field(
        default="lake",
        description="Event manifest backend for cross-batch deduplication: none, lake (Parquet in the lake) or "
        "dynamodb. Left at its default, it becomes none when SNOWPLOW_DEDUP_NATURAL=false.",
    )
    event_manifest_ttl_days: int = Field(
        default=180,
        ge=1,
        description="Days after a batch's etlTime, or its run folder's time when later, until its manifest "
        "entries expire.",
    )
    cross_batch_synthetic: bool = Field(
        default=True,
        description="Rename events whose event_id an earlier batch recorded with another fingerprint. Left at its "
        "default, it becomes false when SNOWPLOW_DEDUP_SYNTHETIC=false.",
    )
    event_manifest_dynamodb_table: str | None = Field(default=None, description="DynamoDB table of the manifest.")
    event_manifest_dynamodb_region: str | None = Field(default=None, description="AWS region of that table.")
    event_manifest_dynamodb_endpoint_url: str | None = Field(
        default=None, description="DynamoDB endpoint URL, for a local stack (e.g. http://localhost:4566)."
    )

    iglu_resolver: str | None = Field(
        default=None,
        description="An Iglu resolver config (JSON, FORMATS.md §2): events whose schemas none of its registries "
        "holds become loader_iglu_error bad rows. Unset, every schema that matches the Iglu URI pattern is shredded.",
    )

    # Run-folder discovery
    ready_after_seconds: int = Field(
        default=120,
        ge=0,
        description="A run folder without a _SUCCESS marker is ready once nothing in it changed for this long.",
    )
    sensor_chunk_size: int = Field(
        default=100,
        ge=1,
        description="Most run folders a sensor tick registers, and most waiting registered items it requests runs for.",
    )
    sensor_full_list_every: int = Field(
        default=20,
        ge=1,
        description="Every this many ticks a folder sensor lists its whole prefix instead of only what sorts after "
        "its cursor, to find late folders whose names sort before it.",
    )

    # S3 (snowplow_assets/storage/s3.py): the lake, sensors and Spark; endpoint and region for local stacks
    s3_endpoint_url: str | None = Field(
        default=None, description="S3 endpoint URL, for a local stack (e.g. http://localhost:4566); unset for AWS."
    )
    s3_region: str | None = Field(default=None, description="AWS region of the lake bucket.")
    s3_scheme: Literal["s3a", "s3"] = Field(
        default="s3a",
        description="Scheme Spark reads an s3:// lake with: s3a (Hadoop's S3A, needs hadoop-aws) or s3 (EMRFS on EMR).",
    )

    # Incremental web models (FORMATS.md §8; dbt-snowplow-web's snowplow__* variables)
    web_models: str = Field(
        default="sessions_lifecycle,quarantined_sessions,page_views,sessions,users",
        description="Enabled web models, comma-separated (empty: none); a model needs the models whose tables it reads.",
    )
    web_start_date: date = Field(default=date(2020, 1, 1), description="Earliest day of events the web models process.")
    web_backfill_limit_days: int = Field(default=30, ge=1, description="Most days of events one run processes.")
    web_lookback_window_hours: int = Field(default=6, ge=0, description="Hours before last_success a run re-reads.")
    web_days_late_allowed: int = Field(
        default=3, ge=0, description="Events sent more than this many days after they were created are dropped."
    )
    web_max_session_days: int = Field(default=3, ge=1, description="Longer sessions are capped and quarantined.")
    web_session_lookback_days: int = Field(
        default=730, ge=1, description="How far back a run looks for the start of a session it has seen before."
    )
    web_upsert_lookback_days: int = Field(
        default=30, ge=0, description="Days before the earliest updated row whose table partitions an upsert rewrites."
    )
    web_heartbeat: int = Field(default=10, ge=1, description="Page ping interval of the trackers, in seconds.")
    web_min_visit_length: int = Field(default=5, ge=0, description="Seconds before the first page ping.")

    # CDC consolidation (snowplow_assets/cdc/; README "CDC consolidation")
    cdc_models: str = Field(
        default=str(DEFAULT_CDC_MODELS),
        description="YAML file declaring the CDC domain models: their topics, contracts and column tests.",
    )
    cdc_batch_cron: str = Field(
        default="*/30 * * * *", description="Cron schedule (UTC) on which cdc_batches cuts a batch of every model."
    )
    cdc_batch_retention_hours: float = Field(
        default=24,
        ge=0,
        description="Batches cut longer ago than this are removed; the newest batch of each model is always kept.",
    )

    def __init__(self, **values: object) -> None:
        try:
            super().__init__(**values)
        except (ValidationError, SettingsError) as error:
            raise InvalidSettings(_describe(error)) from None

    @model_validator(mode="after")
    def _absolute_cdc_models(self) -> Settings:
        self.cdc_models = str(Path(self.cdc_models).expanduser().resolve())
        return self

    @model_validator(mode="after")
    def _cross_batch_needs_in_batch(self) -> Settings:
        """Cross-batch dedup presupposes the in-batch kind (FORMATS.md §5); a default yields, a choice errs."""
        chosen = self.model_fields_set
        if not self.dedup_natural and self.event_manifest != "none":
            if "event_manifest" in chosen:
                raise ValueError(
                    f"SNOWPLOW_EVENT_MANIFEST={self.event_manifest} needs SNOWPLOW_DEDUP_NATURAL=true: cross-batch "
                    "deduplication checks the events that in-batch natural deduplication keeps"
                )
            self.event_manifest = "none"
        if not self.dedup_synthetic and self.cross_batch_synthetic and self.event_manifest != "none":
            if "cross_batch_synthetic" in chosen:
                raise ValueError(
                    "SNOWPLOW_CROSS_BATCH_SYNTHETIC=true needs SNOWPLOW_DEDUP_SYNTHETIC=true: an id shared within "
                    "a batch would otherwise stay shared while ids shared across batches are renamed"
                )
            self.cross_batch_synthetic = False
        if self.event_manifest == "dynamodb" and not (
            self.event_manifest_dynamodb_table and self.event_manifest_dynamodb_region
        ):
            raise ValueError(
                "SNOWPLOW_EVENT_MANIFEST=dynamodb needs SNOWPLOW_EVENT_MANIFEST_DYNAMODB_TABLE and "
                "SNOWPLOW_EVENT_MANIFEST_DYNAMODB_REGION"
            )
        return self

    @model_validator(mode="after")
    def _synthetic_needs_natural(self) -> Settings:
        """A default yields, a choice errs (as `_cross_batch_needs_in_batch`): SNOWPLOW_DEDUP_NATURAL=false alone
        was refused until 2026-11-28, while the event manifest's default gave way."""
        if self.dedup_synthetic and not self.dedup_natural and "dedup_synthetic" not in self.model_fields_set:
            self.dedup_synthetic = False
        if self.dedup_synthetic and not self.dedup_natural:
            raise ValueError(
                "SNOWPLOW_DEDUP_SYNTHETIC=true needs SNOWPLOW_DEDUP_NATURAL=true: synthetic deduplication "
                "renames events that still share an id after natural duplicates are removed (FORMATS.md §5)"
            )
        return self

    @field_validator("lake")
    @classmethod
    def _lake_is_a_folder_or_s3(cls, lake: str) -> str:
        return lake_root(lake) if lake.startswith("s3://") else _checked_lake(lake)

    @field_validator("spark_master")
    @classmethod
    def _master_is_sparks(cls, master: str) -> str:
        # Spark's own forms (SparkContext's master parsing); a wrong one failed every run, each leaving its item
        # Failed to resolve one by one, rather than the command (until 2026-11-28).
        if not _SPARK_MASTER.fullmatch(master):
            raise ValueError("a Spark master URL: local, local[4], local[*], yarn, spark://host:7077, k8s://…")
        return master

    @field_validator("spark_driver_memory")
    @classmethod
    def _driver_memory_is_a_jvm_size(cls, memory: str) -> str:
        if not _JVM_MEMORY.fullmatch(memory):
            raise ValueError("a size with a unit, as the JVM's -Xmx takes it: 512m, 1g, 4G")
        return memory

    @field_validator("spark_remote")
    @classmethod
    def _remote_is_spark_connect(cls, remote: str | None) -> str | None:
        if remote and not remote.startswith("sc://"):
            raise ValueError("a Spark Connect URL, sc://host:port")
        return remote or None  # set but empty, as an env file may leave it: unset

    @field_validator("web_models")
    @classmethod
    def _web_models_are_known_and_complete(cls, web_models: str) -> str:
        parse_models(web_models)
        return web_models

    @field_validator("s3_endpoint_url")
    @classmethod
    def _endpoint_is_a_url(cls, endpoint: str | None) -> str | None:
        if endpoint and not re.match(r"https?://[^/\s]", endpoint):
            raise ValueError("an http:// or https:// URL, e.g. http://localhost:4566")
        return endpoint or None

    @field_validator("cdc_batch_cron")
    @classmethod
    def _cron_is_valid(cls, cron: str) -> str:
        from dagster._utils.schedules import is_valid_cron_string  # the schedule's own rule, only when checked

        if not is_valid_cron_string(cron):
            raise ValueError("a cron schedule of five fields, e.g. */30 * * * *")
        return cron

    @model_validator(mode="after")
    def _web_variables_hold(self) -> Settings:
        """The web variables by WebVariables' own rules (upper bounds, one against another), named by their
        settings: until 2026-11-28 they failed when the definitions loaded, after `process` had registered."""
        try:
            WebVariables.from_settings(self)
        except ValueError as error:
            name, _, rest = str(error).partition(" ")
            raise ValueError(f"SNOWPLOW_WEB_{name.upper()} {rest}") from None
        return self

    @field_validator("iglu_resolver")
    @classmethod
    def _resolver_config_is_one(cls, path: str | None) -> str | None:
        if not path:
            return None
        # absolute(), not resolve(): a config that is a link (a mounted ConfigMap) keeps its own folder, from
        # which its relative embedded paths start.
        absolute = Path(path).expanduser().absolute()
        IgluResolver.from_file(absolute)  # its ValueError says what is wrong with the file
        return str(absolute)

    @model_validator(mode="after")
    def _absolute_lake(self) -> Settings:
        self.lake = lake_root(self.lake)
        return self

    @property
    def shared_spark_server(self) -> SharedServer | None:
        """The shared server that runs lease (spark.spark_session), unless they run on SNOWPLOW_SPARK_REMOTE's
        server or in a JVM of their own."""
        if self.spark_remote or self.spark_server == "own":
            return None
        return SharedServer(self.spark_server_folder.expanduser().resolve(), self.spark_server_idle_minutes * 60)

    @property
    def spark_config(self) -> dict[str, str]:
        config = {
            "spark.master": self.spark_master,
            "spark.driver.memory": self.spark_driver_memory,
            "spark.sql.shuffle.partitions": str(self.spark_shuffle_partitions),
        }
        if self.spark_executor_memory:
            config["spark.executor.memory"] = self.spark_executor_memory
        if self.spark_java_options:
            # Measured on local masters only: a cluster's executors keep their own JVM options (SNOWPLOW_SPARK_CONF).
            config["spark.driver.extraJavaOptions"] = self.spark_java_options
        if self.lake.startswith("s3://"):
            config.update(spark_s3_config(self.s3_scheme, self.s3_endpoint_url, self.s3_region))
        config.update(self.spark_conf)
        if self.spark_remote:
            config["spark.remote"] = self.spark_remote
        return config


def _describe(error: ValidationError | SettingsError) -> str:
    if isinstance(error, SettingsError):  # a value that should be JSON (SNOWPLOW_SPARK_CONF) and is not
        field = re.search(r'field "(\w+)"', str(error))
        name = f"SNOWPLOW_{field.group(1).upper()}" if field else "a setting"
        return f"{name}: not valid JSON ({error.__cause__ or error})"
    lines = []
    for problem in error.errors():
        message = problem["msg"].removeprefix("Value error, ")
        if problem["loc"]:
            message = f"SNOWPLOW_{str(problem['loc'][0]).upper()}: {message} (it is {problem['input']!r})"
        lines.append(message)
    return "\n".join(lines)
