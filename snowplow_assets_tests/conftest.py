"""Shared fixtures: one real local[2] SparkSession for the whole test session, and temporary lakes."""

from __future__ import annotations

import gzip
import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from snowplow_assets.lake import Lake
from snowplow_assets.spark import build_spark_session
from snowplow_assets.storage import LocalFileSystem

TEST_SPARK_CONFIG = {
    "spark.master": "local[2]",
    "spark.driver.memory": "1g",
    "spark.sql.shuffle.partitions": "2",
    "spark.default.parallelism": "2",
    "spark.ui.enabled": "false",
}


@pytest.fixture(scope="session", autouse=True)
def _isolated_environment() -> Iterator[None]:
    """Tests never touch the developer's lake or Dagster instance."""
    saved = {k: os.environ.pop(k) for k in list(os.environ) if k.startswith("SNOWPLOW_") or k == "DAGSTER_HOME"}
    yield
    os.environ.update(saved)


@pytest.fixture(scope="session")
def spark() -> SparkSession:
    return build_spark_session(TEST_SPARK_CONFIG, app_name="snowplow-assets-tests")


@pytest.fixture
def lake(tmp_path: Path) -> Lake:
    return Lake(str(tmp_path / "lake"))


@pytest.fixture
def fs() -> LocalFileSystem:
    return LocalFileSystem()


def write_run_folder(lake: Lake, run: str, lines: list[str], *, name: str = "part-00000", compress: bool = False,
                     success_marker: bool = True) -> Path:
    folder = Path(lake.enriched_run(run))
    folder.mkdir(parents=True, exist_ok=True)
    text = "".join(line + "\n" for line in lines).encode("utf-8")
    if compress:
        (folder / f"{name}.gz").write_bytes(gzip.compress(text))
    else:
        (folder / name).write_bytes(text)
    if success_marker:
        (folder / "_SUCCESS").touch()
    return folder


def read_lines(folder: str | Path) -> list[str]:
    """Every line of the non-hidden part files below a folder, sorted."""
    lines: list[str] = []
    for path in sorted(Path(folder).rglob("part-*")):
        opener = gzip.open if path.suffix == ".gz" else open
        with opener(path, "rt", encoding="utf-8") as f:  # type: ignore[operator]
            lines.extend(line.rstrip("\n") for line in f)
    return sorted(lines)
