"""The code passes the project's lint rules and is laid out as `ruff format` lays it out (pyproject.toml [tool.ruff])."""

import subprocess
import sys

import pytest

from snowplow_assets.settings import PROJECT_ROOT

CHECKED = ["snowplow_assets", "snowplow_assets_tests", "benchmarks"]


@pytest.mark.parametrize(
    "command",
    [["check", "--output-format", "concise"], ["format", "--check"]],
    ids=["lint", "format"],
)
def test_ruff_finds_nothing(command):
    done = subprocess.run(
        [sys.executable, "-m", "ruff", *command, *CHECKED], cwd=PROJECT_ROOT, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stdout + done.stderr
