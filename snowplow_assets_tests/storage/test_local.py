import pytest

from snowplow_assets.storage import LocalFileSystem


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
    assert fs.spark_path(str(tmp_path / "run=x")) == f"file://{tmp_path}/run=x"
