"""The subagents of one agent: each call of the `Agent` tool runs a child agent made by the
caller's factory (its own loop, fresh context, narrowed tools, the same rules), nesting bounded,
and what every child spent is counted as the parent's (`usageByRole.subagents`, the budget)."""

from __future__ import annotations

from typing import Any, Callable

from ..core.events import ModelUsage
from .definitions import AgentDef
from .tool import AgentTool

MAX_DEPTH = 3  # subagent levels below the main agent


class Subagents:
    def __init__(self, agents: dict[str, AgentDef], make_child: Callable[[AgentDef, str | None, int], Any],
                 depth: int = 0, max_depth: int = MAX_DEPTH) -> None:
        self.agents, self.make_child, self.depth, self.max_depth = agents, make_child, depth, max_depth
        self.usage: dict[str, ModelUsage] = {}

    def tool(self) -> AgentTool | None:
        """The `Agent` tool, unless this agent is at the deepest level allowed."""
        return AgentTool(self.agents, self.spawn) if self.depth < self.max_depth else None

    async def spawn(self, agent: AgentDef, prompt: str, model: str | None) -> tuple[str, bool]:
        child = self.make_child(agent, model, self.depth + 1)
        result = await child.run(prompt)
        for name, mu in result.model_usage.items():
            self.usage[name] = self.usage.get(name, ModelUsage()) + mu
        if result.is_error:
            why = "; ".join(result.errors) or result.terminal_reason
            return f"The subagent stopped before it finished ({why}). What it said last:\n\n{result.result}", True
        return result.result or "(the subagent gave no answer)", False

    def elsewhere(self) -> list[tuple[str, str, ModelUsage]]:
        """What the subagents spent, for the parent's result and budget."""
        return [("subagents", name, mu) for name, mu in self.usage.items()]
