"""Where a git work tree starts: the nearest folder at or above a path that holds a `.git` entry
(a folder, or a worktree's or submodule's `.git` file), found without starting git."""

from __future__ import annotations

import os

__all__ = ["work_tree"]


def work_tree(folder: str) -> str | None:
    """The nearest folder at or above `folder` with a `.git` entry; None outside any."""
    while True:
        if os.path.lexists(os.path.join(folder, ".git")):
            return folder
        parent = os.path.dirname(folder)
        if parent == folder:
            return None
        folder = parent
