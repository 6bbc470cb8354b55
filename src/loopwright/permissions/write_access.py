"""Where writes may go: never onto a protected path, into loopwright's own home, onto a file
with other hard links, or outside the writable roots (unless an `Edit` allow rule names the
place) without a person's approval; and which removals lose the machine or the project. One
judgement for the file tools and for what shell lines write. Pure."""

from __future__ import annotations

import posixpath

from .bash.parts import is_device
from .paths import Places, in_own_home, in_roots, inside, protected
from .rules import PermissionRules, parse_rule
from .verdict import Resolved, PermissionVerdict, path_rule_hits

__all__ = ["critical", "harmless_device", "write_where"]


def critical(real: str, places: Places) -> bool:
    """Removing these loses the machine or the project: /, a top-level directory, home, the
    working directory or one of its parents."""
    return real == "/" or posixpath.dirname(real) == "/" or real == places.home or inside(places.cwd, real)


def harmless_device(loc: Resolved) -> bool:
    """Whether the kernel lands on one of the harmless devices (`/dev/null`, `/dev/zero` …):
    judged where the path leads and what is there, never by how it is spelt."""
    return loc.kind == "device" and is_device(loc.real)


def _edit_allowed(locs: tuple[Resolved, ...], rules: PermissionRules, places: Places) -> bool:
    """An `Edit(path)` allow rule lets writes reach that path even outside the roots."""
    for rule in rules.allow:
        name, spec = parse_rule(rule)
        if name in ("Edit", "Write") and spec is not None and spec != "*" and path_rule_hits(spec, locs, places,
                                                                                            deny=False):
            return True
    return False


def write_where(locs: tuple[Resolved, ...] | None, rules: PermissionRules, places: Places, *, into: bool = False,
                removes: bool = False) -> PermissionVerdict | None:
    """An ask for a write that lands on a protected path, in loopwright's own home, on a file
    with other hard links (the write changes what those names show) or outside the writable
    roots (or may: a path known only at run time). Hard: a hook's allow does not answer it, only
    a person. `into`: the write opens the file and writes into it (a shell redirection, tee, dd
    of=), so a harmless device it lands on (`> /dev/null`) stays what it is and is exempt."""
    if locs is None:
        return PermissionVerdict("ask", "it writes to a path known only when it runs", hard=True, hint="allow it explicitly")
    for loc in locs:
        if into and harmless_device(loc):
            continue
        if protected(loc.real) or protected(loc.lexical):
            return PermissionVerdict("ask", f"{loc.lexical} is a protected path (never written without asking)", hard=True,
                                     hint="approve it yourself; allow rules and hooks do not cover protected paths")
        if in_own_home(loc.real, places):
            return PermissionVerdict("ask", f"{loc.real} is in loopwright's own home ({places.own})", hard=True,
                                     hint="approve it yourself; allow rules and hooks do not cover loopwright's home")
        if loc.links > 1 and loc.kind == "file" and not removes:
            return PermissionVerdict("ask", f"{loc.real} has {loc.links} hard links, so writing it changes the file under "
                                     "its other names too", hard=True, hint="approve it yourself, or write a copy")
        if not in_roots(loc.real, places) and not _edit_allowed(locs, rules, places):
            roots = ", ".join(places.roots)
            return PermissionVerdict("ask", f"{loc.real} is outside the writable roots ({roots})", hard=True,
                                     hint=f"--add-dir {posixpath.dirname(loc.real)} or an allow rule Edit(/{loc.real})")
    return None
