"""Paths in permission rules (gitignore-style, anchored as Claude Code anchors them), writable
roots and protected paths. Pure string work: callers pass absolute paths already resolved."""

from __future__ import annotations

import posixpath
import re
from functools import lru_cache

from ..core.fastclass import dataclass
from ..core.protected import PROTECTED_DIRS, PROTECTED_FILES, PROTECTED_UNDER_CONFIG  # shared with the sandbox

__all__ = ["Places", "anchor", "in_own_home", "in_roots", "inside", "matches", "protected", "rule_prefix"]

_EXEMPT = ((".claude", "worktrees"),)  # Claude Code lets agents write their worktrees


@dataclass(frozen=True, slots=True)
class Places:
    """Where a call happens, as real absolute paths: the working directory, the roots (cwd
    first, then the added directories: writable and readable) and the home directory. `own` is
    loopwright's own home (transcripts, schedules): never read or written by a tool unless a
    rule names it, even when it lies inside a root."""

    cwd: str
    roots: tuple[str, ...]
    home: str
    own: str = ""


def inside(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip("/") + "/")


def in_roots(path: str, places: Places) -> bool:
    return any(inside(path, root) for root in places.roots)


def in_own_home(path: str, places: Places) -> bool:
    """Whether `path` lies in loopwright's own home, outside any root that is itself there
    (working in a folder under the home makes that folder an ordinary root)."""
    if not places.own or not inside(path, places.own):
        return False
    return not any(inside(root, places.own) and inside(path, root) for root in places.roots)


def protected(path: str) -> bool:
    """Whether a write to `path` touches a protected directory or file (case-folded, so a
    case-insensitive filesystem cannot be used to dodge it)."""
    parts = [p.lower() for p in path.split("/") if p]
    for k, part in enumerate(parts):
        if part in PROTECTED_DIRS and tuple(parts[k:k + 2]) not in _EXEMPT:
            return True
        if part == ".config" and k + 1 < len(parts) and parts[k + 1] in PROTECTED_UNDER_CONFIG:
            return True
    return bool(parts) and parts[-1] in PROTECTED_FILES


def anchor(spec: str, places: Places, *, anywhere: bool, root: str | None = None) -> str:
    """An absolute gitignore-style pattern for a rule's path: `//x` is absolute, `~/x` under
    home, `/x` under the settings root (the cwd when none), `./x` and `a/b` under the cwd.
    A bare name (`.env`, `*.key`, `secrets/**`) matches at any depth when `anywhere`
    (deny and ask rules) and under the cwd otherwise."""
    if spec.startswith("//"):
        return posixpath.normpath(spec[1:])
    if spec == "~" or spec.startswith("~/"):
        return posixpath.normpath(places.home + spec[1:])
    if spec.startswith("/"):
        return posixpath.normpath((root or places.cwd) + spec)
    if spec.startswith("./"):
        return posixpath.normpath(posixpath.join(places.cwd, spec[2:]))
    core = spec[:-3] if spec.endswith("/**") else spec.rstrip("/")
    if anywhere and "/" not in core:
        return "/**/" + spec
    return posixpath.normpath(posixpath.join(places.cwd, spec)) + ("/" if spec.endswith("/") else "")


def matches(pattern: str, path: str) -> bool:
    """gitignore semantics: the pattern matches the path or one of its parent directories
    (so `Edit(.git)` covers everything inside it). One match: the pattern followed by any
    `/...` tail is exactly "a parent matches" (a search meets thousands of paths)."""
    if pattern == "/":
        return path.startswith("/")
    return bool(_below(pattern.rstrip("/")).fullmatch(path))


@lru_cache(maxsize=512)
def _below(pattern: str) -> re.Pattern[str]:
    return re.compile("(?:" + _regex(pattern).pattern + ")(?:/.*)?", re.DOTALL)


def rule_prefix(pattern: str) -> str:
    """The literal directory a pattern starts with (`/a/b/**/*.py` -> `/a/b`): a search rooted
    above it may read what the pattern names."""
    out = []
    for seg in pattern.split("/"):
        if any(c in seg for c in "*?[{"):
            break
        out.append(seg)
    return "/".join(out) or "/"


@lru_cache(maxsize=512)
def _regex(pattern: str) -> re.Pattern[str]:
    out, i, n = [], 0, len(pattern)
    while i < n:
        if pattern.startswith("/**/", i):
            out.append("(?:/.*)?/")
            i += 4
        elif pattern.startswith("/**", i) and i + 3 == n:
            out.append("(?:/.*)?")
            i += 3
        elif pattern.startswith("**", i):
            out.append(".*")
            i += 2
        elif pattern[i] == "*":
            out.append("[^/]*")
            i += 1
        elif pattern[i] == "?":
            out.append("[^/]")
            i += 1
        elif pattern[i] == "[" and (end := pattern.find("]", i + 2)) > 0:
            body = pattern[i + 1:end]
            out.append("[" + ("^" + body[1:] if body[:1] in "!^" else body).replace("\\", "\\\\") + "]")
            i = end + 1
        else:
            out.append(re.escape(pattern[i]))
            i += 1
    return re.compile("".join(out), re.DOTALL)
