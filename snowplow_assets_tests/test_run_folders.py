import os
import time
from pathlib import Path

import pytest

from snowplow_assets.cdc.landing import landing_files
from snowplow_assets.events.reader import run_folder_files
from snowplow_assets.lake import CDC_LANDING_FOLDER, RUN_FOLDER
from snowplow_assets.run_folders import find_new_folders, readiness
from snowplow_assets.storage import LocalFileSystem
from snowplow_assets_tests.storage.unreadable import make_unreadable_sub_folder


def make(folder: Path, *files: str, age: float = 0.0) -> None:
    """Files dated `age` seconds ago (in the future for a negative age). On a local disk a file's change time
    (ctime) counts too, and no one can date it back: a file is quiet only at a `now` some time after it was
    written, which is why the tests below judge folders at a `now` ahead of the clock."""
    folder.mkdir(parents=True, exist_ok=True)
    for name in files:
        path = folder / name
        path.write_text("x\n")
        os.utime(path, (time.time() - age, time.time() - age))


def test_readiness_rule(tmp_path):
    fs, now = LocalFileSystem(), time.time() + 600
    make(tmp_path / "marked", "part-0", "_SUCCESS")
    make(tmp_path / "quiet", "part-0")
    make(tmp_path / "busy", "part-0", age=-595)
    make(tmp_path / "empty")
    make(tmp_path / "only-hidden", ".part-0.crc", age=600)

    def ready(name: str) -> bool:
        folder = str(tmp_path / name)
        return readiness(folder, fs.list_files(folder), now, 120)[0]

    assert ready("marked")
    assert ready("quiet")
    assert not ready("busy")
    assert not ready("empty")
    assert not ready("only-hidden")


# A Hadoop or Spark job writes its part files under `_temporary/` and moves them into place when it commits.
STAGED = "_temporary/0/_temporary/attempt_202601010000_0001_m_000000_1/part-00000"


# fmt: off
@pytest.mark.parametrize(("kind", "name", "pattern", "reader"), [
    ("enriched", "run=2026-01-01-00-00-00", RUN_FOLDER, run_folder_files),
    ("cdc/landing", "2026-01-01T00-00-00Z", CDC_LANDING_FOLDER, landing_files),
])
# fmt: on
def test_a_folder_is_not_ready_on_files_its_job_will_not_read(tmp_path, kind, name, pattern, reader):
    """Readiness and the job's reader share one rule: a folder whose only files are a writer's staged ones
    (quiet for longer than the ready time, or with a marker inside the staging area) holds no data."""
    fs, parent = LocalFileSystem(), tmp_path / kind
    folder = parent / name
    staged = folder / STAGED
    make(staged.parent, staged.name, "_SUCCESS", age=600)
    make(folder / ".staging", "part-00001", age=600)

    def found():
        return find_new_folders(fs, str(parent), set(), time.time(), 120, limit=10, pattern=pattern)

    assert reader(fs, str(folder)) == [], "the job would read nothing"
    assert not readiness(str(folder), fs.list_files(str(folder)), time.time(), 120)[0]
    assert found().ready == [] and found().waiting == [name]

    # The writer commits: its part file moves into place (an old file: quiet already), then the marker.
    os.rename(staged, folder / "part-00000")
    later = time.time() + 600
    assert readiness(str(folder), fs.list_files(str(folder)), later, 120)[1].startswith("unchanged for")
    (folder / "_SUCCESS").touch()
    assert readiness(str(folder), fs.list_files(str(folder)), time.time(), 120) == (True, "_SUCCESS marker present")
    assert found().ready == [name]
    assert [f.name for f in reader(fs, str(folder))] == ["part-00000"]


def test_new_folders_are_sorted_chunked_and_filtered(tmp_path):
    enriched = tmp_path / "enriched"
    for hour in (5, 1, 3, 2, 4):
        make(enriched / f"run=2026-03-01-0{hour}-00-00", "part-0", "_SUCCESS")
    make(enriched / "run=2026-03-01-06-00-00", "part-0")  # still being written
    make(enriched / "not-a-run", "part-0", "_SUCCESS")
    (enriched / "run=2026-03-01-07-00-00.txt").write_text("a file, not a folder")

    fs = LocalFileSystem()
    first = find_new_folders(
        fs, str(enriched), {"run=2026-03-01-01-00-00"}, time.time(), 120, limit=2, pattern=RUN_FOLDER
    )
    assert first.ready == ["run=2026-03-01-02-00-00", "run=2026-03-01-03-00-00"] and first.more
    assert first.ignored == ["not-a-run"]
    known = {"run=2026-03-01-01-00-00", *first.ready}
    second = find_new_folders(fs, str(enriched), known, time.time(), 120, limit=10, pattern=RUN_FOLDER)
    assert second.ready == ["run=2026-03-01-04-00-00", "run=2026-03-01-05-00-00"] and not second.more
    assert second.waiting == ["run=2026-03-01-06-00-00"]


def test_missing_enriched_folder_finds_nothing(tmp_path):
    found = find_new_folders(
        LocalFileSystem(), str(tmp_path / "nope"), set(), time.time(), 0, limit=5, pattern=RUN_FOLDER
    )
    assert (found.ready, found.waiting, found.ignored, found.more) == ([], [], [], False)


def test_scan_moves_its_cursor_over_handled_folders_only(tmp_path):
    from snowplow_assets.lake import RUN_FOLDER
    from snowplow_assets.run_folders import scan_folders

    enriched, fs, later = tmp_path / "enriched", LocalFileSystem(), time.time() + 600
    names = [f"run=2026-03-01-0{h}-00-00" for h in range(8)]
    make(enriched / names[0], "part-0", "_SUCCESS")  # registered already
    make(enriched / names[1], "part-0", "_SUCCESS")
    make(enriched / names[2], ".part-0.crc", age=600)  # no data and quiet: empty, passed over
    os.utime(enriched / names[2], (time.time() - 600, time.time() - 600))
    make(enriched / names[3], "part-0", age=600)  # quiet data: ready
    make(enriched / "not-a-run", "part-0")
    make(enriched / names[4], "part-0", age=-600)  # still changing: waiting
    make(enriched / names[5], "part-0", "_SUCCESS")
    make(enriched / names[6], "part-0", "_SUCCESS")
    make(enriched / names[7], "part-0", "_SUCCESS")

    def scan(start_after=None, limit=10):
        return scan_folders(fs, str(enriched), {names[0]}, later, 120, limit, RUN_FOLDER, start_after)

    everything = scan()
    assert everything.ready == [names[1], names[3], names[5], names[6], names[7]]
    assert (everything.waiting, everything.empty, everything.ignored) == ([names[4]], [names[2]], ["not-a-run"])
    assert everything.handled_through == names[3], "the waiting folder holds the cursor back"
    assert (everything.listed, everything.more) == (9, False)

    chunk = scan(limit=2)
    assert (chunk.ready, chunk.handled_through, chunk.more) == ([names[1], names[3]], names[3], True)
    after = scan(start_after=names[4], limit=2)
    assert (after.ready, after.listed, after.handled_through, after.more) == ([names[5], names[6]], 3, names[6], True)
    assert scan(start_after=names[7]).handled_through == names[7], "nothing new keeps the cursor where it is"


def test_a_marker_written_before_the_data_does_not_make_the_folder_ready(tmp_path):
    """A copy in key order (`aws s3 cp --recursive`, `aws s3 sync`, rclone) writes `_SUCCESS` first, since `_`
    sorts before every lower-case letter: the marker then vouches for nothing yet. A folder holding the marker
    alone, or files newer than it, waits as a folder without a marker would."""
    fs, folder = LocalFileSystem(), tmp_path / "run=2026-01-01-00-00-00"

    def ready(now: float | None = None) -> tuple[bool, str]:
        return readiness(str(folder), fs.list_files(str(folder)), now or time.time(), 120)

    make(folder, "_SUCCESS", age=10)
    assert not ready()[0], "the marker alone, the data still to come"
    time.sleep(0.05)  # the kernel's clock for change times ticks every few milliseconds
    make(folder, "part-00000")
    assert not ready()[0], "a part file newer than the marker: the copy is still under way"
    assert ready(time.time() + 121)[0], "quiet for the ready time: ready as any folder is"

    make(tmp_path / "marked-last", "part-00000", age=10)
    time.sleep(0.05)
    make(tmp_path / "marked-last", "_SUCCESS", age=1)
    make(tmp_path / "marked-last", "._SUCCESS.crc", ".part-00000.crc")  # Hadoop's checksums, closed after
    marked = str(tmp_path / "marked-last")
    assert readiness(marked, fs.list_files(marked), time.time(), 120) == (True, "_SUCCESS marker present")

    make(tmp_path / "only-marker", "_SUCCESS", age=600)
    only = str(tmp_path / "only-marker")
    assert not readiness(only, fs.list_files(only), time.time(), 120)[0], "a marker is no data file"


def test_a_folder_whose_name_does_not_fit_never_carries_the_cursor_past_later_runs(tmp_path):
    """Run folder names sort by time, and a tick lists what sorts after its cursor. A folder of another name that
    sorts after every run folder (`tmp`, `staging`, `~old`) once became the cursor, and every run folder that
    arrived later sorted before it: no tick but the full listing (every 20th) saw them. The cursor now moves
    over the folders whose names fit the pattern only."""
    from snowplow_assets.run_folders import scan_folders

    enriched, fs = tmp_path / "enriched", LocalFileSystem()
    make(enriched / "run=2026-03-01-00-00-00", "part-0", "_SUCCESS")
    make(enriched / "tmp", "part-0", "_SUCCESS")
    make(enriched / "~old", "part-0", "_SUCCESS")

    def scan(start_after):
        return scan_folders(fs, str(enriched), set(), time.time(), 120, 10, RUN_FOLDER, start_after)

    first = scan(None)
    assert (first.ready, first.ignored) == (["run=2026-03-01-00-00-00"], ["tmp", "~old"])
    assert first.handled_through == "run=2026-03-01-00-00-00"

    make(enriched / "run=2026-03-01-01-00-00", "part-0", "_SUCCESS")
    assert scan(first.handled_through).ready == ["run=2026-03-01-01-00-00"]
    assert scan(None).handled_through == "run=2026-03-01-01-00-00"
    only_others = tmp_path / "others"
    make(only_others / "tmp", "part-0")
    assert scan_folders(fs, str(only_others), set(), time.time(), 120, 10, RUN_FOLDER, "run=x").handled_through == (
        "run=x"
    ), "nothing that fits: the cursor stays"


def test_on_a_local_disk_a_copy_that_keeps_the_files_times_is_not_taken_for_a_quiet_folder(tmp_path):
    """`aws s3 sync` and `aws s3 cp` to a disk set each file's time to its object's, and `cp -p`, `rsync -a` keep
    the source's: a folder copied so has old times from its first file on, and its `_SUCCESS` (copied first, in
    key order) is the newest of them. Either rule took such a folder for complete while the copy ran. A file's
    status change time, which no copy can set, now counts as a change too."""
    fs, folder = LocalFileSystem(), tmp_path / "run=2026-01-01-00-00-00"
    source_time = time.time() - 86400

    def copy(name: str, age: float) -> None:
        folder.mkdir(exist_ok=True)
        (folder / name).write_text("x\n")
        os.utime(folder / name, (source_time - age, source_time - age))
        time.sleep(0.05)  # the kernel's clock for change times ticks every few milliseconds

    def ready(after: float = 120, now: float | None = None) -> bool:
        return readiness(str(folder), fs.list_files(str(folder)), now or time.time(), after)[0]

    copy("part-00000", age=60)
    assert not ready(), "a part file just copied, however old its time"
    copy("_SUCCESS", age=0)  # the source's marker, written after its part files
    assert ready(), "the marker came after the part file, as at the source"

    folder = tmp_path / "run=2026-01-01-01-00-00"
    copy("_SUCCESS", age=0)  # a copy in key order
    copy("part-00000", age=60)
    assert not ready(), "the marker came first: the copy may still be under way"
    assert ready(now=time.time() + 121), "quiet since the last file came"


def test_a_scan_accounts_for_every_folder_it_listed(tmp_path):
    """The sensor's log line says where each listed folder went. It once said how many were listed and how many
    were new and ready, and nothing of the registered ones, of those whose names do not fit beyond where the
    chunk stopped, or of the new ones left for the next ticks: 1,051 listed, 500 ready, and 551 unexplained."""
    from snowplow_assets.run_folders import scan_folders

    enriched, fs = tmp_path / "enriched", LocalFileSystem()
    names = [f"run=2026-03-01-0{h}-00-00" for h in range(6)]
    for name in names:
        make(enriched / name, "part-0", "_SUCCESS")
    make(enriched / "zz-not-a-run", "part-0")
    scan = scan_folders(fs, str(enriched), {names[0], names[4]}, time.time(), 120, 2, RUN_FOLDER)
    assert scan.ready == names[1:3] and scan.handled_through == names[2] and scan.more
    assert (scan.registered, scan.unexamined, scan.ignored, scan.listed) == (2, 2, ["zz-not-a-run"], 7)
    assert scan.summary() == (
        "7 folders: 2 new and ready, 0 not ready yet, 0 without data files, 0 unreadable, "
        "1 whose names do not fit, 2 registered already, 2 left for the next ticks"
    )


def test_a_scan_opens_at_most_the_folders_it_is_told_and_leaves_the_rest_for_later(tmp_path):
    """A sensor's tick bounds the folders it opens (folder_discovery.FOLDERS_EXAMINED_PER_TICK): with thousands
    of folders waiting for quiet, each tick opened all of them. Those after the bound are left for later scans,
    as those after `limit` are."""
    from snowplow_assets.run_folders import scan_folders

    enriched, fs = tmp_path / "enriched", LocalFileSystem()
    names = [f"run=2026-03-01-0{h}-00-00" for h in range(6)]
    for name in names[:3]:
        make(enriched / name, "part-0", age=-600)  # still changing: waiting
    for name in names[3:]:
        make(enriched / name, "part-0", "_SUCCESS")
    opened = []
    list_files = fs.list_files
    fs.list_files = lambda uri: opened.append(uri.rsplit("/", 1)[-1]) or list_files(uri)  # type: ignore[method-assign]

    bounded = scan_folders(fs, str(enriched), set(), time.time(), 120, 10, RUN_FOLDER, examine_at_most=3)
    assert sorted(opened) == names[:3], "only the first three folders were opened"
    assert (bounded.ready, bounded.waiting, bounded.unexamined) == ([], names[:3], 3)
    assert (bounded.handled_through, bounded.more) == (None, True)
    assert bounded.summary().endswith("3 left for the next ticks")

    opened.clear()  # once the first three are registered, the next scan reaches the rest
    later = scan_folders(fs, str(enriched), set(names[:3]), time.time(), 120, 10, RUN_FOLDER, examine_at_most=3)
    assert (sorted(opened), later.ready, later.handled_through) == (names[3:], names[3:], names[-1])


def test_a_folder_that_cannot_be_read_holds_the_cursor_and_the_others_go_on(tmp_path):
    """A folder whose listing fails (a sub-folder its permissions keep from the sensor's user) failed the whole
    scan, and so every tick of the sensor, until someone mended it: no other folder was registered meanwhile."""
    from snowplow_assets.run_folders import scan_folders

    enriched, fs = tmp_path / "enriched", LocalFileSystem()
    names = [f"run=2026-03-01-0{h}-00-00" for h in range(3)]
    for name in names:
        make(enriched / name, "part-0", "_SUCCESS")
    blocker = make_unreadable_sub_folder(enriched / names[1])

    scan = scan_folders(fs, str(enriched), set(), time.time(), 120, 10, RUN_FOLDER)
    assert (scan.ready, scan.handled_through) == ([names[0], names[2]], names[0])
    assert list(scan.unreadable) == [names[1]] and "File name too long" in scan.unreadable[names[1]]
    assert "2 new and ready, 0 not ready yet, 0 without data files, 1 unreadable" in scan.summary()
    found = find_new_folders(fs, str(enriched), set(), time.time(), 120, 10, RUN_FOLDER)
    assert (found.ready, list(found.unreadable)) == ([names[0], names[2]], [names[1]])

    fs.delete(str(blocker))  # mended: the next scan from the cursor takes it
    later = scan_folders(fs, str(enriched), {names[0], names[2]}, time.time(), 120, 10, RUN_FOLDER, names[0])
    assert (later.ready, later.unreadable, later.handled_through) == ([names[1]], {}, names[2])
