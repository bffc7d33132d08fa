"""Every setting of the project, read from `SNOWPLOW_*` environment variables (and a `.env` file).

Dagster resources are built from one `Settings()` at load time, so `dagster dev`, the CLI and the tests
see the same values. Relative paths are resolved against the directory the process starts in.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import Field, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

PROJECT_ROOT = Path(__file__).resolve().parents[1]
DEFAULT_LAKE = PROJECT_ROOT / "lake"


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="SNOWPLOW_", env_file=".env", extra="ignore")

    lake: str = Field(
        default=str(DEFAULT_LAKE),
        description="Lake root: a local folder or an s3://bucket/prefix URI.",
    )

    # Spark
    spark_master: str = Field(default="local[*]", description="Spark master URL.")
    spark_driver_memory: str = Field(default="2g", description="spark.driver.memory")
    spark_executor_memory: str | None = Field(default=None, description="spark.executor.memory on a cluster.")
    spark_shuffle_partitions: int = Field(default=8, ge=1, description="spark.sql.shuffle.partitions")
    spark_conf: dict[str, str] = Field(
        default_factory=dict, description="Extra Spark configuration, as a JSON object of key to value."
    )

    # Shredding and in-batch deduplication (FORMATS.md §5)
    dedup_natural: bool = Field(default=True, description="Remove in-batch natural duplicates.")
    dedup_synthetic: bool = Field(default=True, description="Rename in-batch synthetic duplicates.")
    output_compression: Literal["NONE", "GZIP"] = Field(default="NONE", description="Compression of shredded output.")

    # Run-folder discovery
    ready_after_seconds: int = Field(
        default=120,
        ge=0,
        description="A run folder without a _SUCCESS marker is ready once nothing in it changed for this long.",
    )
    sensor_chunk_size: int = Field(default=100, ge=1, description="Most run folders a sensor tick registers.")

    @model_validator(mode="after")
    def _synthetic_needs_natural(self) -> Settings:
        if self.dedup_synthetic and not self.dedup_natural:
            raise ValueError(
                "SNOWPLOW_DEDUP_SYNTHETIC=true needs SNOWPLOW_DEDUP_NATURAL=true: synthetic deduplication "
                "renames events that still share an id after natural duplicates are removed (FORMATS.md §5)"
            )
        return self

    @model_validator(mode="after")
    def _absolute_lake(self) -> Settings:
        if "://" not in self.lake:
            self.lake = str(Path(self.lake).expanduser().resolve())
        return self

    @property
    def spark_config(self) -> dict[str, str]:
        config = {
            "spark.master": self.spark_master,
            "spark.driver.memory": self.spark_driver_memory,
            "spark.sql.shuffle.partitions": str(self.spark_shuffle_partitions),
        }
        if self.spark_executor_memory:
            config["spark.executor.memory"] = self.spark_executor_memory
        config.update(self.spark_conf)
        return config
