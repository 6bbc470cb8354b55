"""The project's git commit when a session starts, kept on the session's first record so a replay
(`loopwright replay`) can rebuild the project as it was. Read from the repository's own files:
no git process starts, so nothing a repository configures runs, and start-up stays fast."""

from __future__ import annotations

import os
import re

from ..core.worktree import work_tree

_SHA = re.compile(r"[0-9a-f]{40}|[0-9a-f]{64}")
_MAX_READ = 1 << 20  # a HEAD or packed-refs larger than this is not a repository we read


def git_start(cwd: str) -> dict[str, str]:
    """`{"gitHead": sha, "gitRoot": work tree}` for the repository holding `cwd`; {} when there
    is none or its HEAD names no commit yet (a new repository, a damaged one)."""
    root = work_tree(os.path.realpath(cwd))
    if root is None:
        return {}
    gitdir = _git_dir(os.path.join(root, ".git"))
    if gitdir is None:
        return {}
    head = _resolve(gitdir, "HEAD", 0)
    return {"gitHead": head, "gitRoot": root} if head is not None else {}


def _git_dir(dot_git: str) -> str | None:
    """`.git` itself, or where a worktree's or submodule's `.git` file points (`gitdir: PATH`)."""
    if os.path.isdir(dot_git):
        return dot_git
    text = _read(dot_git)
    if text is None or not text.startswith("gitdir:"):
        return None
    target = text[len("gitdir:"):].strip()
    return os.path.normpath(os.path.join(os.path.dirname(dot_git), target))


def _resolve(gitdir: str, name: str, depth: int) -> str | None:
    """The commit a ref names: a loose ref (in the worktree's folder, then the common one), a
    packed one, or a symbolic ref followed (at most a few hops, as git does)."""
    if depth > 5:
        return None
    common = gitdir
    pointer = _read(os.path.join(gitdir, "commondir"))
    if pointer is not None:
        common = os.path.normpath(os.path.join(gitdir, pointer.strip()))
    for folder in (gitdir, common):
        text = _read(os.path.join(folder, name))
        if text is None:
            continue
        text = text.strip()
        if text.startswith("ref:"):
            return _resolve(gitdir, text[4:].strip(), depth + 1)
        return text if _SHA.fullmatch(text) else None
    packed = _read(os.path.join(common, "packed-refs")) or ""
    for line in packed.splitlines():
        sha, _, ref = line.partition(" ")
        if ref == name and _SHA.fullmatch(sha):
            return sha
    return None


def _read(path: str) -> str | None:
    try:
        with open(path, "rb") as f:
            data = f.read(_MAX_READ)
    except OSError:
        return None
    return data.decode("utf-8", "replace")
