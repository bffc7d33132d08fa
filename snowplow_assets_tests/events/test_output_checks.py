import dataclasses
import json
import re
import shutil
from pathlib import Path

import pytest

from snowplow_assets.events.output_checks import check_shredded_output
from snowplow_assets.events.shred_batch import shred_run_folder
from snowplow_assets.lake import Lake
from snowplow_assets.storage import LocalFileSystem
from snowplow_assets_tests.conftest import write_run_folder
from snowplow_assets_tests.events.test_shred_batch import GOLDEN_INPUT, RUN


@pytest.fixture(scope="module")
def shredded(spark, tmp_path_factory):
    lake = Lake(str(tmp_path_factory.mktemp("checks") / "lake"))
    write_run_folder(lake, RUN, GOLDEN_INPUT)
    return lake, shred_run_folder(spark, LocalFileSystem(), lake, RUN)


def tampered_copy(shredded, tmp_path, tamper):
    lake, report = shredded
    copy = tmp_path / "copy"
    shutil.copytree(Path(lake.root) / "shredded", copy)
    good, bad = copy / "good" / RUN, copy / "bad" / RUN
    tamper(good)
    return dataclasses.replace(report, good_output=str(good), bad_output=str(bad))


def outcomes(spark, report):
    return {o.name: o for o in check_shredded_output(spark, LocalFileSystem(), report)}


def a_part(folder: Path) -> Path:
    return next(p for p in folder.rglob("part-*"))


def test_untouched_output_passes(spark, shredded):
    results = outcomes(spark, shredded[1])
    assert all(o.passed for o in results.values()), results
    assert results["lines_accounted_for"].metadata["bad_on_disk"] == 2


def test_repeated_event_fails_uniqueness_and_accounting(spark, shredded, tmp_path):
    def repeat_a_line(good):
        part = a_part(good / "atomic-events")
        part.write_text(part.read_text() + part.read_text().splitlines()[0] + "\n")

    results = outcomes(spark, tampered_copy(shredded, tmp_path, repeat_a_line))
    assert not results["unique_event_ids"].passed and not results["lines_accounted_for"].passed
    assert results["entities_have_events"].passed


def test_orphan_entity_fails(spark, shredded, tmp_path):
    def drop_events(good):
        for part in (good / "atomic-events").glob("part-*"):
            part.write_text("")

    results = outcomes(spark, tampered_copy(shredded, tmp_path, drop_events))
    assert not results["entities_have_events"].passed
    assert not results["lines_accounted_for"].passed


def test_lost_duplicate_context_fails(spark, shredded, tmp_path):
    def drop_duplicate_contexts(good):
        shutil.rmtree(next(good.rglob("name=duplicate")))

    results = outcomes(spark, tampered_copy(shredded, tmp_path, drop_duplicate_contexts))
    assert not results["renamed_events_have_duplicate_context"].passed
    assert results["entities_have_events"].passed


def rewrite_duplicate_contexts(good: Path, rewrite) -> int:
    """Rewrite the originalEventId of every duplicate context line: `rewrite(line) -> line`; how many."""
    rewritten = 0
    for part in next(good.rglob("name=duplicate")).rglob("part-*"):
        lines = part.read_text().splitlines()
        part.write_text("".join(rewrite(line) + "\n" for line in lines))
        rewritten += len(lines)
    return rewritten


def without_original(line: str) -> str:
    return re.sub(r'"originalEventId":"[^"]*"', '"note":"no original named"', line)


def naming_itself(line: str) -> str:
    root = json.loads(line)["hierarchy"]["rootId"]
    return re.sub(r'"originalEventId":"[^"]*"', f'"originalEventId":"{root}"', line)


@pytest.mark.parametrize("rewrite", [without_original, naming_itself])
def test_a_duplicate_context_that_names_no_other_event_fails_and_is_counted(spark, shredded, tmp_path, rewrite):
    """A context with no originalEventId passed until 2026-11-27 (its comparison with the rootId was null, not
    true); one naming its own event failed with metadata whose counts all agreed."""
    rewritten = []
    report = tampered_copy(shredded, tmp_path, lambda good: rewritten.append(rewrite_duplicate_contexts(good, rewrite)))
    assert rewritten == [2], "the golden batch renames two events"
    check = outcomes(spark, report)["renamed_events_have_duplicate_context"]
    assert not check.passed, check.description
    assert check.metadata == {
        "renamed": 2,
        "duplicate_contexts": 2,
        "events_with_duplicate_context": 2,
        "duplicate_contexts_without_original": 2,
    }
    assert "2 naming no original id or their own event's" in check.description


def test_the_untouched_duplicate_contexts_name_another_event(spark, shredded):
    check = outcomes(spark, shredded[1])["renamed_events_have_duplicate_context"]
    assert check.passed and check.metadata["duplicate_contexts_without_original"] == 0
