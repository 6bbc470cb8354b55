"""`Agent`: the model hands a sub-task to a subagent — a full agent loop of its own with a fresh
context, the tools its definition allows and the same permission rules — and gets its final
answer back as the tool result. Several calls in one response run at the same time."""

from __future__ import annotations

from typing import Any, Awaitable, Callable

from ..core.errors import ToolInputError
from ..core.ports import Access, ToolContext, ToolOutput
from .definitions import AgentDef

Spawn = Callable[[AgentDef, str, "str | None", "str | None"], Awaitable[tuple[str, bool]]]


class AgentTool:
    name = "Agent"
    read_only = True  # for scheduling only: what a subagent does goes through its own gate

    def __init__(self, agents: dict[str, AgentDef], spawn: Spawn) -> None:
        self.agents, self.spawn = agents, spawn
        listed = "\n".join(f"- {a.name}: {a.description} (Tools: {_tools_of(a)})" for a in agents.values())
        self.description = ("Hand a self-contained sub-task to a subagent with a fresh context: give it a short "
                            "description and a complete prompt (it sees nothing of this conversation). Its final "
                            "answer comes back as the result; several calls in one response run at the same "
                            f"time. Agent types (subagent_type; default general-purpose):\n{listed}")

    @property
    def input_schema(self) -> dict[str, Any]:
        return {"type": "object", "additionalProperties": False, "required": ["description", "prompt"],
                "properties": {
                    "description": {"type": "string", "description": "The task in 3-5 words."},
                    "prompt": {"type": "string", "description": "The whole task for the subagent."},
                    "subagent_type": {"type": "string", "description": "Which agent type to use."},
                    "model": {"type": "string", "description": "A model alias to run it on, if not its own."},
                    "isolation": {"type": "string", "enum": ["worktree"], "description": "worktree: it works on "
                                  "its own copy of the repository (a git worktree); its changes come back on a "
                                  "branch, not in your files."}}}

    def validate(self, raw: dict[str, Any]) -> dict[str, Any]:
        unknown = sorted(set(raw) - set(self.input_schema["properties"]))
        if unknown:
            raise ToolInputError(f"Agent: unknown field(s) {', '.join(unknown)}")
        for key in ("description", "prompt"):
            if not isinstance(raw.get(key), str) or not raw[key].strip():
                raise ToolInputError(f"Agent: `{key}` is required and must be text")
        for key in ("subagent_type", "model"):
            if key in raw and not isinstance(raw[key], str):
                raise ToolInputError(f"Agent: `{key}` must be text")
        if raw.get("isolation") not in (None, "worktree"):
            raise ToolInputError(f"Agent: `isolation` must be \"worktree\", got {raw['isolation']!r}")
        return raw

    def access(self, tool_input: dict[str, Any]) -> Access:
        return Access("session")

    async def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolOutput:
        kind = args.get("subagent_type") or "general-purpose"
        agent = self.agents.get(kind)
        if agent is None:
            return ToolOutput(f"Agent type {kind!r} not found. Available agents: {', '.join(self.agents)}",
                              is_error=True)
        text, failed = await self.spawn(agent, args["prompt"], args.get("model"), args.get("isolation") or agent.isolation)
        return ToolOutput(text, is_error=failed)


def _tools_of(agent: AgentDef) -> str:
    if agent.tools:
        return ", ".join(t for t in agent.tools if t not in agent.disallowed)
    return f"All tools except {', '.join(agent.disallowed)}" if agent.disallowed else "*"
