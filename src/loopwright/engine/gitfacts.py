"""What the gate learns about the git repository a shell line's git calls would use, asked of
git itself so its configuration is read exactly as git reads it (includes, conditions,
worktrees): the folder it reads and the keys the repository's own configuration sets. Neither
command runs anything a repository configures. The policy judges the facts."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from functools import lru_cache

from ..permissions.bash.git_config import GitFacts

TIMEOUT_S = 5.0
# GIT_CONFIG_COUNT (the overrides) came in git 2.31; --show-scope in 2.26.
NEEDS = (2, 31)
_REPO_SCOPES = frozenset({"local", "worktree"})


def git_facts(folder: str) -> GitFacts:
    """Facts for git run in `folder` (a real path; one the line creates first is judged by the
    nearest folder that exists, where git would look next); empty where git is missing."""
    git = shutil.which("git")
    if git is None:
        return GitFacts()
    while not os.path.isdir(folder) and os.path.dirname(folder) != folder:
        folder = os.path.dirname(folder)
    version = _version(git, os.stat(git).st_mtime_ns)
    if version < NEEDS:
        return GitFacts(error=f"git {'.'.join(map(str, version))} is older than 2.31, which the overrides need")
    env = {**os.environ, "GIT_TERMINAL_PROMPT": "0", "GIT_OPTIONAL_LOCKS": "0"}
    commands = ([git, "rev-parse", "--absolute-git-dir", "--show-toplevel"],
                [git, "config", "--list", "--show-scope", "-z"])
    procs: list[subprocess.Popen[bytes]] = []
    try:
        for argv in commands:
            procs.append(subprocess.Popen(argv, cwd=folder, env=env, stdin=subprocess.DEVNULL,
                                          stdout=subprocess.PIPE, stderr=subprocess.PIPE))
        (found, _), (listed, problem) = (proc.communicate(timeout=TIMEOUT_S) for proc in procs)
    except (OSError, subprocess.TimeoutExpired) as exc:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        return GitFacts(error=f"git could not be asked: {exc}")
    lines = found.decode(errors="replace").splitlines()
    if not lines:
        return GitFacts()  # not a repository (or one git refuses): git calls there read none
    top = lines[1] if len(lines) > 1 else lines[0]  # a bare repository: its git directory
    if procs[1].returncode != 0:
        return GitFacts(top, error=problem.decode(errors="replace").strip()[:200] or "git config failed")
    return GitFacts(top, tuple(_repository_keys(listed.decode(errors="replace"))))


@lru_cache(maxsize=4)
def _version(git: str, _mtime: int) -> tuple[int, ...]:
    """The version of the git at `git` (asked once per binary and modification time)."""
    try:
        out = subprocess.run([git, "version"], capture_output=True, text=True, timeout=TIMEOUT_S).stdout
    except (OSError, subprocess.TimeoutExpired):
        return (0,)
    found = re.search(r"(\d+)\.(\d+)", out)
    return (int(found[1]), int(found[2])) if found else (0,)


def _repository_keys(listed: str) -> list[tuple[str, str]]:
    """`git config --list --show-scope -z` prints `scope NUL key LF value NUL` per entry."""
    fields = listed.split("\0")
    out = []
    for scope, entry in zip(fields[0::2], fields[1::2]):
        if scope in _REPO_SCOPES:
            key, _, value = entry.partition("\n")
            out.append((key, value))
    return out
