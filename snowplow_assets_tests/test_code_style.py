"""The code passes the project's lint rules (pyproject.toml [tool.ruff]): no unused or undefined names."""

import subprocess
import sys

from snowplow_assets.settings import PROJECT_ROOT


def test_ruff_finds_nothing():
    done = subprocess.run(
        [sys.executable, "-m", "ruff", "check", "--output-format", "concise", "snowplow_assets", "snowplow_assets_tests", "benchmarks"],
        cwd=PROJECT_ROOT,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stdout + done.stderr
