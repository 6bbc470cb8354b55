"""The scratch copy of the project a replay runs in, so tools really run without touching the
project: the project as it was when the session started where that is known, and today's
configuration (`.claude/`, `.loopwright/`) laid over it, since the replay tests today's loop.

Where the start comes from, best first: the git commit the session recorded (`gitHead`: a clone
checked out there; changes not committed then are not in it), the session's file checkpoints
(today's files, with those the session's Write and Edit changed put back as they were before its
first prompt), else today's files as they are. `Scratch.source` says which."""

from __future__ import annotations

import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

CONFIG_DIRS = (".claude", ".loopwright")
_GIT_ENV = {"GIT_TERMINAL_PROMPT": "0", "GIT_CONFIG_NOSYSTEM": "1", "GIT_OPTIONAL_LOCKS": "0"}


@dataclass(frozen=True)
class Scratch:
    root: Path  # the copy of the project's root (the git work tree, or the recorded cwd)
    cwd: Path  # where the session ran, inside the copy
    old_root: str  # what `root` stands for: paths under it are moved to `root`
    source: str  # how the copy was made, for the report


def make(recording: Any, into: Path, checkpoints: Any = None, here: str | None = None) -> Scratch:
    """Build the copy under `into` (an empty folder). `checkpoints`: the session's checkpoint store.
    `here`: the project to use when the recorded folder is not on this machine (a fixture
    committed to a repository and replayed in CI: the project that holds it)."""
    cwd = recording.cwd
    if not cwd:
        raise ValueError(f"{recording.where}: the session records no working folder")
    head, old_root = recording.git_head, recording.git_root or cwd
    rel = os.path.relpath(cwd, old_root) if _inside(cwd, old_root) else "."
    root, elsewhere = old_root, ""
    if not (os.path.isabs(old_root) and os.path.isdir(old_root)):
        if here is None:
            raise ValueError(f"{recording.where}: its project folder {old_root} is not on this machine; "
                             "run the replay in the project")
        root, rel, elsewhere = os.path.realpath(here), ".", f" (of this folder: the recorded {old_root} is not here)"
    target = into / "project"
    if head and _clone(root, head, target):
        source = (f"git commit {head[:12]} (the project's HEAD when the session started; what was not committed "
                  f"then is not in the copy){elsewhere}")
    else:
        _copy_tree(Path(root), target)
        why = "the commit it started from is not in this repository" if head else "the session recorded no git commit"
        source = f"the project's files as they are now{elsewhere} ({why})"
        if checkpoints is not None and _put_back(checkpoints, root, target):
            source = (f"the project's files as they are now{elsewhere}, with the files the session's Write and Edit "
                      "changed put back from its first checkpoint")
    _overlay_config(Path(root), target)
    work = (target / rel).resolve() if rel != "." else target
    work.mkdir(parents=True, exist_ok=True)
    return Scratch(target, work, old_root, source)


def _inside(path: str, root: str) -> bool:
    return os.path.commonpath([os.path.abspath(path), os.path.abspath(root)]) == os.path.abspath(root)


def _clone(root: str, head: str, target: Path) -> bool:
    """A clone of the repository checked out at `head` (the clone's own configuration is fresh:
    nothing the project's repository configures runs); False when that commit is not there."""
    env = {**os.environ, **_GIT_ENV}
    git = shutil.which("git")
    if git is None or not os.path.exists(os.path.join(root, ".git")):
        return False
    made = subprocess.run([git, "clone", "--quiet", "--no-checkout", "--", root, str(target)], env=env,
                          stdin=subprocess.DEVNULL, capture_output=True)
    if made.returncode != 0:
        shutil.rmtree(target, ignore_errors=True)
        return False
    out = subprocess.run([git, "-c", "advice.detachedHead=false", "checkout", "--quiet", "--detach", head],
                         cwd=target, env=env, stdin=subprocess.DEVNULL, capture_output=True)
    if out.returncode != 0:
        shutil.rmtree(target, ignore_errors=True)
        return False
    return True


def _copy_tree(root: Path, target: Path) -> None:
    shutil.copytree(root, target, symlinks=True)


def _put_back(store: Any, root: str, target: Path) -> bool:
    """Files as the session's first checkpoint kept them (`core.keeping.CheckpointStore`), written
    into the copy; a file that did not exist then is removed. False when there is no checkpoint."""
    from ..core.keeping import KeptFile, Opened

    entries = store.entries()
    first = next((e.number for e in entries if isinstance(e, Opened)), None)
    if first is None:
        return False
    for kept in entries:
        if not isinstance(kept, KeptFile) or kept.number != first or kept.skipped or not _inside(kept.path, root):
            continue
        where = target / os.path.relpath(kept.path, root)
        if kept.blob is None:
            where.unlink(missing_ok=True)
            continue
        where.parent.mkdir(parents=True, exist_ok=True)
        with store.read(kept) as src:
            where.write_bytes(src.read())
    return True


def _overlay_config(root: Path, target: Path) -> None:
    """Today's settings, hooks and rules: the replay checks the loop as it is configured now."""
    for name in CONFIG_DIRS:
        now, copy = root / name, target / name
        if copy.is_symlink() or copy.is_file():
            copy.unlink()
        elif copy.is_dir():
            shutil.rmtree(copy)
        if now.is_dir() and not now.is_symlink():
            shutil.copytree(now, copy, symlinks=True)
