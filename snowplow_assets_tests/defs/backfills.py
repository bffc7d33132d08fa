"""The project's code location as Dagster's daemons load it, and backfills launched as the UI launches them."""

from collections.abc import Iterator, Sequence
from contextlib import contextmanager

import dagster as dg
from dagster._core.remote_origin import InProcessCodeLocationOrigin
from dagster._core.test_utils import create_test_daemon_workspace_context
from dagster._core.types.loadable_target_origin import LoadableTargetOrigin
from dagster._core.workspace.context import WorkspaceProcessContext
from dagster._core.workspace.load_target import InProcessWorkspaceLoadTarget
from dagster_graphql.test.utils import execute_dagster_graphql

from snowplow_assets.settings import PROJECT_ROOT

LOCATION = "snowplow_assets"
SHRED_ASSETS = ["enriched_batch", "atomic_events", "shredded_types", "event_manifest"]

# What the UI sends when a user selects assets and partitions and clicks "Launch backfill".
LAUNCH_BACKFILL = """
mutation($params: LaunchBackfillParams!) {
  launchPartitionBackfill(backfillParams: $params) {
    __typename
    ... on LaunchBackfillSuccess { backfillId }
    ... on PythonError { message stack }
  }
}
"""


@contextmanager
def project_workspace(instance: dg.DagsterInstance) -> Iterator[WorkspaceProcessContext]:
    """The project's code location (resources from the SNOWPLOW_* settings of the moment), loaded in process."""
    origin = InProcessCodeLocationOrigin(
        LoadableTargetOrigin(
            module_name="snowplow_assets.definitions", attribute="defs", working_directory=str(PROJECT_ROOT)
        ),
        location_name=LOCATION,
    )
    with create_test_daemon_workspace_context(InProcessWorkspaceLoadTarget([origin]), instance) as workspace:
        yield workspace


def launch_backfill(workspace: WorkspaceProcessContext, assets: Sequence[str], partitions: Sequence[str]) -> str:
    """Launch a backfill of `assets` over `partitions` through the UI's GraphQL API; return its id."""
    params = {"partitionNames": list(partitions), "assetSelection": [{"path": [key]} for key in assets]}
    result = execute_dagster_graphql(workspace.create_request_context(), LAUNCH_BACKFILL, {"params": params})
    launched = result.data["launchPartitionBackfill"]
    assert launched["__typename"] == "LaunchBackfillSuccess", launched
    return launched["backfillId"]
