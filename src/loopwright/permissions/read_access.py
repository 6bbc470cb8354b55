"""What a tool may read: one predicate for every reading path (Read, Glob, Grep, and the
read-only shell commands' reads), which files a search may show, and which Read rules reach
below a folder. Pure: the gate resolves the paths first."""

from __future__ import annotations

import posixpath
from collections.abc import Callable

from .paths import Places, anchor, in_own_home, in_roots, inside, matches, rule_prefix
from .rules import PermissionRules, normalise_mode, parse_rule
from .verdict import ALLOW, Decision, Resolved, PermissionVerdict, path_rule_hits

__all__ = ["deny_below", "kept_private", "private_patterns", "read_place", "read_rule", "read_verdict", "readable",
           "search_filter", "search_shows"]

_GRANTS_READ = ("Read", "Edit", "Write")  # a place the user lets tools change may be read too


def read_verdict(locs: tuple[Resolved, ...] | None, rules: PermissionRules, places: Places) -> PermissionVerdict:
    """May these places be read? A `Read` deny rule denies and an ask rule asks, in every mode.
    Then bypassPermissions reads anywhere; otherwise every place must be readable (`read_place`).
    `None`: the gate could not resolve the path (asked; a path deny rule then fails closed)."""
    ruled = read_rule(locs, rules, places)
    if ruled is not None:
        decision, rule = ruled
        return PermissionVerdict(decision, f"the {decision} rule {rule} matches", hard=decision == "ask")
    if normalise_mode(rules.mode) == "bypassPermissions":
        return ALLOW
    if locs is None:
        return PermissionVerdict("ask", "it reads a path that could not be resolved", hint="give a plain path")
    return read_place(locs, rules, places)


def read_rule(locs: tuple[Resolved, ...] | None, rules: PermissionRules,
              places: Places) -> tuple[Decision, str] | None:
    """The first `Read` deny rule, else ask rule, that meets these places by their names or where
    they land: (its decision, the rule). A bare `Read` meets every place, and every path rule
    meets a path the gate could not resolve (`None`: fail closed)."""
    for decision, listed in (("deny", rules.deny), ("ask", rules.ask)):
        for rule in listed:
            name, spec = parse_rule(rule)
            if name != "Read":
                continue
            if spec is None or spec == "*" or locs is None or path_rule_hits(spec, locs, places, deny=True):
                return decision, rule  # type: ignore[return-value]
    return None


def read_place(locs: tuple[Resolved, ...], rules: PermissionRules, places: Places, *,
               tree: bool = False) -> PermissionVerdict:
    """Whether these places are readable: every one lands inside a root (the working directory,
    `--add-dir`, `additionalDirectories`) and outside loopwright's own home, or under an allow
    rule that names it (`Read(~/notes/**)`). `tree`: each is read with everything below it (a
    recursive shell read), so a folder that holds the own home reads it too. Else an ask that
    names the place and how to allow it."""
    if not locs:
        return ALLOW  # nothing to read (the allow rules are not anchored for it)
    reads = _Readable(rules, places)
    own = places.own
    for loc in locs:
        if reads(loc.real):
            if tree and own and inside(own, loc.real) and not reads(own):
                return _own_home(f"{loc.real} holds", own)
            continue
        if in_own_home(loc.real, places):
            return _own_home(f"{loc.real} is in", own)
        roots = ", ".join(places.roots)
        folder = loc.real if loc.kind == "dir" else posixpath.dirname(loc.real)
        return PermissionVerdict("ask", f"{loc.real} is outside the readable places ({roots})",
                                 hint=f"--add-dir {folder} or an allow rule Read(/{folder}/**)")
    return ALLOW


def _own_home(where: str, own: str) -> PermissionVerdict:
    return PermissionVerdict("ask", f"{where} loopwright's own home ({own}: transcripts, schedules), which tools read "
                             "only when a rule names it", hint=f"an allow rule Read(/{own}/**)")


def readable(real: str, rules: PermissionRules, places: Places) -> bool:
    """Whether a real (resolved) path lies where tools may read without asking: inside a root
    but not in loopwright's own home, or under an allow rule that names it. A rule names the
    own home only when its literal start lies inside it (`Read(~/**)` does not)."""
    return _Readable(rules, places)(real)


class _Readable:
    """`readable` with the allow rules anchored once, for the many paths of a search."""

    def __init__(self, rules: PermissionRules, places: Places) -> None:
        self.places = places
        self.patterns = [anchor(spec, places, anywhere=False) for name, spec in map(parse_rule, rules.allow)
                         if name in _GRANTS_READ and spec is not None and spec != "*"]

    def __call__(self, real: str) -> bool:
        places = self.places
        in_own = in_own_home(real, places)
        if not in_own and in_roots(real, places):
            return True
        return any(matches(p, real) and (not in_own or inside(rule_prefix(p), places.own)) for p in self.patterns)


def search_shows(found: Resolved, within: tuple[Resolved, ...], rules: PermissionRules, places: Places) -> bool:
    """Whether a search (Glob, Grep) may show a file it met below its judged roots `within`
    (see `search_filter`)."""
    return search_filter(within, rules, places)(found)


def search_filter(within: tuple[Resolved, ...], rules: PermissionRules,
                  places: Places) -> Callable[[Resolved], bool]:
    """For one search: whether it may show a file it met. No Read deny or ask rule may meet the
    file (by the name met or where it lands), and the file must land in a readable place or
    inside a root the gate judged (and so approved) for this search, except in loopwright's own
    home unless that root itself is there. A file symlinked from outside is judged where it
    lands. The rules are anchored once, not per file."""
    hiding = private_patterns(rules, places)
    free = normalise_mode(rules.mode) == "bypassPermissions"
    reads = _Readable(rules, places)
    roots = [w.real for w in within]
    folders: dict[str, bool] = {}  # real folder -> every file in it lands in a root or a judged root

    def in_place(real: str) -> bool:
        in_own = in_own_home(real, places)
        return ((not in_own and in_roots(real, places))
                or any(inside(real, r) and (not in_own or inside(r, places.own)) for r in roots))

    def shows(found: Resolved) -> bool:
        if kept_private(found, hiding):
            return False
        if free:
            return True
        folder = found.real.rpartition("/")[0] or "/"
        ok = folders.get(folder)
        if ok is None:
            ok = folders[folder] = in_place(folder)
        # a file is where its folder is (only a file named as the own home itself could differ)
        return (ok and found.real != places.own) or in_place(found.real) or reads(found.real)

    return shows


def deny_below(folders: tuple[Resolved, ...], rules: PermissionRules, places: Places) -> str | None:
    """The first Read deny or ask rule that may meet a file somewhere below these folders (for
    commands that read a whole tree, such as `grep -r`): its pattern starts inside a folder, or
    a folder lies inside where the pattern starts (`Read(.env)` may meet any folder)."""
    for rule in (*rules.deny, *rules.ask):
        name, spec = parse_rule(rule)
        if name != "Read":
            continue
        if spec is None or spec == "*":
            return rule
        start = rule_prefix(anchor(spec, places, anywhere=True))
        if any(inside(start, p) or inside(p, start) for f in folders for p in (f.lexical, f.real)):
            return rule
    return None


def private_patterns(rules: PermissionRules, places: Places) -> tuple[str, ...]:
    """The anchored patterns of the `Read` deny and ask rules (`/**` for a bare `Read`): what a
    search may not show, and what a folder read whole must not hold."""
    out = []
    for rule in (*rules.deny, *rules.ask):
        name, spec = parse_rule(rule)
        if name == "Read":
            out.append("/**" if spec is None or spec == "*" else anchor(spec, places, anywhere=True))
    return tuple(out)


def kept_private(found: Resolved, patterns: tuple[str, ...]) -> bool:
    """Whether one of `private_patterns` meets a file by the name it was met under or where it lands."""
    return any(matches(p, found.lexical) or matches(p, found.real) for p in patterns)
