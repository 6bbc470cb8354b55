"""The gate in front of every tool call: permission mode and rules (pure policy), then an
`Approver` when the answer is "ask". Headless runs have no approver: ask means deny."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .policy import permissions
from .ports import Approver, Tool


@dataclass(frozen=True, slots=True)
class GateDecision:
    allowed: bool
    message: str = ""


class ToolGate:
    def __init__(self, rules: permissions.PermissionRules, cwd: Path, approver: Approver | None = None) -> None:
        self.rules, self.cwd, self.approver = rules, cwd, approver

    async def check(self, tool: Tool, tool_input: dict[str, Any], *, hook_allowed: bool = False) -> GateDecision:
        """`hook_allowed`: a PreToolUse hook said allow, which skips asking but not deny rules."""
        verdict = permissions.check(tool.name, tool.read_only, self.rules)
        if verdict == "allow" or (hook_allowed and not self._denied_by_rule(tool.name)):
            return GateDecision(True)
        return GateDecision(False, (
            f"Permission to use {tool.name} was denied (permission mode '{self.rules.mode}'). Do not retry "
            f"this call; choose another way or tell the user which permission is needed "
            f"(e.g. --allowedTools {tool.name})."))

    def _denied_by_rule(self, name: str) -> bool:
        return permissions.check(name, True, permissions.PermissionRules(mode="bypassPermissions",
                                                                         deny=self.rules.deny)) == "deny"
