"""Subagents as a capability: the Agent and Workflow tools (built where the loop is, as tools
are adapters: `app.loopbuild`) and what their subagents spent, in the run's budget and result."""

from __future__ import annotations

from typing import Any, Sequence

from ..core.ports import Tool
from ..engine.capability import Capability, Spend


class Subagents(Capability):
    name = "subagents"

    def __init__(self, runner: Any, tools: Sequence[Tool] = ()) -> None:
        """`runner`: the session's `agents.runner.Subagents` (it outlives the run)."""
        self.runner, self.offered = runner, tuple(tools)

    def tools(self) -> Sequence[Tool]:
        return self.offered

    def spend(self) -> Sequence[Spend]:
        return list(self.runner.elsewhere())
