"""Subagents as a capability: what the Agent and Workflow tools' subagents spent, in the run's
budget and result. The tools themselves are built where the loop is (`app.loopbuild`)."""

from __future__ import annotations

from typing import Any, Sequence

from ..engine.capability import Capability, Spend


class SubagentSpend(Capability):
    name = "subagents"

    def __init__(self, runner: Any) -> None:
        """`runner`: the session's `agents.runner.Subagents`."""
        self.runner = runner

    def spend(self) -> Sequence[Spend]:
        return list(self.runner.elsewhere())
