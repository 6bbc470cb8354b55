"""Path helpers shared by the built-in tools: resolving a tool's path against the session's
working directory, glob patterns (with `**` and `{a,b}`), walking a tree, spotting binary files."""

from __future__ import annotations

import os
from collections.abc import Iterator
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..core.jsonsafe import valid_text
from ..core.ports import ToolContext
from ..core.regex import PatternError, compile_re2

if TYPE_CHECKING:
    from .ignores import Ignored

# Version-control metadata is never what the model is looking for and can be huge.
VCS_DIRS = frozenset({".git", ".hg", ".svn", ".bzr", ".jj", "_darcs"})
BINARY_SNIFF_BYTES = 8192
_MAGIC = frozenset("*?[{")


def resolve_path(p: str | os.PathLike[str], ctx: ToolContext) -> Path:
    """The path to show for a tool's path: `~` expanded, joined to `ctx.cwd`, tidied without
    changing where it leads. Symlinks stay as given, except those before a `..`, which the
    kernel follows before it goes up (`lnk/../f` with `lnk -> /x/sub` is `/x/f`)."""
    return Path(kernel_join(os.path.expanduser(os.fspath(ctx.cwd)), os.path.expanduser(os.fspath(p))))


def real_path(p: str | os.PathLike[str], ctx: ToolContext) -> str:
    """Where a tool's path lands now, every symlink followed (what the permission gate judges)."""
    joined = os.path.join(os.path.expanduser(os.fspath(ctx.cwd)), os.path.expanduser(os.fspath(p)))
    return os.path.realpath(joined)  # never normpath first: it would apply `..` before the symlinks


def kernel_join(base: str, path: str) -> str:
    """`base/path` in its shortest form that still leads where the kernel goes: everything up to
    the last `..` is resolved (symlinks first, then `..`), the rest is only tidied."""
    parts = os.path.join(base, path).split("/")
    if ".." not in parts:
        return os.path.normpath("/".join(parts))
    last = len(parts) - parts[::-1].index("..")
    head = os.path.realpath("/".join(parts[:last]) or "/")
    rest = "/".join(parts[last:])
    return os.path.normpath(os.path.join(head, rest)) if rest else head


def is_binary(head: bytes) -> bool:
    """Text files do not contain NUL bytes; nearly every binary format does early on."""
    return b"\0" in head[:BINARY_SNIFF_BYTES]


def has_magic(segment: str) -> bool:
    return any(c in _MAGIC for c in segment)


class Glob:
    """A compiled glob; `match(path)` says whether the whole path fits. It runs on RE2, in linear
    time: a model's `*a*a*a*a*a*a*a*b` would take Python's `re` hours on one long file name. A
    name that is not UTF-8 is matched as shown to the model (its bytes as `\\xNN`)."""

    __slots__ = ("regex",)

    def __init__(self, regex: Any) -> None:
        self.regex = regex

    def match(self, path: str) -> bool:
        return self.regex.match(valid_text(path)) is not None


@lru_cache(maxsize=256)
def glob_regex(pattern: str) -> Glob:
    """Compile a glob over '/'-separated relative paths: `*` and `?` stay within one segment,
    `**` spans directories, `[...]` is a class, `{a,b}` an alternation."""
    try:
        return Glob(compile_re2(_translate(pattern) + r"\z", dot_all=True))
    except PatternError:  # e.g. a glob too large to compile: it matches nothing, as no file fits it
        return Glob(compile_re2(r"\b\B"))


def _translate(pat: str) -> str:
    out: list[str] = []
    i, n = 0, len(pat)
    while i < n:
        c = pat[i]
        if pat.startswith("**", i) and (i == 0 or pat[i - 1] == "/"):
            if pat.startswith("**/", i):
                out.append("(?:.*/)?")
                i += 3
                continue
            if i + 2 == n:
                out.append(".*")
                i += 2
                continue
        if c == "*":
            out.append("[^/]*")
        elif c == "?":
            out.append("[^/]")
        elif c == "[" and (end := _class_end(pat, i)) > 0:
            out.append(_glob_class(pat[i + 1 : end]))
            i = end
        elif c == "{" and (alts := _brace_alternatives(pat, i)) is not None:
            options, end = alts
            out.append("(?:" + "|".join(_translate(o) for o in options) + ")")
            i = end
        elif c == "\\" and i + 1 < n:
            i += 1
            out.append(_literal(pat[i]))
        else:
            out.append(_literal(c))
        i += 1
    return "".join(out)


def _literal(c: str) -> str:
    return c if c.isalnum() or c == "_" else f"\\x{{{ord(c):x}}}"


def _glob_class(body: str) -> str:
    """`[...]` for RE2, never matching `/` (a class stays within one path segment)."""
    if body[:1] in ("!", "^"):
        return "[^/" + "".join(_literal(c) for c in body[1:]) + "]"
    members, j = [], 0
    while j < len(body):
        low, high = body[j], body[j]
        if j + 2 < len(body) and body[j + 1] == "-":
            high, j = body[j + 2], j + 2
        j += 1
        for a, b in ((low, min(high, ".")), (max(low, "0"), high)) if low <= "/" <= high else ((low, high),):
            if a <= b:
                members.append(_literal(a) if a == b else f"{_literal(a)}-{_literal(b)}")
    return "[" + "".join(members) + "]" if members else r"\b\B"  # nothing but `/`: matches nothing


def _class_end(pat: str, start: int) -> int:
    """Index of the `]` closing the class opened at `start`, or -1 (then `[` is literal)."""
    j = start + 1
    if j < len(pat) and pat[j] in "!^":
        j += 1
    if j < len(pat) and pat[j] == "]":  # a leading ']' is a member, not the end
        j += 1
    end = pat.find("]", j)
    return end


def _brace_alternatives(pat: str, start: int) -> tuple[list[str], int] | None:
    """Split `{a,b{c,d}}` at its top-level commas; None when unbalanced or without a comma."""
    depth, parts, last = 0, [], start + 1
    for j in range(start, len(pat)):
        ch = pat[j]
        if ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
            if depth == 0:
                parts.append(pat[last:j])
                return (parts, j) if len(parts) > 1 else None
        elif ch == "," and depth == 1:
            parts.append(pat[last:j])
            last = j + 1
    return None


def split_glob(base: Path, pattern: str) -> tuple[Path, str]:
    """Move the pattern's leading literal directories into the base, so a search for
    `src/**/*.py` walks only `src`. An absolute pattern gets its own base."""
    pattern = os.path.expanduser(pattern)
    if os.path.isabs(pattern):
        base, pattern = Path(os.path.abspath(os.sep)), pattern.lstrip("/")
    segments = pattern.split("/")
    literal: list[str] = []
    while len(segments) > 1 and not has_magic(segments[0]):
        literal.append(segments.pop(0))
    start = Path(kernel_join(os.fspath(base), "/".join(literal))) if literal else base
    return start, "/".join(segments)


def walk_files(root: Path, max_depth: int | None = None, ignored: Ignored | None = None) -> Iterator[tuple[Path, str]]:
    """Yield (path, path relative to root with '/') for every file under `root`, skipping
    version-control directories, what `ignored` leaves out (tools/ignores), and not following
    directory symlinks (no cycles)."""
    for dirpath, dirnames, filenames in os.walk(root, onerror=lambda _e: None):
        rel_dir = os.path.relpath(dirpath, root)
        prefix = "" if rel_dir == "." else rel_dir.replace(os.sep, "/") + "/"
        depth = prefix.count("/")
        if max_depth is not None and depth + 1 >= max_depth:
            dirnames.clear()
        else:
            dirnames[:] = [d for d in dirnames if d not in VCS_DIRS]
            if ignored is not None:
                dirnames[:] = ignored.folders(dirpath, dirnames)
        for name in filenames:
            if ignored is None or not ignored.file(dirpath, name):
                yield Path(dirpath, name), prefix + name


def mtime_or_zero(path: Path) -> float:
    try:
        return path.stat().st_mtime
    except OSError:
        return 0.0


def newest_first(paths: list[Path]) -> list[Path]:
    """Most recently modified first (what the model most likely wants); ties by path."""
    keyed = [(mtime_or_zero(p), str(p)) for p in paths]
    keyed.sort(key=lambda k: (-k[0], k[1]))
    return [Path(k[1]) for k in keyed]
