import dataclasses
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
