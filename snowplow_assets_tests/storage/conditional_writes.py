"""The contract of `write_text_if_unchanged` that every storage backend keeps; test_local.py and test_s3.py
run it against theirs."""

import pytest

from snowplow_assets.storage import FileChangedSinceRead, LakeFileSystem


def only_the_first_of_two_writers_writes(fs: LakeFileSystem, index: str) -> None:
    """Two writers read the same version: the first writes, the second is refused and writes nothing, and
    decides again on what it reads next."""
    fs.write_text(index, "read by both")
    (text, first), (_, second) = fs.read_text_with_token(index), fs.read_text_with_token(index)
    assert text == "read by both" and first == second

    fs.write_text_if_unchanged(index, "the first's", first)
    with pytest.raises(FileChangedSinceRead, match=r"batches\.json changed since it was read; nothing was written"):
        fs.write_text_if_unchanged(index, "the second's", second)
    assert fs.read_text_with_token(index)[0] == "the first's"
    fs.write_text_if_unchanged(index, "the second's, decided again", fs.read_text_with_token(index)[1])
    assert fs.read_text(index) == "the second's, decided again"


def a_create_succeeds_once_and_a_file_deleted_since_it_was_read_has_changed(fs: LakeFileSystem, index: str) -> None:
    assert fs.read_text_with_token(index) == (None, None)
    fs.write_text_if_unchanged(index, "the first's", None)
    with pytest.raises(FileChangedSinceRead):
        fs.write_text_if_unchanged(index, "the second's", None)
    assert fs.read_text(index) == "the first's"

    _, token = fs.read_text_with_token(index)
    fs.delete(index)
    with pytest.raises(FileChangedSinceRead):
        fs.write_text_if_unchanged(index, "over a deleted file", token)
    assert not fs.exists(index)
