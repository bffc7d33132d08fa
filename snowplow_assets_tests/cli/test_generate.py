"""`snowplow-assets generate enriched` on a temporary lake."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest
from click.testing import CliRunner

from snowplow_assets.cli.generate import generate
from snowplow_assets.datagen.enriched import GenerationOptions, generate_run_folder


def _invoke(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(generate, ["enriched", *args])
    return result.exit_code, result.output


def test_writes_consecutive_run_folders_an_hour_apart(tmp_path: Path) -> None:
    code, output = _invoke(
        "--lake", str(tmp_path), "--runs", "3", "--events", "200", "--start", "2026-03-01T10:00:00"
    )  # fmt: skip
    assert code == 0, output
    folders = sorted((tmp_path / "enriched").iterdir())
    assert [f.name for f in folders] == [
        "run=2026-03-01-10-00-00",
        "run=2026-03-01-11-00-00",
        "run=2026-03-01-12-00-00",
    ]
    for folder in folders:
        assert (folder / "_SUCCESS").exists()
        assert str(folder) in output
    stats = "208 lines in 2 files: 200 events, 4 natural duplicates, 2 synthetic duplicates, 2 bad lines"
    assert output.count(stats) == 3


def test_each_run_folder_uses_the_next_seed(tmp_path: Path) -> None:
    code, output = _invoke(
        "--lake", str(tmp_path / "lake"), "--runs", "2", "--events", "100", "--seed", "7", "--files", "1"
    )  # fmt: skip
    assert code == 0, output
    second = tmp_path / "lake" / "enriched" / "run=2026-03-01-11-00-00" / "part-00000"
    expected = generate_run_folder(
        tmp_path / "expected",
        GenerationOptions(events=100, seed=8, files=1, start=datetime(2026, 3, 1, 11, tzinfo=UTC)),
    )
    assert second.read_bytes() == expected.files[0].read_bytes()


def test_passes_the_options_through(tmp_path: Path) -> None:
    code, output = _invoke(
        "--lake", str(tmp_path), "--events", "300", "--natural-duplicate-rate", "0.1",
        "--synthetic-duplicate-rate", "0", "--bad-line-rate", "0.03", "--files", "3", "--gzip",
        "--start", "2026-05-04T03:02:01+02:00",
    )  # fmt: skip
    assert code == 0, output
    folder = tmp_path / "enriched" / "run=2026-05-04-01-02-01"
    assert sorted(p.name for p in folder.iterdir()) == ["_SUCCESS", "part-00000.gz", "part-00001.gz", "part-00002.gz"]
    assert "339 lines in 3 files: 300 events, 30 natural duplicates, 0 synthetic duplicates, 9 bad lines" in output
    assert "not_tsv 1" in output


def test_defaults_to_the_lake_setting(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SNOWPLOW_LAKE", str(tmp_path / "configured"))
    code, output = _invoke("--events", "50")
    assert code == 0, output
    assert (tmp_path / "configured" / "enriched" / "run=2026-03-01-10-00-00" / "_SUCCESS").exists()


def test_refuses_to_overwrite_a_run_folder(tmp_path: Path) -> None:
    existing = tmp_path / "enriched" / "run=2026-03-01-11-00-00"
    existing.mkdir(parents=True)
    code, output = _invoke("--lake", str(tmp_path), "--runs", "2", "--events", "50")
    assert code == 2
    assert "already exists" in output and str(existing) in output
    assert sorted(p.name for p in (tmp_path / "enriched").iterdir()) == ["run=2026-03-01-11-00-00"]
    assert list(existing.iterdir()) == []


def test_refuses_a_remote_lake(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SNOWPLOW_LAKE", "s3://bucket/lake")
    code, output = _invoke("--events", "50")
    assert code == 2
    assert "s3://bucket/lake" in output


@pytest.mark.parametrize(
    "args", [["--start", "yesterday"], ["--events", "-1"], ["--bad-line-rate", "2"], ["--files", "0"]]
)
def test_rejects_bad_options(tmp_path: Path, args: list[str]) -> None:
    code, _ = _invoke("--lake", str(tmp_path), *args)
    assert code == 2
    assert not (tmp_path / "enriched").exists()
