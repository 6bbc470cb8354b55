"""`Resources`: what a `Run` opens for its agent and must close — the model client it made, the
built-in tools (their background shells), MCP servers, subagents, the auto-mode classifier —
each made on first use, from the run's current `AgentSpec`."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Mapping, Sequence

from ..core.ports import Model, Tool
from ..permissions.rules import normalise_mode

if TYPE_CHECKING:
    from .spec import AgentSpec


class Resources:
    """`owner`: the `Run` these belong to (its subagents are started from it). `parent`: the
    resources of the run a subagent's run works inside; its MCP servers and background shells are
    the parent's, theirs to close."""

    def __init__(self, agent: AgentSpec, owner: Any, parent: Resources | None = None) -> None:
        self.agent, self.owner, self.parent = agent, owner, parent
        self._client: Model | None = None  # the client made here (None: not yet, or the agent's own)
        self._tools: Sequence[Tool] | None = None  # the built-in tools made here, when the agent names none
        self.mcp: Any = parent.mcp if parent is not None else None  # loopwright.mcp.toolset.McpServers
        self._subs: Any = None  # loopwright.subagents.runner.Subagents, once the Agent tool is offered
        self._auto: Any = None  # engine.automode.AutoClassifier: one per run, its counts kept across prompts
        self.set_aside: tuple[str, ...] = ()  # the allow rules auto mode sets aside, as last said

    def reconfigure(self, agent: AgentSpec) -> None:
        """Serve `agent` from now on; the classifier is made again when the model it follows changed."""
        from ..core.errors import UsageError

        old = self.agent
        if agent.cwd != old.cwd:
            raise UsageError(f"a run cannot move from {old.cwd} to {agent.cwd}: open another run")
        if self.mcp is not None and self.parent is None and tuple(agent.mcp_servers) != tuple(old.mcp_servers):
            raise UsageError("a run's MCP servers are fixed once they started: open another run")
        if (agent.model, agent.classifier_model, agent.model_client) != (old.model, old.classifier_model,
                                                                          old.model_client):
            self._auto = None
        self.agent = agent

    def client(self) -> Model:
        """The agent's model client, or the one made here (and closed here)."""
        if self.agent.model_client is not None:
            return self.agent.model_client
        if self._client is None:
            import os

            # a missing key is said now, before the run starts
            self._client = self.agent.outfitted().model_client(self.agent.model, os.environ, self.agent.env_origins)
        return self._client

    def tools(self) -> Sequence[Tool]:
        """The agent's tools, or the built-in ones made here."""
        if self.agent.tools is not None:
            return self.agent.tools
        if self._tools is None:
            self._tools = self.agent.outfitted().builtin_tools(self.agent.sandbox_config())
        return self._tools

    async def start_mcp(self, env: Mapping[str, str]) -> None:
        """Connect the agent's MCP servers, once (each bounded by MCP_TIMEOUT, 30 s); `env`: what
        their processes get."""
        if not self.agent.mcp_servers or self.mcp is not None:
            return
        self.mcp = self.agent.outfitted().mcp_servers(self.agent.mcp_servers, str(self.agent.cwd), env)
        await self.mcp.start()  # set before it starts: closing while they connect still closes them

    def subagents(self) -> Any:
        if self._subs is None:
            from ..subagents.runner import Subagents

            self._subs = Subagents(self.owner)
        return self._subs

    def classifier(self) -> Any:
        if normalise_mode(self.agent.permissions.mode) != "auto":
            return None
        if self._auto is None:
            from ..engine.automode import classifier_for

            a = self.agent
            self._auto = classifier_for(self.client(), a.model, a.classifier_model, a.memory, self.tools())
        return self._auto

    def background(self) -> Any:
        """The background shells of the tools (None when no tool runs any)."""
        return self.agent.outfitted().background_work(self.tools())

    async def aclose(self) -> None:
        """End the background shells, the MCP servers and the model client made here (a client
        given to the agent is the caller's to close; a subagent's shells and servers, its parent's)."""
        mine = self._tools is not None or (self.agent.tools is not None and self.parent is None)
        work = self.background() if mine else None
        if work is not None:
            await work.stop_all()
        if self.mcp is not None and self.parent is None:
            servers, self.mcp = self.mcp, None
            await servers.aclose()
        if self._client is not None:
            client, self._client = self._client, None
            await client.aclose()
