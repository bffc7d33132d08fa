import errno
import os
import stat
import subprocess
from concurrent.futures import ThreadPoolExecutor

import pytest

from snowplow_assets.storage import (
    FileChangedSinceRead,
    FileEntry,
    LocalFileSystem,
    data_files,
    path_below,
    publishing_order,
    retired_copy_of,
)
from snowplow_assets.storage.local import _entry, _file_entry
from snowplow_assets_tests.storage.conditional_writes import (
    a_create_succeeds_once_and_a_file_deleted_since_it_was_read_has_changed,
    only_the_first_of_two_writers_writes,
)
from snowplow_assets_tests.storage.unreadable import make_unreadable_sub_folder


def test_replace_tree_swaps_whole_folders(tmp_path):
    fs = LocalFileSystem()
    old, new = tmp_path / "target", tmp_path / "staged"
    old.mkdir(), new.mkdir()
    (old / "part-old").write_text("old")
    (new / "part-new").write_text("new")
    fs.replace_tree(str(new), str(old))
    assert sorted(p.name for p in old.iterdir()) == ["part-new"]
    assert not new.exists()
    assert [p.name for p in tmp_path.iterdir()] == ["target"], "the retired folder must be removed"


def test_move_refuses_to_overwrite(tmp_path):
    fs = LocalFileSystem()
    (tmp_path / "a").mkdir(), (tmp_path / "b").mkdir()
    with pytest.raises(FileExistsError):
        fs.move(str(tmp_path / "a"), str(tmp_path / "b"))


def test_write_text_is_whole_or_nothing(tmp_path):
    fs = LocalFileSystem()
    target = tmp_path / "deep" / "marker.json"
    fs.write_text(str(target), "{}")
    fs.write_text(str(target), '{"v": 2}')
    assert target.read_text() == '{"v": 2}'
    assert [p.name for p in target.parent.iterdir()] == ["marker.json"]


def test_of_two_writers_that_read_the_same_version_only_the_first_writes(tmp_path):
    folder = tmp_path / "event-manifest"
    only_the_first_of_two_writers_writes(LocalFileSystem(), str(folder / "batches.json"))
    # The lock file beside it is hidden from readers of the folder's data.
    assert sorted(p.name for p in folder.iterdir()) == [".batches.json.lock", "batches.json"]
    assert [f.name for f in data_files(str(folder), LocalFileSystem().list_files(str(folder)))] == ["batches.json"]


def test_a_conditional_create_succeeds_once_and_a_file_deleted_since_it_was_read_has_changed(tmp_path):
    # The folder is made, as write_text makes it.
    a_create_succeeds_once_and_a_file_deleted_since_it_was_read_has_changed(
        LocalFileSystem(), str(tmp_path / "new" / "batches.json")
    )


def test_conditional_writers_at_once_lose_no_write(tmp_path):
    """Threads add one to a counter each, reading it and writing it conditionally until a write succeeds:
    every write that succeeded counts. Were a comparison and its replace two steps, two writers that compared
    the same version would both write, and a count would be lost. Threads exclude each other as processes
    do: every write opens the lock file anew, and a `flock` belongs to the open file."""
    fs = LocalFileSystem()
    counter = str(tmp_path / "counter")
    fs.write_text(counter, "0")

    def add_one(_: int) -> int:
        for lost in range(1000):
            text, token = fs.read_text_with_token(counter)
            try:
                fs.write_text_if_unchanged(counter, str(int(text) + 1), token)
                return lost
            except FileChangedSinceRead:
                continue
        raise AssertionError("never won")

    with ThreadPoolExecutor(8) as pool:
        lost = list(pool.map(add_one, range(400)))
    assert fs.read_text(counter) == "400"
    assert sum(lost) > 0, "the writers raced"


def test_open_binary_streams_the_bytes(tmp_path):
    fs = LocalFileSystem()
    (tmp_path / "part-0").write_bytes(b"a\nb\n")
    with fs.open_binary(str(tmp_path / "part-0")) as stream:
        assert stream.read(2) == b"a\n" and stream.read() == b"b\n"
    with pytest.raises(FileNotFoundError):
        fs.open_binary(str(tmp_path / "missing"))


def test_listing(tmp_path):
    fs = LocalFileSystem()
    (tmp_path / "d" / "sub").mkdir(parents=True)
    (tmp_path / "d" / "sub" / "f").write_text("abc")
    (tmp_path / "d" / "g").write_text("x")
    assert [e.name for e in fs.list_dir(str(tmp_path / "d"))] == ["g", "sub"]
    assert [(e.name, e.size) for e in fs.list_files(str(tmp_path / "d"))] == [("g", 1), ("f", 3)]
    assert fs.list_dir(str(tmp_path / "missing")) == []
    assert [e.name for e in fs.list_dir(str(tmp_path / "d"), prefix="s")] == ["sub"]
    assert fs.spark_path(str(tmp_path / "run=x")) == f"file://{tmp_path}/run=x"


class _KilledAfterMovingAside(LocalFileSystem):
    def move(self, source: str, target: str) -> None:
        super().move(source, target)
        if retired_copy_of(target.rsplit("/", 1)[-1]) is not None:
            raise KeyboardInterrupt("killed between the two renames")


def test_a_swap_cut_short_leaves_a_hidden_old_copy_that_the_next_swap_removes(tmp_path):
    """The old copy a killed swap leaves is hidden, so neither Spark nor a loader listing `run=*` folders
    takes it for a folder of the lake; the next swap of the same folder removes it, and the copies that
    swaps named before the dot left, but no other folder's."""
    good = tmp_path / "good"
    for folder in ("run=1", "staged-1", "staged-2", "run=10.replaced-0123456789ab", "run=1.replaced-abcdef012345"):
        (good / folder).mkdir(parents=True)
        (good / folder / "part-0").write_text(folder)
    with pytest.raises(KeyboardInterrupt):
        _KilledAfterMovingAside().replace_tree(str(good / "staged-1"), str(good / "run=1"))
    hidden = [p.name for p in good.iterdir() if p.name.startswith(".")]
    assert len(hidden) == 1 and retired_copy_of(hidden[0]) == "run=1" and hidden[0].startswith(".run=1.replaced-")
    assert not (good / "run=1").exists(), "killed before the new folder went in"

    fs = LocalFileSystem()
    fs.replace_tree(str(good / "staged-2"), str(good / "run=1"))
    assert sorted(p.name for p in good.iterdir()) == ["run=1", "run=10.replaced-0123456789ab", "staged-1"]
    assert (good / "run=1" / "part-0").read_text() == "staged-2"
    assert fs.retired_copies(str(good / "run=10")) == [fs.list_dir(str(good), prefix="run=10.")[0]]


def test_a_file_gone_between_listing_and_stat_is_not_listed(tmp_path):
    """A listing reads names, then each file's size and time: a writer renaming its output in between (a
    committer moving part files into place) leaves a name whose stat fails. Both steps are taken here in turn
    with a real rename between them."""
    folder = tmp_path / "run=2026-01-01-00-00-00"
    (folder / "_temporary").mkdir(parents=True)
    (folder / "_temporary" / "part-0").write_text("x")
    (folder / "part-1").write_text("y")
    scanned = {e.name: e for e in os.scandir(folder)}
    os.rename(folder / "_temporary" / "part-0", folder / "part-0")
    os.rename(folder / "_temporary", folder / "_committed")
    os.rename(folder / "part-1", folder / "part-9")

    assert _entry(scanned["_temporary"]) is None, "a folder renamed since the scan"
    assert _entry(scanned["part-1"]) is None, "a file renamed since the scan"
    assert _file_entry(str(folder / "_temporary" / "part-0"), "part-0") is None
    stat = (folder / "part-0").stat()
    assert _file_entry(str(folder / "part-0"), "part-0") == FileEntry(
        str(folder / "part-0"), "part-0", False, 1, stat.st_mtime, stat.st_ctime
    )
    fs = LocalFileSystem()
    assert [e.name for e in fs.list_dir(str(folder))] == ["_committed", "part-0", "part-9"]
    assert [e.name for e in fs.list_files(str(folder))] == ["part-0", "part-9"]


@pytest.mark.parametrize(("umask", "mode"), [(0o022, 0o644), (0o027, 0o640), (0o077, 0o600)])
def test_write_text_gives_the_mode_the_umask_gives_new_files(tmp_path, umask, mode):
    """Markers and indexes are as readable as the part files Spark writes beside them."""
    fs = LocalFileSystem()
    previous = os.umask(umask)
    try:
        fs.write_text(str(tmp_path / "new.json"), "{}")
        (tmp_path / "old.json").write_text("{}")
        os.chmod(tmp_path / "old.json", 0o600)
        fs.write_text(str(tmp_path / "old.json"), '{"v": 2}')
        (tmp_path / "plain").touch()
    finally:
        os.umask(previous)
    assert stat.S_IMODE((tmp_path / "plain").stat().st_mode) == mode
    assert stat.S_IMODE((tmp_path / "new.json").stat().st_mode) == mode
    assert stat.S_IMODE((tmp_path / "old.json").stat().st_mode) == mode, "a replaced file is a new file"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["new.json", "old.json", "plain"]


def test_spark_reads_a_listed_file_by_its_exact_name(tmp_path):
    fs = LocalFileSystem()
    assert fs.spark_file_path("/lake/run=a/x*.txt") == r"file:///lake/run=a/x\*.txt"
    assert fs.spark_file_path("/lake/[b]/c{1,2}?\\d") == r"file:///lake/\[b\]/c\{1,2\}\?\\d"
    assert fs.spark_file_path("/lake/x:y/part-0") == "file:///lake/x:y/part-0", "a colon in a folder reads"
    with pytest.raises(ValueError, match=r"cannot read '/lake/run=a/a:b\.txt': .* holds a ':'"):
        fs.spark_file_path("/lake/run=a/a:b.txt")


def test_publishing_order_puts_every_folders_markers_after_the_rest_of_it():
    paths = [
        "_batch.json", "deleted/part-0", "rows/_SUCCESS", "rows/part-0", "rows/sub/part-1",
        "_latest.json", "part-00000.parquet", ".hidden", "_temporary/0/part-2", "a/_m", "a/b/_m", "a/b/z",
    ]  # fmt: skip
    assert sorted(paths, key=publishing_order) == [
        "_temporary/0/part-2", "a/b/z", "a/b/_m", "a/_m", "deleted/part-0", "part-00000.parquet",
        "rows/part-0", "rows/sub/part-1", "rows/_SUCCESS", ".hidden", "_batch.json", "_latest.json",
    ]  # fmt: skip


def test_a_sub_folder_that_cannot_be_read_fails_the_listing_instead_of_being_passed_over(tmp_path):
    """os.walk passes over a sub-folder it cannot read unless told otherwise, and a run would then process the
    folder without its files."""
    folder = tmp_path / "run=2026-01-01-00-00-00"
    folder.mkdir()
    (folder / "part-0").write_text("x")
    make_unreadable_sub_folder(folder)
    assert [name for _, _, files in os.walk(folder) for name in files] == ["part-0"], "what os.walk alone lists"
    with pytest.raises(OSError) as unreadable:
        LocalFileSystem().list_files(str(folder))
    assert unreadable.value.errno == errno.ENAMETOOLONG
    assert LocalFileSystem().list_files(str(tmp_path / "missing")) == []
    assert LocalFileSystem().list_files(str(folder / "part-0")) == [], "a file where a folder was named"


def test_linked_sub_folders_are_listed_and_a_folder_reached_twice_once(tmp_path):
    """A run folder assembled from links is read whole, as Hadoop reads it: os.walk's default passed over a
    linked sub-folder, and its run shredded half the lines and marked the folder Processed. A link back up the
    tree ends, and a folder linked twice is listed once, by its first path in name order."""
    elsewhere = tmp_path / "incoming" / "batch"
    elsewhere.mkdir(parents=True)
    (elsewhere / "part-1").write_text("x")
    folder = tmp_path / "run=2026-01-01-00-00-00"
    folder.mkdir()
    (folder / "part-0").write_text("x")
    (folder / "more").symlink_to(elsewhere)
    (folder / "same").symlink_to(elsewhere)
    (folder / "more" / "up").symlink_to(folder)  # a loop, through the link

    listed = [path_below(str(folder), e) for e in LocalFileSystem().list_files(str(folder))]
    assert listed == ["more/part-1", "part-0"]


def test_delete_raises_on_a_file_it_leaves_and_removes_the_trees_markers_first(tmp_path):
    """The contract: a file left in place is an error. `rmtree(ignore_errors=True)` left it silently, and a
    web-model day that could not be dropped was reported dropped, its part file still read."""
    day = tmp_path / "page_views" / "day=2026-03-01"
    day.mkdir(parents=True)
    for name in ("part-0.parquet", "part-1.parquet", "_SUCCESS"):
        (day / name).write_text("x")
    stuck = day / "part-1.parquet"
    if subprocess.run(["chattr", "+i", str(stuck)], capture_output=True).returncode != 0:  # root: immutable
        os.chmod(day, 0o555)  # another user: a folder whose entries cannot be removed
        if os.access(day, os.W_OK):
            pytest.skip("no way to make a file undeletable here: chattr refused and permissions do not bind")
    try:
        with pytest.raises(PermissionError, match="part-1.parquet"):
            LocalFileSystem().delete(str(day))
        remaining = sorted(os.listdir(day))
    finally:
        subprocess.run(["chattr", "-i", str(stuck)], capture_output=True)
        os.chmod(day, 0o755)
    assert "_SUCCESS" not in remaining and "part-1.parquet" in remaining, "the marker went before the data"
    LocalFileSystem().delete(str(day))
    LocalFileSystem().delete(str(day))  # a path gone is no error
    assert not day.exists()
