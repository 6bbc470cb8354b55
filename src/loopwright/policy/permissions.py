"""May this tool call run? A pure decision from the permission mode and the allow/deny rules.
Rules are `Tool` or `Tool(specifier)`; deny is checked before allow."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Decision = Literal["allow", "deny"]
MODES = ("default", "acceptEdits", "plan", "dontAsk", "bypassPermissions")
MODE_ALIASES = {"manual": "default"}


@dataclass(frozen=True, slots=True)
class PermissionRules:
    mode: str = "default"
    allow: tuple[str, ...] = ()
    deny: tuple[str, ...] = ()

    def removed_tools(self) -> frozenset[str]:
        """Bare names in the deny list take the tool out of the request altogether."""
        return frozenset(r for r in self.deny if "(" not in r)


def normalise_mode(mode: str) -> str | None:
    mode = MODE_ALIASES.get(mode, mode)
    return mode if mode in MODES else None


def _rule_tool(rule: str) -> tuple[str, str | None]:
    if rule.endswith(")") and "(" in rule:
        name, _, spec = rule.partition("(")
        return name.strip(), spec[:-1].strip()
    return rule.strip(), None


def _matches(rule: str, tool_name: str) -> bool:
    name, spec = _rule_tool(rule)
    if name != tool_name and name != "*":
        return False
    # Scoped rules other than a catch-all are matched per call by the full engine; a bare or
    # catch-all rule covers every call of the tool.
    return spec is None or spec in ("*", "")


def check(tool_name: str, read_only: bool, rules: PermissionRules) -> Decision:
    if any(_matches(r, tool_name) for r in rules.deny):
        return "deny"
    if rules.mode == "bypassPermissions":
        return "allow"
    if rules.mode == "plan" and not read_only:
        return "deny"
    if read_only or any(_matches(r, tool_name) for r in rules.allow):
        return "allow"
    return "deny"


def parse_tool_list(values: tuple[str, ...] | list[str]) -> tuple[str, ...]:
    """`--allowedTools "Bash,Read" "Edit"`: commas and spaces separate rules, except inside
    parentheses (`Bash(git diff *)` stays one rule)."""
    rules: list[str] = []
    for value in values:
        current, depth = "", 0
        for ch in value:
            if ch == "(":
                depth += 1
            elif ch == ")":
                depth = max(0, depth - 1)
            if ch in ", " and depth == 0:
                if current.strip():
                    rules.append(current.strip())
                current = ""
                continue
            current += ch
        if current.strip():
            rules.append(current.strip())
    return tuple(rules)
