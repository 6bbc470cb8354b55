"""What the gate learns about the git repository a shell line's git calls would use, asked of
git itself so its configuration is read exactly as git reads it (includes, conditions,
worktrees): the folder it reads and the keys the repository's own configuration sets. Neither
command runs anything a repository configures. The policy judges the facts."""

from __future__ import annotations

import os
import shutil
import subprocess

from ..policy.gitsafe import GitFacts

TIMEOUT_S = 5.0
_REPO_SCOPES = frozenset({"local", "worktree"})


def git_facts(folder: str) -> GitFacts:
    """Facts for git run in `folder` (a real path); an empty answer where git or the folder is
    missing (a git call there cannot read any repository)."""
    git = shutil.which("git")
    if git is None or not os.path.isdir(folder):
        return GitFacts()
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


def _repository_keys(listed: str) -> list[tuple[str, str]]:
    """`git config --list --show-scope -z` prints `scope NUL key LF value NUL` per entry."""
    fields = listed.split("\0")
    out = []
    for scope, entry in zip(fields[0::2], fields[1::2]):
        if scope in _REPO_SCOPES:
            key, _, value = entry.partition("\n")
            out.append((key, value))
    return out
