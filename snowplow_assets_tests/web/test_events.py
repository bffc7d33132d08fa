"""Which run folders a window reads, and how its events are read, deduplicated and dropped."""

import json
from datetime import timedelta
from pathlib import Path

import pytest
from pyspark.sql import Observation

from snowplow_assets.lake import Lake
from snowplow_assets.storage import LocalFileSystem
from snowplow_assets.web.events import WEB_PAGE_TYPE, classify, drop_counts, in_window, read_events, select_run_folders
from snowplow_assets_tests.web.shredded import Event, ts, uid, write_shredded_run

LOWER, UPPER = ts("2026-03-02 00:00:00"), ts("2026-03-02 12:00:00")


def events_between(prefix: str, first: str, last: str) -> list[Event]:
    return [Event(f"{prefix}-1", ts(first), "s", "u"), Event(f"{prefix}-2", ts(last), "s", "u")]


def test_folder_selection_by_name_then_by_marker(tmp_path):
    lake, fs = Lake(str(tmp_path / "lake")), LocalFileSystem()
    # Named before the window: cannot hold its events, so its (broken) marker is never opened.
    before = write_shredded_run(
        lake, "run=2026-03-01-23-00-00", events_between("a", "2026-03-01 22:00:00", "2026-03-01 22:30:00")
    )
    (before / "shredding_complete.json").write_text("{broken")
    write_shredded_run(
        lake, "run=2026-03-02-06-00-00", events_between("b", "2026-03-02 05:00:00", "2026-03-02 05:59:00")
    )
    write_shredded_run(
        lake,
        "run=2026-03-02-07-00-00",
        events_between("c", "2026-03-02 06:10:00", "2026-03-02 06:20:00"),
        complete=False,
    )
    write_shredded_run(lake, "run=2026-03-02-08-00-00", [])
    # Named in the window but holding only old events, delivered late: outside by its marker.
    write_shredded_run(
        lake, "run=2026-03-02-09-00-00", events_between("d", "2026-03-01 20:00:00", "2026-03-01 21:00:00")
    )
    # Late-arriving events of the window in a folder after it: read.
    write_shredded_run(
        lake, "run=2026-03-02-13-00-00", events_between("e", "2026-03-02 11:30:00", "2026-03-02 12:59:00")
    )
    write_shredded_run(
        lake, "run=2026-03-03-00-00-00", events_between("f", "2026-03-02 12:30:00", "2026-03-02 23:00:00")
    )
    (Path(lake.uri("shredded", "good")) / "not-a-run").mkdir()

    selection = select_run_folders(fs, lake, LOWER, UPPER)
    assert selection.runs == ["run=2026-03-02-06-00-00", "run=2026-03-02-13-00-00"]
    assert selection.folders[1].min_collector == ts("2026-03-02 11:30:00")
    assert selection.incomplete == ["run=2026-03-02-07-00-00"]
    assert (selection.not_opened, selection.outside, selection.empty, selection.later_data) == (1, 2, 1, True)
    assert not select_run_folders(fs, lake, LOWER, ts("2026-03-03 00:00:00")).later_data


def test_an_unreadable_marker_is_a_clear_error(tmp_path):
    lake, fs = Lake(str(tmp_path / "lake")), LocalFileSystem()
    good = write_shredded_run(
        lake, "run=2026-03-02-06-00-00", events_between("b", "2026-03-02 05:00:00", "2026-03-02 05:59:00")
    )
    (good / "shredding_complete.json").write_text(
        json.dumps({"data": {"timestamps": {"min": 3}, "count": {"good": 2}}})
    )
    with pytest.raises(
        ValueError, match="unreadable completion marker .*run=2026-03-02-06-00-00/shredding_complete.json"
    ):
        select_run_folders(fs, lake, LOWER, UPPER)


def test_window_events_are_read_with_page_view_ids_deduplicated_and_counted(spark, tmp_path):
    lake, fs = Lake(str(tmp_path / "lake")), LocalFileSystem()
    at = ts("2026-03-02 05:00:00")
    first = [
        Event("e1", at, "s", "u", page_view="p1"),
        Event("late", at, "s", "u", created=at - timedelta(days=3, seconds=2), sent=at - timedelta(seconds=1)),
        Event("just-in-time", at, "s", "u", created=at - timedelta(days=3), sent=at),
        Event("no-device-times", at, "s", "u", extra={"dvce_created_tstamp": "", "dvce_sent_tstamp": ""}),
        Event("no-session", at, None, "u"),
        Event("two-pages", at, "s", "u", page_view="pb"),
        Event("too-early", LOWER - timedelta(seconds=1), "s", "u"),
    ]
    # A copy of e2 collected earlier but cut off its 128 fields: malformed, and no rival to the good copy.
    truncated = Event("e2", at - timedelta(minutes=1), "s", "u").atomic_line().rsplit("\t", 1)[0]
    first.append(Event("e2", at, "s", "u"))
    folder = write_shredded_run(lake, "run=2026-03-02-06-00-00", first, raw_lines=["three\tfields\tonly", truncated])
    two_pages = next(e for e in first if e.name == "two-pages")
    extra = two_pages.web_page_line().replace(uid("pb"), uid("pa"))  # type: ignore[union-attr]
    with open(folder / "shredded-types" / WEB_PAGE_TYPE / "version=1-0-0" / "part-00000", "a") as f:
        f.write(extra + "\n")
    # The same event again in a later folder, enriched later: the copy enriched first is kept.
    write_shredded_run(
        lake, "run=2026-03-02-07-00-00", [Event("e1", at, "s", "u", page_view="p1", etl=at + timedelta(hours=1))]
    )

    folders = select_run_folders(fs, lake, LOWER, UPPER).folders
    observation = Observation("test")
    classified = classify(in_window(read_events(spark, fs, folders), LOWER, UPPER), days_late_allowed=3)
    rows = classified.observe(observation, *drop_counts()).collect()
    counts = observation.get
    assert {k: counts[k] for k in ("events", "malformed", "duplicate", "late", "unidentified", "valid")} == {
        "events": 10, "malformed": 2, "duplicate": 1, "late": 1, "unidentified": 1, "valid": 5,
    }  # fmt: skip
    valid = {r.event_id: r for r in rows if r.drop_reason is None}
    assert set(valid) == {uid("e1"), uid("e2"), uid("just-in-time"), uid("no-device-times"), uid("two-pages")}
    assert valid[uid("e1")].run == "run=2026-03-02-06-00-00" and valid[uid("e1")].page_view_id == uid("p1")
    assert valid[uid("two-pages")].page_view_id == min(uid("pa"), uid("pb"))
    assert valid[uid("just-in-time")].page_view_id is None


def test_each_copy_of_an_id_takes_the_page_view_id_of_its_own_context(spark, tmp_path):
    # With synthetic deduplication off, a run folder keeps copies of an id that differ: the kept copy (collected
    # first) must carry its own web_page id, not the smallest of every copy's.
    lake, fs = Lake(str(tmp_path / "lake")), LocalFileSystem()
    at = ts("2026-03-02 05:00:00")
    smaller, larger = sorted(["page-a", "page-b"], key=uid)
    copies = [
        Event("shared", at, "s1", "u1", page_view=larger, extra={"event_fingerprint": "first"}),
        Event("shared", at + timedelta(minutes=5), "s2", "u2", page_view=smaller, extra={"event_fingerprint": "later"}),
    ]
    write_shredded_run(lake, "run=2026-03-02-06-00-00", copies)
    folders = select_run_folders(fs, lake, LOWER, UPPER).folders
    rows = classify(read_events(spark, fs, folders), days_late_allowed=3).collect()
    assert {(r.domain_sessionid, r.page_view_id, r.drop_reason) for r in rows} == {
        (uid("s1"), uid(larger), None),
        (uid("s2"), uid(smaller), "duplicate"),
    }
