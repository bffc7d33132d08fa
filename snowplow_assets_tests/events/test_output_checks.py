"""The checks of a shredded run folder (events/output_checks.py) on the golden batch's output, as written and
damaged.

Their Dagster results (defs/checks/shred_checks.py) are these outcomes one to one, on their assets; the damages
that defs/checks/test_shred_checks.py makes (an event written twice, a lost bad row, a misrouted entity, lost
or rewritten duplicate contexts) are proved there alone, with every check's outcome and metadata: checking the
same damaged output twice would prove nothing more.
"""

import dataclasses
import json
import re
import shutil
from pathlib import Path

from snowplow_assets.events.output_checks import check_shredded_output
from snowplow_assets.events.shred_batch import ShredOptions, shred_run_folder
from snowplow_assets.lake import Lake
from snowplow_assets.storage import LocalFileSystem
from snowplow_assets_tests.conftest import write_run_folder
from snowplow_assets_tests.events.builders import event_line
from snowplow_assets_tests.events.test_shred_batch import RUN


def tampered_copy(golden, tmp_path, tamper):
    lake, report = golden
    copy = tmp_path / "copy"
    shutil.copytree(Path(lake.root) / "shredded", copy)
    good, bad = copy / "good" / RUN, copy / "bad" / RUN
    tamper(good)
    return dataclasses.replace(report, good_output=str(good), bad_output=str(bad))


def outcomes(spark, report):
    return {o.name: o for o in check_shredded_output(spark, LocalFileSystem(), report)}


def test_untouched_output_passes_and_its_duplicate_contexts_name_another_event(spark, golden):
    results = outcomes(spark, golden[1])
    assert all(o.passed for o in results.values()), results
    assert results["lines_accounted_for"].metadata["bad_on_disk"] == 2
    check = results["renamed_events_have_duplicate_context"]
    assert check.passed and check.metadata["duplicate_contexts_without_original"] == 0


def test_orphan_entity_fails(spark, golden, tmp_path):
    def drop_events(good):
        for part in (good / "atomic-events").glob("part-*"):
            part.write_text("")

    results = outcomes(spark, tampered_copy(golden, tmp_path, drop_events))
    assert not results["entities_have_events"].passed
    assert not results["lines_accounted_for"].passed


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


def test_an_input_event_carrying_the_shredders_own_context_is_a_bad_row_and_every_check_passes(spark, tmp_path):
    """Counted as a rename, it failed renamed_events_have_duplicate_context with nothing renamed, and the
    blocking check withdrew the folder's marker on every run (iglu.SHREDDER_DUPLICATE_PREFIX)."""
    lake = Lake(str(tmp_path / "lake"))
    own = (
        '{"schema":"iglu:com.snowplowanalytics.snowplow/contexts/jsonschema/1-0-1","data":[{"schema":'
        '"iglu:com.snowplowanalytics.snowplow/duplicate/jsonschema/1-0-0","data":{"originalEventId":'
        '"aaaaaaaa-0000-4000-8000-00000000000a"}}]}'
    )
    lines = [
        event_line(event_id="eeeeeeee-0000-4000-8000-00000000000e", contexts=own),
        event_line(event_id="ffffffff-0000-4000-8000-00000000000f"),
    ]
    write_run_folder(lake, RUN, lines)
    report = shred_run_folder(spark, LocalFileSystem(), lake, RUN, ShredOptions())
    assert (report.good, report.bad, report.renamed) == (1, 1, 0)
    results = outcomes(spark, report)
    assert all(o.passed for o in results.values()), results
    assert results["renamed_events_have_duplicate_context"].metadata["duplicate_contexts"] == 0


def test_two_duplicate_contexts_on_one_renamed_event_and_none_on_the_other_fail(spark, golden, tmp_path):
    """As many contexts as renames, each naming another event and hanging on an atomic event: only the count of
    events that carry one sees that a renamed event lost the id of its original."""

    def pile_them_on_one_event(good: Path) -> None:
        parts = [p for p in next(good.rglob("name=duplicate")).rglob("part-*") if p.read_text().strip()]
        contexts = [json.loads(line) for p in parts for line in p.read_text().splitlines()]
        assert len(contexts) == 2, "the golden batch renames two events"
        for context in contexts:
            context["hierarchy"]["rootId"] = contexts[0]["hierarchy"]["rootId"]
        for part in parts[1:]:
            part.write_text("")
        parts[0].write_text("".join(json.dumps(c, separators=(",", ":")) + "\n" for c in contexts))

    results = outcomes(spark, tampered_copy(golden, tmp_path, pile_them_on_one_event))
    check = results["renamed_events_have_duplicate_context"]
    assert results["entities_have_events"].passed
    assert (check.metadata["duplicate_contexts"], check.metadata["events_with_duplicate_context"]) == (2, 1)
    assert not check.passed
