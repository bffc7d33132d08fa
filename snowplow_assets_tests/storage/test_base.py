"""What the file systems share (storage/base.py): telling a read of a file that is gone from other errors, and
the paths Spark reads."""

import pytest

from snowplow_assets.cdc.history import LostHistory
from snowplow_assets.storage import LocalFileSystem, failed_on_a_gone_file


def test_a_spark_read_of_a_gone_file_is_told_from_other_errors(spark, tmp_path):
    (tmp_path / "a.txt").write_text("line\n")
    lines = spark.read.text(LocalFileSystem().spark_read_path(str(tmp_path / "a.txt")))
    (tmp_path / "a.txt").unlink()  # listed when the plan was made, gone when it runs
    with pytest.raises(Exception) as gone:
        lines.collect()
    assert failed_on_a_gone_file(gone.value)
    with pytest.raises(Exception) as other:
        spark.sql("SELECT assert_true(false)").collect()
    assert not failed_on_a_gone_file(other.value)


def test_python_errors_of_gone_files_count_and_others_do_not():
    assert failed_on_a_gone_file(FileNotFoundError("x")) and failed_on_a_gone_file(LostHistory("history gone"))
    assert not failed_on_a_gone_file(PermissionError("x")) and not failed_on_a_gone_file(ValueError("a file"))


def test_a_path_spark_reads_is_not_a_glob(spark, tmp_path):
    # Unescaped, the lake's name is a glob that matches both other folders and not itself: `[1]` matches `1`,
    # `{a,b}` `a` or `b`, `?` and `*` any character, `\\x` an `x`.
    lake = tmp_path / "lake [1]{a,b}?*\\x"
    for folder, line in ((lake, "read"), (tmp_path / "lake 1a-x", "not read"), (tmp_path / "lake 1bzzx", "not read")):
        folder.mkdir()
        (folder / "part-0").write_text(line + "\n")
    fs = LocalFileSystem()
    assert [r.value for r in spark.read.text(fs.spark_read_path(str(lake))).collect()] == ["read"]
    assert [r.value for r in spark.read.text(fs.spark_file_path(str(lake / "part-0"))).collect()] == ["read"]
