"""May this tool call run? A pure decision from the permission mode, the deny/ask/allow rules,
what the call touches (paths the gate resolved) and, for Bash, every command the line runs."""

from __future__ import annotations

import fnmatch
import posixpath
from dataclasses import field, replace
from functools import lru_cache
from typing import Any, Literal, Mapping

from ..core.fastclass import dataclass
from . import commands, readonly, shellline
from .bashrules import broad as _broad
from .bashrules import command_hits, part_hits, suggest
from .gitsafe import GitFacts, config_problem
from .opts_git import CONTENT
from .pathrules import Places, anchor, inside, matches, protected, rule_prefix
from .rules import (
    MODE_ALIASES, MODES, PermissionRules, anchor_rule, bypass_refusal, normalise_mode, parse_rule, parse_tool_list,
    rule_error,
)

__all__ = ["MODES", "MODE_ALIASES", "Call", "GitFacts", "PermissionRules", "Places", "Resolved", "Verdict", "Want",
           "anchor_rule", "bypass_refusal", "command_hits", "decide", "normalise_mode", "parse_rule", "parse_tool_list",
           "path_hits", "read_patterns", "rule_error", "wanted_paths", "wanted_repos", "wanted_trees"]

Decision = Literal["allow", "ask", "deny"]


@dataclass(frozen=True, slots=True)
class Resolved:
    """One place a path names: `lexical` is absolute with `..` removed, `real` has symlinks
    resolved too. A glob may name several."""

    lexical: str
    real: str


@dataclass(frozen=True, slots=True)
class Want:
    path: str
    glob: bool = False


@dataclass(frozen=True, slots=True)
class Call:
    """A tool call as the policy sees it. `kind` is read, write, exec, session (acts on the
    session's own state only) or other; `resolved` maps each wanted path to its places
    (None: the gate could not tell). For shell lines, `git` maps each folder whose repository
    a git call reads to what git said about it, and `holds` each folder read recursively to
    the files below it that Read deny or ask rules cover (None: too many to look through)."""

    tool: str
    kind: str = "other"
    paths: tuple[str, ...] = ()
    command: str | None = None
    tool_input: Mapping[str, Any] = field(default_factory=dict)
    resolved: Mapping[str, tuple[Resolved, ...] | None] = field(default_factory=dict)
    git: Mapping[str, GitFacts] = field(default_factory=dict)
    holds: Mapping[str, tuple[str, ...] | None] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Verdict:
    """`hard` asks come from ask rules and dangerous removals (neither bypassPermissions nor a
    hook's allow skips them) and from writes to protected paths or outside the writable roots
    (a hook's allow does not skip them). `hint` says what would allow the call."""

    decision: Decision
    reason: str = ""
    hard: bool = False
    hint: str = ""


ALLOW = Verdict("allow")


# ------------------------------------------------------------ rules


def _name_hits(rule_name: str, tool: str) -> bool:
    return rule_name == tool or ("*" in rule_name and fnmatch.fnmatchcase(tool, rule_name))


def path_hits(spec: str, locs: tuple[Resolved, ...], places: Places) -> bool:
    """Whether a path rule's specifier (`src/**`, `*.ts`, `//etc/**`) meets any of these places,
    anchored and matched as a deny rule is."""
    return _path_rule_hits(spec, locs, places, deny=True, kind="write")


# ------------------------------------------------------------ paths of a call


@lru_cache(maxsize=256)
def _analysed(command: str) -> commands.Analysis:
    return commands.analyse(command)


def _line(call: Call, places: Places | None = None) -> shellline.Line | None:
    analysis = _analysed(call.command or "")
    if analysis.error is not None:
        return None
    return shellline.read_line(analysis, call.resolved if places else None, places.cwd if places else "")


def wanted_paths(call: Call) -> tuple[Want, ...]:
    """The paths the gate must resolve (the I/O step) before `decide`."""
    wants = [Want(p) for p in call.paths]
    if call.command is not None and (analysis := _analysed(call.command)).error is None:
        wants += [Want(path, glob) for path, glob in shellline.wanted(analysis)]
    return tuple(dict.fromkeys(wants))


def wanted_repos(call: Call) -> tuple[str, ...]:
    """Folders (as written, relative to the cwd) whose git repository a git call of the line
    reads: the gate asks git about each (`Call.git`)."""
    line = _line(call) if call.command is not None else None
    return tuple(dict.fromkeys(t.path for t in line.touches if t.kind == "repo" and t.path)) if line else ()


def wanted_trees(call: Call, places: Places) -> tuple[str, ...]:
    """Folders the line reads with everything below them (after the gate resolved the rest):
    the gate looks in them for files Read rules keep private (`Call.holds`)."""
    line = _line(call, places) if call.command is not None else None
    if line is None:
        return ()
    out = [t.path for t in line.touches if t.tree and t.path]
    out += [f.top for t in line.touches if t.kind == "repo" and t.path and readonly.judge(t.part).git in CONTENT
            for f in [call.git.get(t.path)] if f is not None and f.top]
    return tuple(dict.fromkeys(out))


def read_patterns(rules: PermissionRules, places: Places) -> tuple[str, ...]:
    """The absolute patterns of the Read deny and ask rules (what a recursive read must not reach)."""
    out = []
    for rule in rules.deny + rules.ask:
        name, spec = parse_rule(rule)
        if name == "Read" and not _broad(spec):
            out.append(anchor(spec or "", places, anywhere=True))
    return tuple(out)


def _in_roots(real: str, places: Places) -> bool:
    return any(inside(real, root) for root in places.roots)


def _critical(real: str, places: Places) -> bool:
    """Removing these loses the machine or the project: /, a top-level directory, home, the
    working directory or one of its parents."""
    return real == "/" or posixpath.dirname(real) == "/" or real == places.home or inside(places.cwd, real)


def _path_rule_hits(spec: str, locs: tuple[Resolved, ...], places: Places, *, deny: bool, kind: str) -> bool:
    pattern = anchor(spec, places, anywhere=deny)
    if deny:
        return any(matches(pattern, p) or (kind == "read" and inside(rule_prefix(pattern), p))
                   for loc in locs for p in (loc.lexical, loc.real))
    return bool(locs) and all(matches(pattern, loc.real) for loc in locs)


def _edit_allowed(locs: tuple[Resolved, ...], rules: PermissionRules, places: Places) -> bool:
    """An `Edit(path)` allow rule lets writes reach that path even outside the roots."""
    for rule in rules.allow:
        name, spec = parse_rule(rule)
        if name in ("Edit", "Write") and not _broad(spec) and _path_rule_hits(spec, locs, places, deny=False,
                                                                                    kind="write"):
            return True
    return False


def _where(locs: tuple[Resolved, ...] | None, rules: PermissionRules, places: Places) -> Verdict | None:
    """An ask for a write that lands on a protected path or outside the writable roots (or may:
    a path known only at run time). Hard: a hook's allow does not answer it, only a person."""
    if locs is None:
        return Verdict("ask", "it writes to a path known only when it runs", hard=True, hint="allow it explicitly")
    for loc in locs:
        if commands.is_device(loc.real):
            continue
        if protected(loc.real) or protected(loc.lexical):
            return Verdict("ask", f"{loc.lexical} is a protected path (never written without asking)", hard=True,
                           hint="approve it yourself; allow rules and hooks do not cover protected paths")
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
        return _path_rule_hits(spec, locs, places, deny=deny, kind=call.kind)
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
    if mode == "bypassPermissions" or call.kind in ("read", "session"):
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
    tool = call.tool
    deny = [(r, s) for r in rules.deny for n, s in [parse_rule(r)] if _name_hits(n, tool)]
    ask = [(r, s) for r in rules.ask for n, s in [parse_rule(r)] if _name_hits(n, tool)]
    specific = any(not _broad(s) for _, s in deny + ask)
    line = _line(call, places)
    if line is None:
        if any(_broad(s) for _, s in deny):
            return Verdict("deny", f"the deny rule {deny[0][0]} matches")
        if mode == "bypassPermissions" and not specific:
            return ALLOW
        why = f"the command could not be analysed ({_analysed(call.command or '').error})"
        return Verdict("deny" if mode == "plan" else "ask", why, hard=specific, hint="split it into simpler commands")
    verdict = _shell_rules(line, call, deny, ask, rules, places, specific)
    if verdict is not None:
        return verdict
    if mode == "bypassPermissions":
        return ALLOW
    return _shell_mode(line, call, rules, places, mode)


def _shell_rules(line: shellline.Line, call: Call, deny: list[tuple[str, str | None]],
                 ask: list[tuple[str, str | None]], rules: PermissionRules, places: Places,
                 specific: bool) -> Verdict | None:
    """Deny rules, then ask rules (Bash rules on each part, Edit rules on what it writes, Read
    rules on what it reads), then what no mode may skip."""
    checks: tuple[tuple[list[tuple[str, str | None]], Decision], ...] = ((deny, "deny"), (ask, "ask"))
    for listed, decision in checks:
        for rule, spec in listed:
            for part in line.parts:
                if part_hits(spec, part, anywhere=True):
                    return Verdict(decision, f"the {decision} rule {rule} matches `{part.full}`",
                                   hard=decision == "ask")
    path_rules = [(r, decision, name) for listed, decision in ((rules.deny, "deny"), (rules.ask, "ask"))
                  for r in listed for name, spec in [parse_rule(r)] if name in ("Edit", "Write", "Read")
                  and not _broad(spec)]
    for t in line.touches:
        locs = call.resolved.get(t.path) if t.path is not None else None
        for rule, decision, name in path_rules:
            spec = parse_rule(rule)[1] or ""
            if name != "Read" and t.kind == "write" and locs is not None and _path_rule_hits(
                    spec, locs, places, deny=True, kind="write"):
                return Verdict(decision, f"the {decision} rule {rule} matches a file `{t.part.text}` writes",
                               hard=decision == "ask")
            if name == "Read" and t.kind != "write" and _read_rule_hits(spec, t, locs, call, places):
                return Verdict("ask", f"`{t.part.text}` may read what the {decision} rule {rule} keeps private",
                               hard=True)
        if t.removes and t.part.name in ("rm", "rmdir") and locs and any(_critical(x.real, places) for x in locs):
            return Verdict("ask", f"`{t.part.text}` removes a critical path", hard=True)
    if specific:
        for part in line.parts:
            if part.hidden:
                return Verdict("ask", f"`{part.text}` runs a command that cannot be checked against your "
                               f"deny and ask rules ({part.opaque})", hard=True)
    return None


def _read_rule_hits(spec: str, t: shellline.Touch, locs: tuple[Resolved, ...] | None, call: Call,
                    places: Places) -> bool:
    """A Read rule meets a read of a file it covers, of a path known only at run time, or of a
    folder (or a repository, for git calls that print file contents) that holds a covered file
    or too many files to tell."""
    if t.kind == "repo":
        if readonly.judge(t.part).git not in CONTENT:
            return False  # status, branch …: names only
        facts = call.git.get(t.path) if t.path else None
        return facts is None or facts.error is not None or bool(facts.top) and call.holds.get(facts.top) != ()
    if locs is None or _path_rule_hits(spec, locs, places, deny=True, kind="read"):
        return True
    return t.tree and call.holds.get(t.path or "") != ()


def _read_where(part: commands.Part, locs: tuple[Resolved, ...], tree: bool, rules: PermissionRules,
                places: Places) -> Verdict | None:
    """An ask for a read outside the readable roots (the working directory and the added ones)
    or inside loopwright's own home, unless a Read allow rule names the place. Hard, as for
    writes: a hook's allow does not answer it, only a person."""
    for loc in locs:
        if commands.is_device(loc.real):
            continue
        named = any(name == "Read" and not _broad(spec) and _path_rule_hits(spec or "", (loc,), places, deny=False,
                                                                            kind="read")
                    for rule in rules.allow for name, spec in [parse_rule(rule)])
        if named:
            continue
        private = [p for p in places.private if inside(loc.real, p) or (tree and inside(p, loc.real))]
        if private:
            return Verdict("ask", f"`{part.text}` reads {private[0]}, loopwright's own home, which tools never "
                           "read unless a rule names it", hard=True, hint=f"an allow rule Read(/{private[0]}/**)")
        if not _in_roots(loc.real, places):
            roots = ", ".join(places.roots)
            return Verdict("ask", f"`{part.text}` reads {loc.real}, outside the readable roots ({roots})", hard=True,
                           hint=f"an allow rule Read(/{loc.real}{'/**' if tree else ''}) (or --add-dir "
                                f"{loc.real if tree else posixpath.dirname(loc.real)}, which opens it to edits too)")
    return None


def _shell_mode(line: shellline.Line, call: Call, rules: PermissionRules, places: Places, mode: str) -> Verdict:
    tool = call.tool
    allows = [s for r in rules.allow for n, s in [parse_rule(r)] if _name_hits(n, tool)]
    broad = any(_broad(s) for s in allows)
    ruled = {id(p) for p in line.parts if broad or any(part_hits(s, p, anywhere=False) for s in allows)}
    if mode == "plan":
        for part, reading in zip(line.parts, line.readings):
            if not (reading.ok and readonly.is_read_only(part)):
                why = f" ({reading.why})" if reading.why else ""
                return Verdict("deny", f"plan mode runs read-only commands only, and `{part.text}` is not one{why}")
    for t in line.touches:  # where the line writes and reads, first: those asks are hard, whatever else is asked
        problem = _touch_problem(t, call, rules, places, broad, ruled=id(t.part) in ruled, plan=mode == "plan")
        if problem is not None:
            return replace(problem, reason=f"`{t.part.text}`: {problem.reason}" if t.kind == "write" else problem.reason)
    for part, reading in zip(line.parts, line.readings):
        edits = mode == "acceptEdits" and (readonly.is_safe_edit(part) or reading.ok)
        if not ((reading.ok and readonly.is_read_only(part)) or id(part) in ruled or edits):
            why = f"`{part.text}` is not allowed by a rule" + (f" ({reading.why})" if reading.why else "")
            return Verdict("ask", why, hint=f'--allowedTools "{tool}({suggest(part)})"')
    return ALLOW


def _touch_problem(t: shellline.Touch, call: Call, rules: PermissionRules, places: Places, broad: bool,
                   ruled: bool, plan: bool) -> Verdict | None:
    if t.path is None:
        if broad:
            return None  # `Bash` allowed outright: paths decided at run time are accepted (the sandbox bounds them)
        if t.kind == "write":
            return _where(None, rules, places)
        return Verdict("ask", f"`{t.part.text}` reads a path known only when it runs", hard=True,
                       hint="allow it explicitly")
    locs = call.resolved.get(t.path)
    if t.kind == "write":
        return _where(locs, rules, places)
    if t.kind == "repo":
        facts = call.git.get(t.path)
        if facts is None:
            return None if broad else Verdict("ask", f"`{t.part.text}`: its repository could not be checked", hard=True)
        if not ruled and (why := config_problem(facts)) is not None:  # plan mode runs none of it
            return Verdict("deny" if plan else "ask", f"`{t.part.text}` would run a program the repository "
                           f"configures: {why}", hard=True, hint=f'--allowedTools "Bash({suggest(t.part)})" if you trust it')
        locs = None if not facts.top else (Resolved(facts.top, facts.top),)
        if locs is None:
            return None
        return _read_where(t.part, locs, True, rules, places)
    if locs is None:
        return None if broad else Verdict("ask", f"`{t.part.text}` reads {t.path}, which could not be resolved",
                                          hard=True)
    return _read_where(t.part, locs, t.tree, rules, places)
