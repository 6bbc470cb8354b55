"""What Grep and Glob leave out, as ripgrep does by default: what `.gitignore` and `.ignore`
files exclude (each applying below its own folder, the deeper one deciding), the repository's
`info/exclude` and git's global excludes file, and hidden folders. The search root itself is
never left out, so a path that names an ignored place searches it. Patterns come from the
repository: they are compiled for RE2 (linear time), and a file's patterns are capped."""

from __future__ import annotations

import os
import subprocess
from functools import lru_cache
from typing import Any

from ..core.regex import PatternError, compile_re2
from ..core.worktree import work_tree

IGNORE_FILES = (".gitignore", ".ignore")  # later ones decide over earlier ones in the same folder
MAX_IGNORE_BYTES = 1 << 20
MAX_PATTERNS = 5000


class Rule:
    __slots__ = ("regex", "negated", "dir_only")

    def __init__(self, regex: Any, negated: bool, dir_only: bool) -> None:
        self.regex, self.negated, self.dir_only = regex, negated, dir_only


def parse(text: str) -> list[Rule]:
    """The rules of one ignore file, in order (the last that matches a path decides)."""
    rules: list[Rule] = []
    for raw in text.splitlines()[:MAX_PATTERNS]:
        line = _strip_trailing_spaces(raw)
        if not line or line.startswith("#"):
            continue
        negated = line.startswith("!")
        if negated or line.startswith("\\!") or line.startswith("\\#"):
            line = line[1:]
        dir_only = line.endswith("/")
        line = line.rstrip("/")
        if not line:
            continue
        anchored = "/" in line
        body = line.lstrip("/")
        prefix = "" if anchored else "(?:.*/)?"
        try:
            regex = compile_re2(prefix + _translate(body) + r"\z", dot_all=True)
        except PatternError:
            continue  # git skips what it cannot read too
        rules.append(Rule(regex, negated, dir_only))
    return rules


def _strip_trailing_spaces(line: str) -> str:
    stripped = line.rstrip(" ")
    if stripped.endswith("\\") and len(stripped) < len(line):
        return stripped + " "  # "\ " keeps one space
    return stripped


def _translate(pat: str) -> str:
    out: list[str] = []
    i, n = 0, len(pat)
    while i < n:
        c = pat[i]
        if pat.startswith("**", i) and (i == 0 or pat[i - 1] == "/") and (i + 2 == n or pat[i + 2] == "/"):
            if i + 2 == n:
                out.append(".*")  # `a/**`: everything inside
                i += 2
            else:
                out.append("(?:.*/)?")  # `**/` and `/**/`: zero or more folders
                i += 3
            continue
        if c == "*":
            out.append("[^/]*")
        elif c == "?":
            out.append("[^/]")
        elif c == "\\" and i + 1 < n:
            i += 1
            out.append(_escape(pat[i]))
        elif c == "[" and (end := pat.find("]", i + 2)) > 0:
            inner = pat[i + 1:end]
            negate = inner[:1] in ("!", "^")
            inner = inner[1:] if negate else inner
            chars = "".join("\\" + ch if ch in "\\^[]" else ch for ch in inner)
            out.append(f"[{'^' if negate else ''}{chars}]" if chars else "[^/]")
            i = end
        else:
            out.append(_escape(c))
        i += 1
    return "".join(out)


def _escape(c: str) -> str:
    return "\\" + c if not c.isalnum() and c != "_" and ord(c) < 128 else c


@lru_cache(maxsize=1024)
def _rules_of(path: str, mtime_ns: int, size: int) -> tuple[Rule, ...]:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | getattr(os, "O_NONBLOCK", 0))
    except OSError:
        return ()
    try:
        with os.fdopen(fd, "rb") as f:
            data = f.read(MAX_IGNORE_BYTES)
    except OSError:
        return ()
    return tuple(parse(data.decode("utf-8", "replace")))


def _read(path: str) -> tuple[Rule, ...]:
    try:
        st = os.lstat(path)
    except OSError:
        return ()
    import stat

    if not stat.S_ISREG(st.st_mode):
        return ()  # a link, FIFO or device named .gitignore is not read
    return _rules_of(path, st.st_mtime_ns, st.st_size)


@lru_cache(maxsize=1)
def _global_excludes_file() -> str | None:
    """git's `core.excludesFile`, or its default `$XDG_CONFIG_HOME/git/ignore`."""
    try:
        done = subprocess.run(["git", "config", "--global", "--path", "--get", "core.excludesFile"],
                              capture_output=True, text=True, timeout=5, stdin=subprocess.DEVNULL,
                              env={**os.environ, "GIT_CONFIG_NOSYSTEM": "1"})
        named = done.stdout.strip() if done.returncode == 0 else ""
    except (OSError, subprocess.SubprocessError):
        named = ""
    if named:
        return os.path.expanduser(named)
    config = os.environ.get("XDG_CONFIG_HOME") or os.path.join(os.path.expanduser("~"), ".config")
    return os.path.join(config, "git", "ignore")


class Ignored:
    """Decides, during one walk from `root`, which folders and files are left out; counts them."""

    def __init__(self, root: str, *, hidden: bool = False) -> None:
        self.root = os.path.abspath(root)
        self.hidden = hidden  # True: hidden folders are walked too (the call named one)
        self.left_out = 0
        self._stack: dict[str, list[tuple[str, tuple[Rule, ...]]]] = {}
        self._top = work_tree(self.root)
        base: list[tuple[str, tuple[Rule, ...]]] = []
        if self._top is not None:
            excludes = _global_excludes_file()
            if excludes:
                base.append((self._top, _read(excludes)))
            base.append((self._top, _read(os.path.join(self._top, ".git", "info", "exclude"))))
            # the ignore files of the folders above the root, down to the repository's top
            here, above = self.root, []
            while here != self._top and os.path.dirname(here) != here:
                here = os.path.dirname(here)
                above.append(here)
            for folder in reversed(above):
                base += [(folder, _read(os.path.join(folder, name))) for name in IGNORE_FILES]
        self._stack[self.root] = [*base, *self._own(self.root)]

    @staticmethod
    def _own(folder: str) -> list[tuple[str, tuple[Rule, ...]]]:
        return [(folder, rules) for name in IGNORE_FILES if (rules := _read(os.path.join(folder, name)))]

    def _excluded(self, folder: str, name: str, is_dir: bool) -> bool:
        full = os.path.join(folder, name)
        for base, rules in reversed(self._stack.get(folder, ())):
            rel = os.path.relpath(full, base).replace(os.sep, "/")
            for rule in reversed(rules):
                if rule.dir_only and not is_dir:
                    continue
                if rule.regex.match(rel):
                    return not rule.negated
        return False

    def folders(self, folder: str, names: list[str]) -> list[str]:
        """The subfolders of `folder` to walk into (and get ready to read their ignore files)."""
        keep = []
        for name in names:
            if (name.startswith(".") and not self.hidden) or self._excluded(folder, name, True):
                self.left_out += 1
                continue
            keep.append(name)
            sub = os.path.join(folder, name)
            self._stack[sub] = [*self._stack.get(folder, ()), *self._own(sub)]
        return keep

    def file(self, folder: str, name: str) -> bool:
        """Whether the file `name` in `folder` is left out (counted when it is)."""
        if self._excluded(folder, name, False):
            self.left_out += 1
            return True
        return False

    def note(self) -> str:
        if not self.left_out:
            return ""
        what = "1 ignored entry" if self.left_out == 1 else f"{self.left_out} ignored entries"
        return (f"\n({what} not searched: .gitignore/.ignore rules and hidden folders; name one as path, "
                "or in the pattern, to search it.)")
