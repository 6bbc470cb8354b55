"""Every MCP server of a session, started together; their tools as loopwright tools."""

from __future__ import annotations

import asyncio
from typing import Any, Mapping, Sequence

from .config import ServerSpec
from .servers import Connection, connect_timeout
from .tools import McpTool

__all__ = ["McpServers"]


class McpServers:
    """Every configured server of a session: started together, each bounded by the connect
    timeout; `tools()` is what they offer now (it follows `tools/list_changed`)."""

    def __init__(self, specs: Sequence[ServerSpec], cwd: str, env: Mapping[str, str]) -> None:
        self.connections = [Connection(s, cwd, env, self._changed) for s in specs]
        self.version = 0
        self._started = False
        self._tools: list[Any] | None = None

    def _changed(self) -> None:
        self.version += 1
        self._tools = None

    async def start(self) -> None:
        if self._started:
            return
        self._started = True
        timeout = connect_timeout()
        await asyncio.gather(*(c.start(timeout) for c in self.connections))
        self._tools = None

    def tools(self) -> list[Any]:
        """loopwright tools (`mcp__server__tool`) of the connected servers."""
        if self._tools is None:
            self._tools = [McpTool(c, t) for c in self.connections if c.status == "connected" for t in c.tools]
        return self._tools

    def statuses(self) -> list[dict[str, str]]:
        out = []
        for c in self.connections:
            entry = {"name": c.spec.name, "status": c.status if c.status != "closed" else "connected"}
            if c.error:
                entry["error"] = c.error
            out.append(entry)
        return out

    def failures(self) -> list[str]:
        return [f"MCP server {c.spec.name!r} ({c.spec.source}) failed: {c.error}"
                for c in self.connections if c.status == "failed"]

    async def aclose(self) -> None:
        await asyncio.gather(*(c.shutdown() for c in self.connections), return_exceptions=True)
