"""A local sub-folder that no user can read, root included, whom permissions would not stop: one so deep that
its path is longer than the system takes (PATH_MAX), so that listing it fails with ENAMETOOLONG."""

import os
from pathlib import Path

DEPTH, NAME = 20, "d" * 250  # 20 names of 250 characters: beyond the 4,096 bytes of a path


def make_unreadable_sub_folder(folder: Path) -> Path:
    """Create, below `folder`, a chain of sub-folders too deep to list by path, a file at its bottom; return the
    chain's first folder (delete it to make `folder` readable again)."""
    folder.mkdir(parents=True, exist_ok=True)
    fd = os.open(folder, os.O_RDONLY)
    try:
        for _ in range(DEPTH):
            os.mkdir(NAME, dir_fd=fd)
            deeper = os.open(NAME, os.O_RDONLY, dir_fd=fd)
            os.close(fd)
            fd = deeper
        os.close(os.open("part-1", os.O_CREAT | os.O_WRONLY, dir_fd=fd))
    finally:
        os.close(fd)
    return folder / NAME
