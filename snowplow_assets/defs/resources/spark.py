"""The Spark resource: a run's SparkSession, started when a step first needs it and closed with the run."""

from __future__ import annotations

from contextlib import ExitStack
from pathlib import Path

import dagster as dg
from dagster_pyspark import LazyPySparkResource
from pydantic import PrivateAttr

from snowplow_assets.settings import Settings
from snowplow_assets.shared_spark_server import DEFAULT_IDLE_MINUTES, SharedServer
from snowplow_assets.spark import spark_session


class SparkResource(LazyPySparkResource):
    """Dagster's lazy PySpark resource, with `spark_config` the project's settings (spark.py adds what is fixed),
    on the shared Spark Connect server when `shared_server_folder` is set (shared_spark_server.py).

    A run holds its lease on the shared server from its first Spark step to its end, so the server stops
    only once no run has used it for `shared_server_idle_seconds`.
    """

    shared_server_folder: str | None = None
    shared_server_idle_seconds: float = DEFAULT_IDLE_MINUTES * 60.0
    _session_scope: ExitStack | None = PrivateAttr(default=None)

    @classmethod
    def _is_dagster_maintained(cls) -> bool:
        return False

    @classmethod
    def from_settings(cls, settings: Settings) -> SparkResource:
        shared = settings.shared_spark_server
        return cls(
            spark_config=settings.spark_config,
            shared_server_folder=str(shared.root) if shared else None,
            **({"shared_server_idle_seconds": shared.idle_seconds} if shared else {}),
        )

    @property
    def shared_server(self) -> SharedServer | None:
        if self.shared_server_folder is None:
            return None
        return SharedServer(Path(self.shared_server_folder), self.shared_server_idle_seconds)

    def _init_session(self) -> None:
        if self._spark_session is None:
            self._session_scope = ExitStack()
            session = spark_session(self.spark_config, self.shared_server)
            self._spark_session = self._session_scope.enter_context(session)

    def teardown_after_execution(self, context: dg.InitResourceContext) -> None:
        if self._session_scope is not None:
            self._session_scope.close()
            self._session_scope, self._spark_session = None, None
