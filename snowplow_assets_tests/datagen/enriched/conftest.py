from __future__ import annotations

from pathlib import Path

import pytest

from snowplow_assets.datagen.enriched import GenerationOptions, GenerationStats, generate_run_folder

# 900 events: 18 natural and 9 synthetic duplicates, and 9 bad lines, one of each kind
OPTIONS = GenerationOptions(events=900, files=3, seed=11)


@pytest.fixture(scope="package")
def run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, GenerationStats]:
    """One run folder that the tests of every generator module read (generated once for the package)."""
    folder = tmp_path_factory.mktemp("lake") / "run=2026-03-01-10-00-00"
    return folder, generate_run_folder(folder, OPTIONS)
