"""MCP servers' tools as a capability. The servers are the run's (`app.resources`: started once,
closed with the run); what they offer may change during a run (`tools/list_changed`), so the
tools are `LiveTools`: every request offers what the servers offer at that moment."""

from __future__ import annotations

from typing import Any, Callable, Sequence

from ..core.ports import Tool
from ..engine.capability import Capability, LiveTools


class McpTools(Capability):
    name = "mcp"

    def __init__(self, servers: Any, only: Callable[[str], bool] | None = None) -> None:
        """`servers`: the run's `mcp.toolset.McpServers`; `only`: which of their tools a
        subagent's definition allows (None: all)."""
        self.servers, self.only = servers, only

    def tools(self) -> Sequence[Tool]:
        return LiveTools(self._offered)

    def _offered(self) -> Sequence[Tool]:
        tools: Sequence[Tool] = self.servers.tools()
        return tools if self.only is None else [t for t in tools if self.only(t.name)]
