"""What a tool may read: one predicate for every reading path (Read, Glob, Grep, and the
read-only shell commands' file arguments), which files a search may show, and which Read rules
reach below a folder. Pure: the gate resolves the paths first."""

from __future__ import annotations

import posixpath

from .judged import ALLOW, Resolved, Verdict, path_rule_hits
from .pathrules import Places, anchor, in_own_home, inside, matches, rule_prefix
from .rules import PermissionRules, normalise_mode, parse_rule

__all__ = ["deny_below", "read_verdict", "readable", "search_shows"]

_GRANTS_READ = ("Read", "Edit", "Write")  # a place the user lets tools change may be read too


def read_verdict(locs: tuple[Resolved, ...] | None, rules: PermissionRules, places: Places) -> Verdict:
    """May these places be read? A `Read` deny rule denies and an ask rule asks, in every mode.
    Then bypassPermissions reads anywhere; otherwise every place must land inside a root (the
    working directory, `--add-dir`, `additionalDirectories`) and outside loopwright's own home,
    or under an allow rule that names it (`Read(~/notes/**)`). Anything else is asked. `None`:
    the gate could not resolve the path (asked; a path deny rule then fails closed)."""
    ruled = _read_rule(locs, rules, places)
    if ruled is not None:
        return ruled
    if normalise_mode(rules.mode) == "bypassPermissions":
        return ALLOW
    if locs is None:
        return Verdict("ask", "it reads a path that could not be resolved", hint="give a plain path")
    for loc in locs:
        if readable(loc.real, rules, places):
            continue
        if in_own_home(loc.real, places):
            return Verdict("ask", f"{loc.real} is in loopwright's own home ({places.own}: transcripts, "
                           "schedules), which tools read only when a rule names it",
                           hint=f"an allow rule Read(/{places.own}/**)")
        roots = ", ".join(places.roots)
        folder = loc.real if loc.kind == "dir" else posixpath.dirname(loc.real)
        return Verdict("ask", f"{loc.real} is outside the readable places ({roots})",
                       hint=f"--add-dir {folder} or an allow rule Read(/{folder}/**)")
    return ALLOW


def readable(real: str, rules: PermissionRules, places: Places) -> bool:
    """Whether a real (resolved) path lies where tools may read without asking: inside a root
    but not in loopwright's own home, or under an allow rule that names it. A rule names the
    own home only when its literal start lies inside it (`Read(~/**)` does not)."""
    in_own = in_own_home(real, places)
    if not in_own and any(inside(real, root) for root in places.roots):
        return True
    for rule in rules.allow:
        name, spec = parse_rule(rule)
        if name not in _GRANTS_READ or spec is None or spec == "*":
            continue
        pattern = anchor(spec, places, anywhere=False)
        if matches(pattern, real) and (not in_own or inside(rule_prefix(pattern), places.own)):
            return True
    return False


def search_shows(found: Resolved, within: tuple[Resolved, ...], rules: PermissionRules, places: Places) -> bool:
    """Whether a search (Glob, Grep) may show a file it met below its judged roots `within`: no
    Read deny or ask rule meets it (by the name met or where it lands), and it lands in a
    readable place or inside a root the gate judged (and approved) for this search, except in
    loopwright's own home unless that root itself is there. A file symlinked from outside is
    judged where it lands."""
    if _read_rule((found,), rules, places) is not None:
        return False
    if normalise_mode(rules.mode) == "bypassPermissions" or readable(found.real, rules, places):
        return True
    in_own = in_own_home(found.real, places)
    return any(inside(found.real, w.real) and (not in_own or inside(w.real, places.own)) for w in within)


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


def _read_rule(locs: tuple[Resolved, ...] | None, rules: PermissionRules, places: Places) -> Verdict | None:
    for decision, listed in (("deny", rules.deny), ("ask", rules.ask)):
        for rule in listed:
            name, spec = parse_rule(rule)
            if name != "Read":
                continue
            broad = spec is None or spec == "*"
            if broad or locs is None or path_rule_hits(spec or "", locs, places, deny=True):
                return Verdict(decision, f"the {decision} rule {rule} matches",  # type: ignore[arg-type]
                               hard=decision == "ask")
    return None
