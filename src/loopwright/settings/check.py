"""Settings checked like code: names nobody knows are reported with the file, the key path and
the nearest valid name. An unknown top-level key or rule tool is a warning (Claude Code adds
names faster than any list); a hook that can never fire as written is an error. Names Claude
Code knows and loopwright does not use (`known.py`) pass silently."""

from __future__ import annotations

from typing import Any, Mapping

from ..policy.names import suggest
from . import known
from .scope import Finding


def check(data: Mapping[str, Any], source: str) -> list[Finding]:
    """Every finding for one settings file (already validated for shape)."""
    found: list[Finding] = []
    names = known.LOOPWRIGHT_KEYS | known.CLAUDE_CODE_KEYS
    for key in data:
        if key not in names:
            found.append(Finding("warning", source, key, "unknown key, ignored" + suggest(key, names)))
    permissions = data.get("permissions") or {}
    for key in permissions:
        if key not in known.PERMISSION_KEYS:
            found.append(Finding("warning", source, f"permissions.{key}", "unknown key, ignored"
                                 + suggest(key, known.PERMISSION_KEYS)))
    tools = tool_names()
    for kind in ("allow", "ask", "deny"):
        for i, rule in enumerate(permissions.get(kind) or ()):
            name = rule.partition("(")[0].strip()
            if not _is_tool(name, tools):
                found.append(Finding("warning", source, f"permissions.{kind}[{i}]",
                                     f"{rule!r} names no known tool, so it never applies" + suggest(name, tools)))
    for event, groups in (data.get("hooks") or {}).items():
        found += _check_event(event, groups, source, tools)
    return found


def _check_event(event: str, groups: list[dict[str, Any]], source: str, tools: frozenset[str]) -> list[Finding]:
    from ..hooks.spec import EVENTS

    key = f"hooks.{event}"
    if event in known.CLAUDE_CODE_ONLY_EVENTS:
        return [Finding("warning", source, key, "Claude Code fires this event, loopwright does not (yet): "
                        "these hooks will not run")]
    if event not in EVENTS:
        every = (*EVENTS, *sorted(known.CLAUDE_CODE_ONLY_EVENTS))
        return [Finding("error", source, key, "unknown hook event: these hooks would never run" + suggest(event, every))]
    found = []
    for g, group in enumerate(groups):
        matcher = (group.get("matcher") or "").strip()
        if matcher in ("", "*"):
            continue
        where = f"{key}[{g}].matcher"
        if event in known.NO_MATCHER_EVENTS:
            found.append(Finding("error", source, where, f"{event} takes no matcher: {matcher!r} would be ignored "
                                 f"and the hooks would run on every {event}; remove it"))
            continue
        values = tools if event in known.TOOL_EVENTS else known.MATCHER_VALUES.get(event)
        if values is not None:
            found += _check_names(matcher, values, event in known.TOOL_EVENTS, source, where)
    return found


def _check_names(matcher: str, values: frozenset[str], tool_event: bool, source: str, where: str) -> list[Finding]:
    """A matcher of plain names (`Bash|Edit`) checked against what the event can see; regular
    expressions are not. No name known: the hooks never run (error); some: a warning."""
    from ..hooks.spec import Matcher

    names = Matcher(matcher).names
    if names is None:
        return []
    unknown = sorted(n for n in names if not (_is_tool(n, values) if tool_event else n in values))
    if not unknown:
        return []
    what = "tool" if tool_event else "value"
    hints = "".join(suggest(n, values) for n in unknown)
    if len(unknown) == len(names):
        return [Finding("error", source, where, f"{matcher!r} matches no known {what}, so these hooks would "
                        f"never run{hints}")]
    return [Finding("warning", source, where, f"{', '.join(unknown)}: no such {what}{hints}")]


def _is_tool(name: str, tools: frozenset[str]) -> bool:
    return name in tools or name.startswith("mcp__") or name == "*"


def tool_names() -> frozenset[str]:
    from ..tools import BUILTIN_TOOL_NAMES

    return frozenset(BUILTIN_TOOL_NAMES) | known.CLAUDE_CODE_TOOLS | known.LOOPWRIGHT_EXTRA_TOOLS
