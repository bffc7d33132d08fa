"""The project's Dagster instance, as `dagster dev` run from the project root sees it."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import yaml
from dagster import DagsterInstance
from dagster._core.instance.ref import InstanceRef
from dotenv import dotenv_values

from snowplow_assets.settings import PROJECT_ROOT


def _absolute_base_dirs(config: Any, root: Path) -> Any:
    """The config with every relative `base_dir` made absolute against `root`."""
    if isinstance(config, dict):
        return {
            key: str(root / value)
            if key == "base_dir" and isinstance(value, str) and not os.path.isabs(value)
            else _absolute_base_dirs(value, root)
            for key, value in config.items()
        }
    if isinstance(config, list):
        return [_absolute_base_dirs(item, root) for item in config]
    return config


def remember_project_instance(root: Path) -> None:
    """Point `dagster dev` started in `root` at the project's instance, through `root`/.env.

    `dagster dev` uses $DAGSTER_HOME's instance and, when that is unset, a throwaway one; before deciding
    it loads the `.env` file of its working directory. DAGSTER_HOME must be absolute, so it cannot be
    committed: the CLI writes it on first use (the quick start's `demo`), and a DAGSTER_HOME already in
    `.env` is left alone.
    """
    env_file = root / ".env"
    if env_file.exists() and dotenv_values(env_file).get("DAGSTER_HOME"):
        return
    existing = env_file.read_text() if env_file.exists() else ""
    separator = "" if not existing or existing.endswith("\n") else "\n"
    env_file.write_text(f"{existing}{separator}DAGSTER_HOME={root.resolve()}\n")


@contextmanager
def project_instance(root: Path = PROJECT_ROOT) -> Iterator[DagsterInstance]:
    """$DAGSTER_HOME's instance if it is set; otherwise the one configured by `root`/dagster.yaml.

    dagster.yaml holds paths relative to the project root (so `dagster dev` started there finds its
    history); here they are made absolute, so the CLI works from any directory.
    """
    if os.getenv("DAGSTER_HOME"):
        with DagsterInstance.get() as instance:
            yield instance
        return
    remember_project_instance(root)
    config = yaml.safe_load((root / "dagster.yaml").read_text()) or {}
    overrides = {k: v for k, v in _absolute_base_dirs(config, root).items() if v != config[k]}
    home = root / ".dagster"
    home.mkdir(exist_ok=True)
    with DagsterInstance.from_ref(
        InstanceRef.from_dir(str(home), config_dir=str(root), overrides=overrides)
    ) as instance:
        yield instance
