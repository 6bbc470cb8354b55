"""May this tool call run? A pure decision from the permission mode, the deny/ask/allow rules,
what the call touches (paths the gate resolved) and, for Bash, every command the line runs."""

from __future__ import annotations

import fnmatch
import posixpath
import re
from dataclasses import field, replace
from functools import lru_cache
from typing import Any, Mapping

from ..core.fastclass import dataclass
from . import commands, readonly
from .judged import ALLOW, SPECIAL, Decision, Resolved, Verdict, path_rule_hits
from .pathrules import Places, in_own_home, inside, protected
from .reading import read_verdict, readable, search_filter, search_shows
from .rules import (
    MODE_ALIASES, MODES, PermissionRules, anchor_rule, bypass_refusal, normalise_mode, parse_rule, parse_tool_list,
    rule_error,
)

__all__ = ["MODES", "MODE_ALIASES", "Call", "PermissionRules", "Places", "Resolved", "Verdict", "Want", "anchor_rule",
           "bypass_refusal", "command_hits", "decide", "normalise_mode", "parse_rule", "parse_tool_list", "path_hits",
           "read_verdict", "readable", "rule_error", "search_filter", "search_shows", "wanted_paths"]


@dataclass(frozen=True, slots=True)
class Want:
    path: str
    glob: bool = False


@dataclass(frozen=True, slots=True)
class Call:
    """A tool call as the policy sees it. `kind` is read, write, exec, session (acts on the
    session's own state only) or other; `resolved` maps each wanted path to its places
    (None: the gate could not tell)."""

    tool: str
    kind: str = "other"
    paths: tuple[str, ...] = ()
    command: str | None = None
    tool_input: Mapping[str, Any] = field(default_factory=dict)
    resolved: Mapping[str, tuple[Resolved, ...] | None] = field(default_factory=dict)


# ------------------------------------------------------------ rules


def _name_hits(rule_name: str, tool: str) -> bool:
    return rule_name == tool or ("*" in rule_name and fnmatch.fnmatchcase(tool, rule_name))


def _broad(spec: str | None) -> bool:
    return spec is None or spec == "*"


@lru_cache(maxsize=512)
def _command_regex(spec: str) -> re.Pattern[str]:
    """`npm run test *` is a prefix with a word boundary, legacy `npm run test:*` the same,
    any other `*` matches anything, no `*` is an exact command."""
    spec = " ".join(_spaced(spec))
    if spec.endswith(":*"):
        spec = spec[:-2] + " *"
    tail = spec.endswith(" *")
    body = spec[:-2] if tail else spec
    return re.compile(".*".join(re.escape(p) for p in body.split("*")) + ("(?: .*)?" if tail else ""), re.DOTALL)


def _spaced(text: str) -> list[str]:
    # Only spaces and tabs separate words for bash; str.split() would also split on a
    # non-breaking space, which bash keeps inside a word.
    return [w for w in re.split(r"[ \t]+", text) if w]


def _command_hits(spec: str, text: str) -> bool:
    return bool(_command_regex(spec).fullmatch(" ".join(_spaced(text))))


def _part_hits(spec: str | None, part: commands.Part, *, anywhere: bool) -> bool:
    """Allow rules match a part from its first word; deny and ask rules anywhere in it, so
    `sudo rm` or `xargs rm` still meets `Bash(rm *)`."""
    if _broad(spec):
        return True
    assert spec is not None
    if _command_hits(spec, part.text):
        return True
    if not anywhere:
        return False
    words = _spaced(part.full)
    return any(_command_hits(spec, " ".join(words[k:])) for k in range(len(words)))


def command_hits(spec: str | None, command: str) -> bool:
    """Whether a shell rule's specifier meets any command `command` runs, read the way deny and
    ask rules read it (each part, anywhere in it, wrappers included). A line that cannot be
    analysed, or a part whose real command is hidden, counts as a hit: whoever asks (a hook's
    `if`) wants to see what it cannot rule out."""
    analysis = commands.analyse(command)
    if analysis.error is not None:
        return True
    return any(part.hidden or _part_hits(spec, part, anywhere=True) for part in analysis.parts)


def path_hits(spec: str, locs: tuple[Resolved, ...], places: Places) -> bool:
    """Whether a path rule's specifier (`src/**`, `*.ts`, `//etc/**`) meets any of these places,
    anchored and matched as a deny rule is."""
    return path_rule_hits(spec, locs, places, deny=True)


# ------------------------------------------------------------ paths of a call


def wanted_paths(call: Call) -> tuple[Want, ...]:
    """The paths the gate must resolve (the I/O step) before `decide`."""
    wants = [Want(p) for p in call.paths]
    if call.command is not None:
        analysis = commands.analyse(call.command)
        wants += [Want(t.path, t.glob) for _, t in _targets(analysis) if t.path is not None]
    return tuple(dict.fromkeys(wants))


def _targets(analysis: commands.Analysis) -> list[tuple[commands.Part, commands.Target]]:
    out = []
    for part in analysis.parts:
        for t in commands.write_targets(part):
            relative = t.path is not None and not t.path.startswith(("/", "~"))
            if relative and analysis.changes_dir:  # after a cd the shell's directory is unknown
                t = commands.Target(None, t.glob, t.removes)
            out.append((part, t))
    return out


def _in_roots(real: str, places: Places) -> bool:
    return any(inside(real, root) for root in places.roots)


def _critical(real: str, places: Places) -> bool:
    """Removing these loses the machine or the project: /, a top-level directory, home, the
    working directory or one of its parents."""
    return real == "/" or posixpath.dirname(real) == "/" or real == places.home or inside(places.cwd, real)


def _edit_allowed(locs: tuple[Resolved, ...], rules: PermissionRules, places: Places) -> bool:
    """An `Edit(path)` allow rule lets writes reach that path even outside the roots."""
    for rule in rules.allow:
        name, spec = parse_rule(rule)
        if name in ("Edit", "Write") and not _broad(spec) and path_rule_hits(spec, locs, places, deny=False):
            return True
    return False


def _where(locs: tuple[Resolved, ...] | None, rules: PermissionRules, places: Places, *, shell: bool = False,
           removes: bool = False) -> Verdict | None:
    """An ask for a write that lands on a protected path, in loopwright's own home, on a file
    with other hard links (the write changes what those names show) or outside the writable
    roots (or may: a path known only at run time). Hard: a hook's allow does not answer it, only
    a person. Device paths (`> /dev/null`) are exempt in shell redirections only."""
    if locs is None:
        return Verdict("ask", "it writes to a path known only when it runs", hard=True, hint="allow it explicitly")
    for loc in locs:
        if shell and commands.is_device(loc.real):
            continue
        if protected(loc.real) or protected(loc.lexical):
            return Verdict("ask", f"{loc.lexical} is a protected path (never written without asking)", hard=True,
                           hint="approve it yourself; allow rules and hooks do not cover protected paths")
        if in_own_home(loc.real, places):
            return Verdict("ask", f"{loc.real} is in loopwright's own home ({places.own})", hard=True,
                           hint="approve it yourself; allow rules and hooks do not cover loopwright's home")
        if loc.links > 1 and loc.kind == "file" and not removes:
            return Verdict("ask", f"{loc.real} has {loc.links} hard links, so writing it changes the file under "
                           "its other names too", hard=True, hint="approve it yourself, or write a copy")
        if not _in_roots(loc.real, places) and not _edit_allowed(locs, rules, places):
            roots = ", ".join(places.roots)
            return Verdict("ask", f"{loc.real} is outside the writable roots ({roots})", hard=True,
                           hint=f"--add-dir {posixpath.dirname(loc.real)} or an allow rule Edit(/{loc.real})")
    return None


# ------------------------------------------------------------ the decision


def decide(call: Call, rules: PermissionRules, places: Places) -> Verdict:
    mode = normalise_mode(rules.mode) or "default"
    if call.command is not None:
        return _decide_shell(call, rules, places, mode)
    return _decide_tool(call, rules, places, mode)


def _tool_rule_hits(rule: str, call: Call, locs: tuple[Resolved, ...] | None, places: Places, *,
                    deny: bool) -> bool:
    name, spec = parse_rule(rule)
    family = (name in ("Edit", "Write") and call.kind == "write") or (name == "Read" and call.kind == "read")
    if _broad(spec):
        return _name_hits(name, call.tool)
    assert spec is not None
    if family:
        if locs is None:
            return deny  # a path the gate could not resolve: deny rules fail closed
        return path_rule_hits(spec, locs, places, deny=deny)
    if not _name_hits(name, call.tool):
        return False
    key, sep, value = spec.partition(":")
    if sep and key in call.tool_input:  # Tool(param:value), honoured by deny and ask only
        return deny and fnmatch.fnmatchcase(str(call.tool_input[key]), value)
    return deny  # a specifier this policy cannot read: deny and ask rules fail closed


def _locations(call: Call) -> tuple[Resolved, ...] | None:
    out: list[Resolved] = []
    for p in call.paths:
        locs = call.resolved.get(p)
        if locs is None:
            return None
        out.extend(locs)
    return tuple(out)


def _decide_tool(call: Call, rules: PermissionRules, places: Places, mode: str) -> Verdict:
    locs = _locations(call)
    for rule in rules.deny:
        if _tool_rule_hits(rule, call, locs, places, deny=True):
            return Verdict("deny", f"the deny rule {rule} matches")
    for rule in rules.ask:
        if _tool_rule_hits(rule, call, locs, places, deny=True):
            return Verdict("ask", f"the ask rule {rule} matches", hard=True)
    special = next((loc for loc in locs or () if loc.kind in SPECIAL), None)
    if call.kind == "write" and special is not None:  # the atomic write would replace the node
        return Verdict("deny", f"{special.real} is a {special.kind}, not a regular file; {call.tool} writes "
                       "regular files only")
    if call.kind == "read":
        return read_verdict(locs, rules, places)
    if mode == "bypassPermissions" or call.kind == "session":
        return ALLOW
    if mode == "plan":
        return Verdict("deny", f"plan mode runs read-only tools only, and {call.tool} changes things")
    if call.kind == "write":
        if locs is None or not locs:
            return Verdict("ask", f"{call.tool} names no path that could be checked", hard=True)
        problem = _where(locs, rules, places)
        if problem is not None:
            return problem
        if mode == "acceptEdits":
            return ALLOW
    if any(_tool_rule_hits(rule, call, locs, places, deny=False) for rule in rules.allow):
        return ALLOW
    hint = "--permission-mode acceptEdits" if call.kind == "write" else f"--allowedTools {call.tool}"
    return Verdict("ask", f"{call.tool} is not allowed in {mode} mode without a rule", hint=hint)


def _decide_shell(call: Call, rules: PermissionRules, places: Places, mode: str) -> Verdict:
    tool, command = call.tool, call.command or ""
    analysis = commands.analyse(command)
    deny = [(r, s) for r in rules.deny for n, s in [parse_rule(r)] if _name_hits(n, tool)]
    ask = [(r, s) for r in rules.ask for n, s in [parse_rule(r)] if _name_hits(n, tool)]
    specific = any(not _broad(s) for _, s in deny + ask)
    if analysis.error is not None:
        if any(_broad(s) for _, s in deny):
            return Verdict("deny", f"the deny rule {deny[0][0]} matches")
        if mode == "bypassPermissions" and not specific:
            return ALLOW
        why = f"the command could not be analysed ({analysis.error})"
        return Verdict("deny" if mode == "plan" else "ask", why, hard=specific, hint="split it into simpler commands")
    verdict = _shell_rules(analysis, call, deny, ask, rules, places, specific)
    if verdict is not None:
        return verdict
    if mode == "bypassPermissions":
        return ALLOW
    return _shell_mode(analysis, call, rules, places, mode)


def _shell_rules(analysis: commands.Analysis, call: Call, deny: list[tuple[str, str | None]],
                 ask: list[tuple[str, str | None]], rules: PermissionRules, places: Places,
                 specific: bool) -> Verdict | None:
    """Deny rules, then ask rules, then what no mode may skip."""
    checks: tuple[tuple[list[tuple[str, str | None]], Decision], ...] = ((deny, "deny"), (ask, "ask"))
    for listed, decision in checks:
        for rule, spec in listed:
            for part in analysis.parts:
                if _part_hits(spec, part, anywhere=True):
                    return Verdict(decision, f"the {decision} rule {rule} matches `{part.full}`",
                                   hard=decision == "ask")
    edit_rules: list[tuple[str, Decision]] = [
        (r, decision) for listed, decision in ((rules.deny, "deny"), (rules.ask, "ask")) for r in listed
        if parse_rule(r)[0] in ("Edit", "Write") and not _broad(parse_rule(r)[1])]
    for part, target in _targets(analysis):
        locs = call.resolved.get(target.path) if target.path is not None else None
        for rule, decision in edit_rules:
            spec = parse_rule(rule)[1] or ""
            if locs is not None and path_rule_hits(spec, locs, places, deny=True):
                return Verdict(decision, f"the {decision} rule {rule} matches a file `{part.text}` writes",
                               hard=decision == "ask")
        if target.removes and part.name in ("rm", "rmdir") and locs and any(_critical(x.real, places) for x in locs):
            return Verdict("ask", f"`{part.text}` removes a critical path", hard=True)
    if specific:
        for part in analysis.parts:
            if part.hidden:
                return Verdict("ask", f"`{part.text}` runs a command that cannot be checked against your "
                               f"deny and ask rules ({part.opaque})", hard=True)
    return None


def _shell_mode(analysis: commands.Analysis, call: Call, rules: PermissionRules, places: Places,
                mode: str) -> Verdict:
    tool = call.tool
    allows = [s for r in rules.allow for n, s in [parse_rule(r)] if _name_hits(n, tool)]
    broad = any(_broad(s) for s in allows)
    if mode != "plan":  # where the line writes, first: that ask is hard, whatever else is asked
        problem = _shell_where(analysis, call, rules, places, broad)
        if problem is not None:
            return problem
    for part in analysis.parts:
        if mode == "plan":
            if not readonly.is_read_only(part):
                return Verdict("deny", f"plan mode runs read-only commands only, and `{part.text}` is not one")
            continue
        covered = (broad or readonly.is_read_only(part) or any(_part_hits(s, part, anywhere=False) for s in allows)
                   or (mode == "acceptEdits" and (readonly.is_safe_edit(part)
                                                  or readonly.is_read_only(part, redirects=True))))
        if not covered:
            why = f"`{part.text}` is not allowed by a rule" + (f" ({part.opaque})" if part.opaque else "")
            return Verdict("ask", why, hint=f'--allowedTools "{tool}({_suggest(part)})"')
    return ALLOW


def _shell_where(analysis: commands.Analysis, call: Call, rules: PermissionRules, places: Places,
                 broad: bool) -> Verdict | None:
    for part, target in _targets(analysis):
        if target.path is None and broad:
            continue  # `Bash` allowed outright: paths decided at run time are accepted (the sandbox bounds them)
        problem = _where(None if target.path is None else call.resolved.get(target.path), rules, places, shell=True,
                         removes=target.removes)
        if problem is not None:
            return replace(problem, reason=f"`{part.text}`: {problem.reason}")
    return None


def _suggest(part: commands.Part) -> str:
    words = part.text.split()
    return " ".join(words[:2]) + " *" if len(words) > 1 else (words[0] if words else "*")
