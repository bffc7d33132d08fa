import os
import time
from pathlib import Path

from snowplow_assets.lake import RUN_FOLDER
from snowplow_assets.run_folders import find_new_folders, readiness
from snowplow_assets.storage import LocalFileSystem


def make(folder: Path, *files: str, age: float = 0.0) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for name in files:
        path = folder / name
        path.write_text("x\n")
        os.utime(path, (time.time() - age, time.time() - age))


def test_readiness_rule(tmp_path):
    fs, now = LocalFileSystem(), time.time()
    make(tmp_path / "marked", "part-0", "_SUCCESS")
    make(tmp_path / "quiet", "part-0", age=600)
    make(tmp_path / "busy", "part-0", age=5)
    make(tmp_path / "empty")
    make(tmp_path / "only-hidden", ".part-0.crc", age=600)
    assert readiness(fs.list_files(str(tmp_path / "marked")), now, 120)[0]
    assert readiness(fs.list_files(str(tmp_path / "quiet")), now, 120)[0]
    assert not readiness(fs.list_files(str(tmp_path / "busy")), now, 120)[0]
    assert not readiness(fs.list_files(str(tmp_path / "empty")), now, 120)[0]
    assert not readiness(fs.list_files(str(tmp_path / "only-hidden")), now, 120)[0]


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

    enriched, fs = tmp_path / "enriched", LocalFileSystem()
    names = [f"run=2026-03-01-0{h}-00-00" for h in range(8)]
    make(enriched / names[0], "part-0", "_SUCCESS")  # registered already
    make(enriched / names[1], "part-0", "_SUCCESS")
    make(enriched / names[2], ".part-0.crc", age=600)  # no data and quiet: empty, passed over
    os.utime(enriched / names[2], (time.time() - 600, time.time() - 600))
    make(enriched / names[3], "part-0", age=600)  # quiet data: ready
    make(enriched / "not-a-run", "part-0")
    make(enriched / names[4], "part-0")  # still changing: waiting
    make(enriched / names[5], "part-0", "_SUCCESS")
    make(enriched / names[6], "part-0", "_SUCCESS")
    make(enriched / names[7], "part-0", "_SUCCESS")

    def scan(start_after=None, limit=10):
        return scan_folders(fs, str(enriched), {names[0]}, time.time(), 120, limit, RUN_FOLDER, start_after)

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
