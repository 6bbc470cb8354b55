"""May this tool call run? A pure decision from the permission mode, the deny/ask/allow rules,
what the call touches (paths the gate resolved) and, for Bash, every command the line runs
(bash/judge). Where reads and writes may go is judged once for both (read_access,
write_access)."""

from __future__ import annotations

import fnmatch

from .bash.command_rules import broad as _broad
from .bash.command_rules import command_hits
from .bash.git_config import GitFacts
from .bash.judge import decide_shell, outside_sandbox, wanted_repos, wanted_trees
from .bash.line import analysed, wanted
from .call import Call, Want
from .paths import Places
from .read_access import read_verdict, readable, search_filter, search_shows
from .rules import (
    MODE_ALIASES, MODES, PermissionRules, anchor_rule, bypass_refusal, name_hits, normalise_mode, parse_rule,
    parse_tool_list, rule_error,
)
from .verdict import ALLOW, SPECIAL, PermissionVerdict, Resolved, path_rule_hits
from .write_access import write_where

__all__ = ["MODES", "MODE_ALIASES", "Call", "GitFacts", "PermissionRules", "PermissionVerdict", "Places", "Resolved",
           "Want", "anchor_rule", "bypass_refusal", "command_hits", "decide", "normalise_mode", "parse_rule",
           "parse_tool_list", "path_hits", "read_verdict", "readable", "rule_error", "search_filter", "search_shows",
           "wanted_paths", "wanted_repos", "wanted_trees"]


def path_hits(spec: str, locs: tuple[Resolved, ...], places: Places) -> bool:
    """Whether a path rule's specifier (`src/**`, `*.ts`, `//etc/**`) meets any of these places,
    anchored and matched as a deny rule is."""
    return path_rule_hits(spec, locs, places, deny=True)


def wanted_paths(call: Call) -> tuple[Want, ...]:
    """The paths the gate must resolve (the I/O step) before `decide`."""
    wants = [Want(p) for p in call.paths]
    if call.command is not None and (analysis := analysed(call.command)).error is None:
        wants += [Want(path, glob) for path, glob in wanted(analysis)]
    return tuple(dict.fromkeys(wants))


def decide(call: Call, rules: PermissionRules, places: Places) -> PermissionVerdict:
    """In auto mode the verdict is acceptEdits' (reads, and edits inside the writable roots,
    run); what that would ask about goes to the classifier (engine.automode), unless hard. A
    command that would leave the OS sandbox is asked about in every mode
    (`bash.judge.outside_sandbox`)."""
    mode = normalise_mode(rules.mode) or "default"
    mode = "acceptEdits" if mode == "auto" else mode
    if call.command is not None:
        verdict = decide_shell(call, rules, places, mode)
        return outside_sandbox(call, rules, places, verdict) if call.outside else verdict
    return _decide_tool(call, rules, places, mode)


def _tool_rule_hits(rule: str, call: Call, locs: tuple[Resolved, ...] | None, places: Places, *,
                    deny: bool) -> bool:
    name, spec = parse_rule(rule)
    family = (name in ("Edit", "Write") and call.kind == "write") or (name == "Read" and call.kind == "read")
    if _broad(spec):
        return name_hits(name, call.tool)
    assert spec is not None
    if family:
        if locs is None:
            return deny  # a path the gate could not resolve: deny rules fail closed
        return path_rule_hits(spec, locs, places, deny=deny)
    if not name_hits(name, call.tool):
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


def _decide_tool(call: Call, rules: PermissionRules, places: Places, mode: str) -> PermissionVerdict:
    locs = _locations(call)
    for rule in rules.deny:
        if _tool_rule_hits(rule, call, locs, places, deny=True):
            return PermissionVerdict("deny", f"the deny rule {rule} matches")
    for rule in rules.ask:
        if _tool_rule_hits(rule, call, locs, places, deny=True):
            return PermissionVerdict("ask", f"the ask rule {rule} matches", hard=True)
    special = next((loc for loc in locs or () if loc.kind in SPECIAL), None)
    if call.kind == "write" and special is not None:  # the atomic write would replace the node
        return PermissionVerdict("deny", f"{special.real} is a {special.kind}, not a regular file; {call.tool} writes "
                                 "regular files only")
    if call.kind == "read":
        return read_verdict(locs, rules, places)
    if mode == "bypassPermissions" or call.kind == "session":
        return ALLOW
    if mode == "plan":
        return PermissionVerdict("deny", f"plan mode runs read-only tools only, and {call.tool} changes things")
    if call.kind == "write":
        if locs is None or not locs:
            return PermissionVerdict("ask", f"{call.tool} names no path that could be checked", hard=True)
        problem = write_where(locs, rules, places)
        if problem is not None:
            return problem
        if mode == "acceptEdits":
            return ALLOW
    if any(_tool_rule_hits(rule, call, locs, places, deny=False) for rule in rules.allow):
        return ALLOW
    hint = "--permission-mode acceptEdits" if call.kind == "write" else f"--allowedTools {call.tool}"
    return PermissionVerdict("ask", f"{call.tool} is not allowed in {mode} mode without a rule", hint=hint)
