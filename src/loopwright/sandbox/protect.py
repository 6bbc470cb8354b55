"""What stays protected inside the sandbox's writable roots, as guards for the launcher: the
protected names (`core/protected`, the gate's list too) at the top of every root (the names only a
home directory reads, where a root holds the home directory), loopwright's own home, the paths
trusted settings keep read-only (`filesystem.denyWrite`), and what git reads from a repository's
git directory — `.git` files followed as git follows them (worktrees, submodules)."""

from __future__ import annotations

import os
from typing import Iterable

from ..core.fastclass import dataclass
from ..core.protected import PROTECTED_DIRS, PROTECTED_FILES, PROTECTED_UNDER_CONFIG

__all__ = ["Guard", "Unprotectable", "guards", "inside"]

# Read from a home directory only: guarded there, not at the top of every project.
HOME_ONLY = frozenset({
    ".ssh", ".gnupg", ".aws", ".kube", ".docker", ".gitconfig", ".git-credentials", ".bashrc", ".bash_profile",
    ".bash_login", ".bash_logout", ".bash_aliases", ".profile", ".zshrc", ".zshenv", ".zprofile", ".zlogin",
    ".zlogout", ".kshrc", ".mkshrc", ".cshrc", ".tcshrc", ".login", ".inputrc", ".claude.json", ".pypirc",
    ".netrc", ".curlrc", ".wgetrc", ".vimrc", ".xprofile", ".xinitrc", ".xsession",
})
# What git reads from a git directory that can run programs or send it elsewhere. Missing ones get
# a placeholder (inside a git directory it shows in no work tree); it must mean "absent" to git: an empty config or config.worktree, an empty hooks folder, and a
# commondir naming the git directory itself (an empty one would stop git).
GIT_READS = (("config", "file", ""), ("hooks", "dir", ""), ("commondir", "file", ".\n"),
             ("config.worktree", "file", ""))
MAX_NESTED_GITDIRS = 64  # submodules and worktrees guarded one by one; beyond, their folder whole


@dataclass(frozen=True, slots=True)
class Guard:
    """`mode`: "ro" (pinned read-only; when missing, watched: set aside once the command has
    ended if it made one), "hold" (read-only, a placeholder when missing: the files git reads in
    a git directory), "rw" (pinned but writable: the git directory; a read-only placeholder when
    missing), "open" (writable again inside a read-only guard, when present). `kind` is what a
    placeholder is, or what a watched path would be; `content` a placeholder file's."""

    path: str
    kind: str
    mode: str = "ro"
    content: str = ""

    def spec(self) -> tuple[str, str, str, str]:
        return (self.path, self.kind, self.mode, self.content)


class Unprotectable(RuntimeError):
    """A git directory that cannot be resolved as git would: the sandbox refuses to guess."""


def guards(roots: Iterable[str], *, home: str | None, own_home: str | None, extra: Iterable[str] = ()) -> list[Guard]:
    """Every guard for these real, absolute roots, parents before what they hold; only paths
    inside a root (everything else is read-only in the sandbox already). `extra`: more real
    paths to keep read-only."""
    roots = list(dict.fromkeys(roots))
    out: list[Guard] = []
    for root in roots:
        out += _names(root, (PROTECTED_DIRS - HOME_ONLY - {".git"}), (PROTECTED_FILES - HOME_ONLY))
        out += _git(root)
    if home and any(inside(home, r) for r in roots):
        out += _names(home, PROTECTED_DIRS - {".git"}, PROTECTED_FILES)
        out += _config(home)
    if own_home and any(inside(own_home, r) for r in roots):
        out.append(Guard(own_home, "dir"))
    out += [Guard(p, "file" if os.path.isfile(p) else "dir") for p in extra]
    seen: set[str] = set()
    kept = []
    for g in out:
        if g.path not in seen and any(inside(g.path, r) for r in roots):
            seen.add(g.path)
            kept.append(g)
    return kept


def inside(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip("/") + "/")


def _names(folder: str, dirs: Iterable[str], files: Iterable[str]) -> list[Guard]:
    out = [Guard(os.path.join(folder, n), "dir") for n in sorted(dirs)]
    worktrees = os.path.join(folder, ".claude", "worktrees")
    if ".claude" in dirs:  # Claude Code lets agents write their worktrees
        out.append(Guard(worktrees, "dir", "open"))
    return out + [Guard(os.path.join(folder, n), "file") for n in sorted(files)]


def _config(home: str) -> list[Guard]:
    config = os.path.join(home, ".config")
    if os.path.islink(config) or not os.path.lexists(config):
        # missing: one the command makes is set aside whole afterwards; a link could be swapped
        # for a folder of the command's making, so the launcher refuses it
        return [Guard(config, "dir")]
    return [Guard(os.path.join(config, n), "dir") for n in sorted(PROTECTED_UNDER_CONFIG)]


def _git(root: str) -> list[Guard]:
    dot = os.path.join(root, ".git")
    if os.path.islink(dot) or not os.path.lexists(dot):
        # a link is refused by the launcher; missing: a placeholder, so no `git init` (a host shell's
        # prompt would read a planted git directory while the command runs)
        return [Guard(dot, "dir", "rw")]
    if os.path.isdir(dot):
        return [Guard(dot, "dir", "rw"), *_gitdir(dot, nested=True)]
    return [Guard(dot, "file"), *_gitdir(_follow(dot), nested=True)]


def _gitdir(gitdir: str, *, nested: bool) -> list[Guard]:
    out = [Guard(os.path.join(gitdir, name), kind, "hold", content) for name, kind, content in GIT_READS]
    common = os.path.join(gitdir, "commondir")
    if os.path.isfile(common) and not os.path.islink(common):
        shared = _read_pointer(common, gitdir)
        if shared is not None and os.path.realpath(shared) != os.path.realpath(gitdir):
            out += [Guard(os.path.join(shared, n), k, "hold", c) for n, k, c in GIT_READS if n != "commondir"]
    if nested:
        out += _nested(gitdir)
    return out


def _nested(gitdir: str) -> list[Guard]:
    """The git directories of submodules (`modules/`, nested at any depth, names with slashes)
    and of linked worktrees (`worktrees/`); a folder too full to guard one by one is read-only."""
    out: list[Guard] = []
    for sub in ("modules", "worktrees"):
        folder = os.path.join(gitdir, sub)
        if not os.path.isdir(folder) or os.path.islink(folder):
            continue
        found = _gitdirs_below(folder)
        if found is None:
            out.append(Guard(folder, "dir"))
            continue
        for nested in found:
            out += _gitdir(nested, nested=False)
    return out


def _gitdirs_below(folder: str) -> list[str] | None:
    found: list[str] = []
    stack = [folder]
    while stack:
        here = stack.pop()
        try:
            entries = sorted(os.scandir(here), key=lambda e: e.name)
        except OSError:
            continue
        for entry in entries:
            if not entry.is_dir(follow_symlinks=False):
                continue
            if os.path.isfile(os.path.join(entry.path, "HEAD")):
                found.append(entry.path)
            stack.append(entry.path)  # submodules of submodules: `modules/a/modules/b`
            if len(found) > MAX_NESTED_GITDIRS:
                return None
    return found


def _follow(dot_git: str) -> str:
    """The git directory a `.git` file names (`gitdir: PATH`, relative to the file's folder)."""
    try:
        with open(dot_git, encoding="utf-8") as f:
            first = f.readline(4096).rstrip("\r\n")
    except (OSError, UnicodeDecodeError) as exc:
        raise Unprotectable(f"cannot read {dot_git} ({exc}); the sandbox cannot tell which git directory it names")
    if not first.startswith("gitdir: "):
        raise Unprotectable(f"{dot_git} does not start with 'gitdir: '; the sandbox cannot tell what git would read")
    return _resolve(first[len("gitdir: "):], os.path.dirname(dot_git), dot_git)


def _read_pointer(path: str, base: str) -> str | None:
    """The folder a `commondir` names; None when it is gone by now (another sandbox's placeholder,
    removed as that command ended: the launcher guards the name whatever it finds there then)."""
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read(4096).rstrip("\r\n")
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as exc:
        raise Unprotectable(f"cannot read {path} ({exc}); the sandbox cannot tell which git directory it names")
    return _resolve(text, base, path)


def _resolve(target: str, base: str, source: str) -> str:
    full = os.path.realpath(os.path.join(base, target))
    if not target or not os.path.isdir(full):
        raise Unprotectable(f"{source} names {target!r}, which is not a folder; git would fail there, and the "
                            "sandbox cannot tell what it would read")
    return full
