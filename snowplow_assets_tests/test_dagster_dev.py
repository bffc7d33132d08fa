"""`dagster dev` in the project root: the code location loads cleanly, on the instance dagster.yaml configures."""

import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

import pytest

from snowplow_assets.cli.instance import project_instance
from snowplow_assets.settings import PROJECT_ROOT
from snowplow_assets_tests.conftest import GLOB_CHARACTERS_FOLDER

QUERY = """
{
  workspaceOrError { ... on Workspace { locationEntries { name locationOrLoadError {
      ... on RepositoryLocation { name repositories { name sensors { name } } }
      ... on PythonError { message } } } } }
  assetNodes { assetKey { path } isPartitioned partitionKeys hasAssetChecks }
}
"""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def graphql(port: int, query: str) -> dict:
    request = urllib.request.Request(
        f"http://127.0.0.1:{port}/graphql",
        data=json.dumps({"query": query}).encode(),
        headers={"Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=10) as response:
        return json.loads(response.read())["data"]


@pytest.fixture
def project_copy(tmp_path) -> Path:
    """The project's dagster.yaml and workspace.yaml in a scratch root, so the test's instance is its own."""
    for name in ("dagster.yaml", "workspace.yaml"):
        shutil.copy(PROJECT_ROOT / name, tmp_path / name)
    return tmp_path


def test_dagster_dev_loads_the_code_location_on_the_project_instance(project_copy, tmp_path):
    run = "run=2026-03-01-10-00-00"
    with project_instance(root=project_copy) as instance:  # what the CLI sees
        instance.add_dynamic_partitions("enriched_runs", [run])

    port = free_port()
    env = {k: v for k, v in os.environ.items() if k != "DAGSTER_HOME"}
    env["SNOWPLOW_LAKE"] = str(tmp_path / "lake")
    # Dagster 1.13's code servers do not start with their sockets in a folder whose name holds a space, as the
    # tests' temporary folder's does (conftest.py): its parent is a plain one.
    temporary = Path(tempfile.gettempdir())
    env["TMPDIR"] = str(temporary.parent if temporary.name == GLOB_CHARACTERS_FOLDER else temporary)
    dagster = str(Path(sys.executable).parent / "dagster")
    log = tmp_path / "dagster-dev.log"
    with log.open("w") as output:
        process = subprocess.Popen(
            [dagster, "dev", "-p", str(port)], cwd=project_copy, env=env, stdout=output, stderr=subprocess.STDOUT
        )
    try:
        data = None
        deadline = time.time() + 240
        while time.time() < deadline:
            try:
                data = graphql(port, QUERY)
                entries = data["workspaceOrError"]["locationEntries"]
                if entries and entries[0]["locationOrLoadError"]:
                    break
            except OSError:
                pass
            time.sleep(2)
        assert data is not None, log.read_text()
    finally:
        process.terminate()
        process.wait(timeout=60)

    [entry] = data["workspaceOrError"]["locationEntries"]
    location = entry["locationOrLoadError"]
    assert entry["name"] == "snowplow_assets" and "repositories" in location, location
    sensors = {s["name"] for repo in location["repositories"] for s in repo["sensors"]}
    assert "enriched_run_folders" in sensors
    nodes = {"/".join(n["assetKey"]["path"]): n for n in data["assetNodes"]}
    for key in ("enriched_batch", "atomic_events", "shredded_types"):
        assert nodes[key]["isPartitioned"] and nodes[key]["partitionKeys"] == [run], nodes[key]
    assert nodes["atomic_events"]["hasAssetChecks"] and nodes["shredded_types"]["hasAssetChecks"]

    text = log.read_text()
    assert "location_name" not in text and "code location name" not in text.lower(), text
    # The instance is the persistent one dagster.yaml configures, shared with the CLI, not a temporary one.
    assert (project_copy / ".dagster" / "storage").is_dir()
    assert not list(project_copy.glob(".tmp_dagster_home_*"))
