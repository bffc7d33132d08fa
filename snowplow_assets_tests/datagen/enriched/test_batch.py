"""One batch: exact counts of events and duplicates, and duplicates that look like real ones."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from snowplow_assets.datagen.enriched import GenerationStats
from snowplow_assets.events.enriched_schema import FIELD_INDEX
from snowplow_assets_tests.datagen.enriched.read_back import defect, good_fields, lines, value


def test_counts_are_exact(run: tuple[Path, GenerationStats]) -> None:
    _, stats = run
    assert (stats.events, stats.natural_duplicates, stats.synthetic_duplicates, stats.bad_lines) == (900, 18, 9, 9)
    assert stats.lines_written == 900 + 18 + 9 + 9 == len(lines(stats))

    good = good_fields(stats)
    pairs = Counter((value(f, "event_id"), value(f, "event_fingerprint")) for f in good)
    ids = {event_id for event_id, _ in pairs}
    assert len(ids) == stats.events
    assert sum(count - 1 for count in pairs.values()) == stats.natural_duplicates
    assert len(pairs) - len(ids) == stats.synthetic_duplicates


def test_some_natural_duplicates_were_enriched_later(run: tuple[Path, GenerationStats]) -> None:
    _, stats = run
    etl_times: dict[tuple[str, str], list[str]] = {}
    for fields in good_fields(stats):
        key = (value(fields, "event_id"), value(fields, "event_fingerprint"))
        etl_times.setdefault(key, []).append(value(fields, "etl_tstamp"))
    copies = [times for times in etl_times.values() if len(times) > 1]
    assert any(len(set(times)) > 1 for times in copies)
    assert any(len(set(times)) == 1 for times in copies)


def test_synthetic_duplicates_differ_in_payload(run: tuple[Path, GenerationStats]) -> None:
    _, stats = run
    by_id: dict[str, set[tuple[str, ...]]] = {}
    for fields in good_fields(stats):
        enrichment = (FIELD_INDEX["etl_tstamp"], FIELD_INDEX["event_fingerprint"])
        payload = tuple(text for index, text in enumerate(fields) if index not in enrichment)
        by_id.setdefault(value(fields, "event_id"), set()).add(payload)
    assert sum(len(payloads) - 1 for payloads in by_id.values()) == stats.synthetic_duplicates


def test_duplicates_are_scattered_over_the_files(run: tuple[Path, GenerationStats]) -> None:
    _, stats = run
    places: dict[str, list[tuple[int, int]]] = {}  # event id -> (file, line) of each good line with that id
    line_number = 0
    for file_number, path in enumerate(stats.files):
        for line in path.read_text(encoding="utf-8").splitlines(keepends=True):
            line_number += 1
            if defect(line) is None:
                places.setdefault(line.split("\t")[FIELD_INDEX["event_id"]], []).append((file_number, line_number))
    shared = [sorted(p) for p in places.values() if len(p) > 1]
    assert len(shared) > 20
    assert sum(1 for p in shared if p[1][1] - p[0][1] == 1) <= 1
    assert any(p[0][0] != p[-1][0] for p in shared)
