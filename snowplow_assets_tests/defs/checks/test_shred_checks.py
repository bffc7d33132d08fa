"""The shred step's blocking checks as Dagster results: each fails, on its own asset and as an error, on the
output defect it exists to catch, read back from a real shredded run folder that a test then damages."""

import dataclasses
import json
import shutil
from pathlib import Path

import dagster as dg
import pytest

from snowplow_assets.defs.checks.shred_checks import (
    ATOMIC_EVENTS,
    SHRED_CHECK_SPECS,
    SHREDDED_TYPES,
    shred_check_results,
)
from snowplow_assets.events.dedup import InBatchDedup
from snowplow_assets.events.enriched_schema import ATOMIC_FIELDS
from snowplow_assets.storage import LocalFileSystem
from snowplow_assets_tests.events.test_output_checks import naming_itself, rewrite_duplicate_contexts, without_original
from snowplow_assets_tests.events.test_shred_batch import RUN

ASSETS = {
    "unique_event_ids": ATOMIC_EVENTS,
    "lines_accounted_for": ATOMIC_EVENTS,
    "entities_have_events": SHREDDED_TYPES,
    "renamed_events_have_duplicate_context": SHREDDED_TYPES,
}
# The golden batch: 7 lines, 4 good, 2 bad, 1 natural duplicate removed, 2 synthetic duplicates renamed.
LINES = {"lines_read": 7, "good_on_disk": 4, "bad_on_disk": 2, "duplicates_removed": 1}
RENAMED = {"renamed": 2, "duplicate_contexts": 2, "events_with_duplicate_context": 2}


def results(spark, golden, tmp_path, damage=None, dedup=InBatchDedup()) -> dict[str, dg.AssetCheckResult]:
    """The checks' results on a copy of the golden batch's shredded output (../../conftest.py), damaged by
    `damage(good, bad)` first, as shredded with `dedup`."""
    lake, report = golden
    copy = tmp_path / "copy"
    shutil.copytree(Path(lake.root) / "shredded", copy)
    good, bad = copy / "good" / RUN, copy / "bad" / RUN
    if damage:
        damage(good, bad)
    damaged = dataclasses.replace(report, good_output=str(good), bad_output=str(bad), dedup=dedup)
    found = {r.check_name: r for r in shred_check_results(spark, LocalFileSystem(), damaged)}
    assert set(found) == set(ASSETS)
    for name, result in found.items():
        assert (result.asset_key, result.severity) == (ASSETS[name], dg.AssetCheckSeverity.ERROR), name
    return found


def parts(folder: Path) -> list[Path]:
    return sorted(p for p in folder.rglob("part-*") if p.read_text())


def entity_lines(good: Path) -> int:
    return sum(len(p.read_text().splitlines()) for p in parts(good / "shredded-types"))


def metadata(result: dg.AssetCheckResult) -> dict:
    return {k: v.value for k, v in result.metadata.items()}


def test_every_shred_check_blocks_on_its_asset():
    assert {s.name: (s.asset_key, s.blocking) for s in SHRED_CHECK_SPECS} == {
        name: (asset, True) for name, asset in ASSETS.items()
    }


def test_the_output_as_written_passes_every_check(spark, golden, tmp_path):
    found = results(spark, golden, tmp_path)
    assert all(r.passed for r in found.values()), {n: r.description for n, r in found.items()}
    assert metadata(found["lines_accounted_for"]) == LINES
    assert metadata(found["unique_event_ids"]) == {"atomic_events": 4, "distinct_event_ids": 4}
    assert metadata(found["renamed_events_have_duplicate_context"]) == {
        **RENAMED,
        "duplicate_contexts_without_original": 0,
    }
    assert metadata(found["entities_have_events"])["orphan_entities"] == 0


def test_an_event_written_twice_fails_uniqueness_and_the_line_count(spark, golden, tmp_path):
    def repeat_a_line(good, _bad):
        part = parts(good / "atomic-events")[0]
        part.write_text(part.read_text() + part.read_text().splitlines()[0] + "\n")

    found = results(spark, golden, tmp_path, repeat_a_line)
    assert sorted(n for n, r in found.items() if not r.passed) == ["lines_accounted_for", "unique_event_ids"]
    assert metadata(found["unique_event_ids"]) == {"atomic_events": 5, "distinct_event_ids": 4}
    assert metadata(found["lines_accounted_for"]) == {**LINES, "good_on_disk": 5}
    assert found["unique_event_ids"].description == "1 atomic events share an event_id with another"


@pytest.mark.parametrize(
    ("dedup", "other_fingerprint", "passed"),
    [
        (InBatchDedup(natural=True, synthetic=False), True, True),
        (InBatchDedup(natural=True, synthetic=False), False, False),
        (InBatchDedup(natural=False, synthetic=False), False, True),
    ],
    ids=["synthetic off, a synthetic duplicate", "synthetic off, a natural duplicate", "both off, a natural one"],
)
def test_ids_shared_as_the_dedup_settings_allow_pass(spark, golden, tmp_path, dedup, other_fingerprint, passed):
    """With synthetic deduplication off, events of one id and other fingerprints keep it (Snowplow's shredder
    allows it); until 2026-11-28 every such batch failed this blocking check, and lost its marker."""
    fingerprint = next(i for i, f in enumerate(ATOMIC_FIELDS) if f.name == "event_fingerprint")

    def add_a_copy(good, _bad):
        part = parts(good / "atomic-events")[0]
        fields = part.read_text().splitlines()[0].split("\t")
        fields[fingerprint] += "-other" if other_fingerprint else ""
        part.write_text(part.read_text() + "\t".join(fields) + "\n")

    unique = results(spark, golden, tmp_path, add_a_copy, dedup)["unique_event_ids"]
    assert unique.passed is passed, unique.description
    assert metadata(unique) == {
        "atomic_events": 5, "distinct_event_ids": 4, "repeated_id_and_fingerprint": 0 if other_fingerprint else 1,
    }  # fmt: skip


def test_a_lost_bad_row_fails_the_line_count_alone(spark, golden, tmp_path):
    def drop_a_bad_row(_good, bad):
        part = parts(bad)[0]
        part.write_text("".join(line + "\n" for line in part.read_text().splitlines()[1:]))

    found = results(spark, golden, tmp_path, drop_a_bad_row)
    assert [n for n, r in found.items() if not r.passed] == ["lines_accounted_for"]
    assert metadata(found["lines_accounted_for"]) == {**LINES, "bad_on_disk": 1}
    assert found["lines_accounted_for"].description == (
        "7 lines read; on disk 4 good + 1 bad, plus 1 duplicates removed = 6"
    )


def test_an_entity_whose_event_is_not_in_atomic_events_fails(spark, golden, tmp_path):
    entities = []

    def misroute_an_entity(good, _bad):
        entities.append(entity_lines(good))
        part = next(p for p in parts(good / "shredded-types") if "name=duplicate" not in p.as_posix())
        entity = json.loads(part.read_text().splitlines()[0])
        entity["hierarchy"]["rootId"] = "ffffffff-0000-4000-8000-00000000ffff"
        part.write_text(part.read_text() + json.dumps(entity) + "\n")

    found = results(spark, golden, tmp_path, misroute_an_entity)
    assert [n for n, r in found.items() if not r.passed] == ["entities_have_events"]
    assert metadata(found["entities_have_events"]) == {"entities": entities[0] + 1, "orphan_entities": 1}


def test_a_renamed_event_that_lost_its_duplicate_context_fails(spark, golden, tmp_path):
    found = results(spark, golden, tmp_path, lambda good, _: shutil.rmtree(next(good.rglob("name=duplicate"))))
    assert [n for n, r in found.items() if not r.passed] == ["renamed_events_have_duplicate_context"]
    assert metadata(found["renamed_events_have_duplicate_context"]) == {
        "renamed": 2,
        "duplicate_contexts": 0,
        "events_with_duplicate_context": 0,
        "duplicate_contexts_without_original": 0,
    }


@pytest.mark.parametrize("rewrite", [without_original, naming_itself])
def test_a_duplicate_context_naming_no_other_event_fails_with_the_count_that_fails_it(spark, golden, tmp_path, rewrite):
    """A context with no originalEventId passed until 2026-11-27 (its comparison with the rootId was null, not
    true); one naming its own event failed with metadata whose counts all agreed."""
    rewritten = []
    found = results(
        spark, golden, tmp_path, lambda good, _: rewritten.append(rewrite_duplicate_contexts(good, rewrite))
    )
    assert rewritten == [2], "the golden batch renames two events"
    assert [n for n, r in found.items() if not r.passed] == ["renamed_events_have_duplicate_context"]
    check = found["renamed_events_have_duplicate_context"]
    assert metadata(check) == {**RENAMED, "duplicate_contexts_without_original": 2}
    assert "2 naming no original id or their own event's" in check.description
