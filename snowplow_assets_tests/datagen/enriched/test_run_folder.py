"""Writing a run folder: its name, its part files (plain or gzipped, the same for a seed), then `_SUCCESS`."""

from __future__ import annotations

import gzip
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

from snowplow_assets.datagen.enriched import (
    SUCCESS_MARKER,
    GenerationOptions,
    GenerationStats,
    generate_run_folder,
    run_folder_name,
)


def test_writes_the_part_files_and_then_the_success_marker(run: tuple[Path, GenerationStats]) -> None:
    folder, stats = run
    assert stats.files == [folder / f"part-{i:05d}" for i in range(3)]
    marker = folder / SUCCESS_MARKER
    assert marker.read_bytes() == b""
    assert all(marker.stat().st_mtime_ns >= part.stat().st_mtime_ns for part in stats.files)
    assert sorted(p.name for p in folder.iterdir()) == ["_SUCCESS", "part-00000", "part-00001", "part-00002"]


def test_spreads_lines_evenly_over_the_part_files(run: tuple[Path, GenerationStats]) -> None:
    _, stats = run
    counts = [len(path.read_bytes().splitlines()) for path in stats.files]
    assert sum(counts) == stats.lines_written
    assert max(counts) - min(counts) <= 1


def test_is_deterministic_for_a_seed(tmp_path: Path) -> None:
    options = GenerationOptions(events=300, seed=5)
    first = generate_run_folder(tmp_path / "a", options)
    second = generate_run_folder(tmp_path / "b", options)
    other = generate_run_folder(tmp_path / "c", GenerationOptions(events=300, seed=6))
    assert [p.read_bytes() for p in first.files] == [p.read_bytes() for p in second.files]
    assert [p.read_bytes() for p in first.files] != [p.read_bytes() for p in other.files]


def test_gzip_output_holds_the_same_lines(tmp_path: Path) -> None:
    plain = generate_run_folder(tmp_path / "plain", GenerationOptions(events=300, seed=3))
    zipped = generate_run_folder(tmp_path / "zipped", GenerationOptions(events=300, seed=3, gzip=True))
    assert [p.name for p in zipped.files] == ["part-00000.gz", "part-00001.gz"]
    assert [gzip.decompress(p.read_bytes()) for p in zipped.files] == [p.read_bytes() for p in plain.files]
    again = generate_run_folder(tmp_path / "again", GenerationOptions(events=300, seed=3, gzip=True))
    assert [p.read_bytes() for p in again.files] == [p.read_bytes() for p in zipped.files]


def test_no_events_still_completes_the_folder(tmp_path: Path) -> None:
    stats = generate_run_folder(tmp_path / "run", GenerationOptions(events=0))
    assert stats.lines_written == 0
    assert [p.read_bytes() for p in stats.files] == [b"", b""]
    assert (tmp_path / "run" / SUCCESS_MARKER).exists()


def test_run_folder_name_is_utc() -> None:
    assert run_folder_name(datetime(2026, 3, 1, 10, 0, 5, tzinfo=UTC)) == "run=2026-03-01-10-00-05"
    assert run_folder_name(datetime(2026, 3, 1, 10, 0, 5)) == "run=2026-03-01-10-00-05"
    one_hour_east = timezone(timedelta(hours=1))
    assert run_folder_name(datetime(2026, 3, 1, 11, 0, 5, tzinfo=one_hour_east)) == "run=2026-03-01-10-00-05"
