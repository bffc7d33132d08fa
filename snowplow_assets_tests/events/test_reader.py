"""The readers of input folders (enriched run folders, CDC landings) read exactly the files listed."""

import gzip
import re

import pytest

from snowplow_assets.cdc import landing
from snowplow_assets.events import reader
from snowplow_assets.storage import LocalFileSystem

# Each name is a Hadoop glob that, unescaped, would match another file here or none at all.
GLOB_NAMES = ["x*.txt", "xy.txt", "b[1].txt", "b1.txt", "c{1,2}.txt", "c1.txt", "q?.txt", "qq.txt", "back\\slash"]


def lines_read(spark, read, line_column, files):
    return sorted(r[line_column] for r in read(spark, LocalFileSystem(), files).collect())


# fmt: off
READERS = pytest.mark.parametrize(("read", "line_column", "list_files"), [
    (reader.read_lines, "line", reader.run_folder_files),
    (landing.read_lines, "__line", landing.landing_files),
])
# fmt: on


@READERS
def test_a_file_name_is_not_a_glob(spark, tmp_path, read, line_column, list_files):
    folder = tmp_path / "in"
    folder.mkdir()
    for name in GLOB_NAMES:
        (folder / name).write_text(f"line of {name}\n")
    fs = LocalFileSystem()
    files = {f.name: f for f in list_files(fs, str(folder))}
    assert sorted(files) == sorted(GLOB_NAMES)

    assert lines_read(spark, read, line_column, [files["x*.txt"]]) == ["line of x*.txt"], "not xy.txt too"
    assert lines_read(spark, read, line_column, [files["b[1].txt"]]) == ["line of b[1].txt"], "not b1.txt"
    assert lines_read(spark, read, line_column, list(files.values())) == sorted(f"line of {n}" for n in GLOB_NAMES)


@READERS
def test_a_colon_in_a_file_name_is_an_error_naming_the_file(spark, tmp_path, read, line_column, list_files):
    """Hadoop cannot read such a file (URISyntaxException: it takes `a:` for a scheme): the reader says so
    before Spark starts, rather than skip the file and leave its lines uncounted."""
    folder = tmp_path / "in"
    folder.mkdir()
    (folder / "part-0").write_text("kept\n")
    (folder / "a:b.txt").write_text("unreadable\n")
    files = list_files(LocalFileSystem(), str(folder))
    assert [f.name for f in files] == ["a:b.txt", "part-0"], "still a data file: the error is the reader's"
    with pytest.raises(
        ValueError, match=rf"cannot read '{re.escape(str(folder))}/a:b\.txt': .* holds a ':'.*rename the file"
    ):
        read(spark, LocalFileSystem(), files)


@READERS
@pytest.mark.parametrize("suffix", [".bz2", ".snappy", ".lz4", ".deflate", ".zst"])
def test_a_file_another_codec_would_decode_is_an_error_naming_it(
    spark, tmp_path, read, line_column, list_files, suffix
):
    """Hadoop decodes a file by its name: a plain file named `.bz2`, `.snappy` or `.lz4` was read as no line,
    without an error, so its lines were counted nowhere. Lake folders hold plain or `.gz` files."""
    folder = tmp_path / "in"
    folder.mkdir()
    (folder / "part-0.gz.txt").write_text("kept: the name ends in .txt\n")
    (folder / f"part-1{suffix}").write_text("a plain line\n")
    files = list_files(LocalFileSystem(), str(folder))
    with pytest.raises(
        ValueError, match=rf"cannot read '{re.escape(str(folder))}/part-1\{suffix}': .* ends in \{suffix} .*gzip"
    ):
        read(spark, LocalFileSystem(), files)
    assert lines_read(spark, read, line_column, files[:1]) == ["kept: the name ends in .txt"]


@READERS
def test_gzip_data_under_a_name_without_gz_is_an_error_naming_every_such_file(
    spark, tmp_path, read, line_column, list_files
):
    """Hadoop picks the codec by the name alone: such a file's compressed bytes were read as lines, each a bad
    row, and the run succeeded. Writers that compress without saying so in the name exist (Firehose)."""
    folder = tmp_path / "in"
    folder.mkdir()
    (folder / "part-0.gz").write_bytes(gzip.compress(b"named\n"))
    (folder / "part-1").write_text("plain\n")
    (folder / "part-2").write_bytes(b"")
    for name in ("part-3", "part-4.GZ"):
        (folder / name).write_bytes(gzip.compress(b"compressed\n"))
    files = list_files(LocalFileSystem(), str(folder))
    with pytest.raises(
        ValueError,
        match=rf"2 file\(s\) that hold gzip data .*: {re.escape(str(folder))}/part-3, {re.escape(str(folder))}/part-4\.GZ;",
    ):
        read(spark, LocalFileSystem(), files)
    assert lines_read(spark, read, line_column, files[:3]) == ["named", "plain"]
