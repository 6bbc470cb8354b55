"""Every MCP server of a session, started together; their tools as loopwright tools."""

from __future__ import annotations

import asyncio
from typing import Any, Callable, Mapping, Sequence

from ..core.events import Event, Notice, SystemInit
from ..core.ports import Tool
from .config import ServerSpec, server_prefix, tool_name
from .names import wire_names
from .resources import ListResources, ReadResource
from .servers import Connection, connect_timeout
from .tools import McpTool

__all__ = ["McpServers"]


class McpServers:
    """Every configured server of a session: started together, each bounded by the connect
    timeout; `tools()` is what they offer now (it follows `tools/list_changed`)."""

    def __init__(self, specs: Sequence[ServerSpec], cwd: str, env: Mapping[str, str]) -> None:
        self.connections = [Connection(s, cwd, env, self._changed) for s in specs]
        self._started = False
        self._tools: list[Any] | None = None

    def _changed(self) -> None:
        self._tools = None

    async def start(self) -> None:
        if self._started:
            return
        self._started = True
        timeout = connect_timeout()
        await asyncio.gather(*(c.start(timeout) for c in self.connections))
        self._tools = None

    def tools(self) -> list[Any]:
        """loopwright tools (`mcp__server__tool`, unique and valid on the wire: `mcp.names`) of
        the connected servers; each connection's `renamed` maps the names given to the
        original ones, `unnamed` lists the tools left out."""
        if self._tools is None:
            live = [c for c in self.connections if c.status == "connected"]
            names = wire_names((c.spec.name, t.name) for c in live for t in c.tools)
            self._tools = []
            for c in live:
                c.renamed, c.unnamed = {}, []
                for t in c.tools:
                    name = names.get((c.spec.name, t.name))
                    if name is None:
                        c.unnamed.append(t.name)
                        continue
                    if name != tool_name(c.spec.name, t.name):
                        c.renamed[name] = t.name
                    self._tools.append(McpTool(c, t, name))
            if any(c.offers("resources") for c in live):
                self._tools += [ListResources(self.connections), ReadResource(self.connections)]
        return self._tools

    async def expand_prompt(self, text: str) -> str | None:
        """`/mcp__server__prompt args`: the server's prompt, its messages' text joined; None when
        the text names no prompt of a connected server. Arguments: `key=value` words, or the
        words in the order the prompt declares its arguments."""
        head, _, rest = text.strip().partition(" ")
        if not head.startswith("/mcp__"):
            return None
        for c in self.connections:
            prefix = "/" + server_prefix(c.spec.name)
            if c.status != "connected" or not head.startswith(prefix) or not c.offers("prompts"):
                continue
            listed = await c.request("list_prompts")
            prompt = next((p for p in listed.prompts if p.name == head[len(prefix):]), None)
            if prompt is None:
                continue
            got = await c.request("get_prompt", prompt.name, _prompt_args(prompt, rest))
            return "\n\n".join(getattr(m.content, "text", "") for m in got.messages).strip()
        return None

    def statuses(self) -> list[dict[str, Any]]:
        out = []
        for c in self.connections:
            entry: dict[str, Any] = {"name": c.spec.name, "status": c.status if c.status != "closed" else "connected"}
            if c.error:
                entry["error"] = c.error
            if c.renamed:  # the names the model sees that are not `mcp__<server>__<tool>` as the server said it
                entry["renamed_tools"] = dict(c.renamed)
            out.append(entry)
        return out

    def failures(self) -> list[str]:
        self.tools()
        out = [f"MCP server {c.spec.name!r} ({c.spec.source}) failed: {c.error}"
               for c in self.connections if c.status == "failed"]
        out += [f"MCP server {c.spec.name!r} ({c.spec.source}): tools {', '.join(map(repr, c.unnamed))} have no "
                "name that is unique on the wire; they are not offered" for c in self.connections if c.unnamed]
        return out

    def reporting(self, emit: Callable[[Event], None]) -> Callable[[Event], None]:
        """`system/init` carries each server's status; a server that failed is also a warning."""
        def with_status(event: Event) -> None:
            if not isinstance(event, SystemInit):
                emit(event)
                return
            from dataclasses import replace

            emit(replace(event, mcp_servers=tuple(self.statuses())))
            for line in self.failures():
                emit(Notice("warning", line if "not offered" in line else f"{line}; the run goes on without its tools"))
            for c in self.connections:
                for name, original in c.renamed.items():
                    emit(Notice("info", f"MCP server {c.spec.name!r}: tool {original!r} is offered as {name} (its "
                                        "name is too long or clashes with another once cleaned)"))

        return with_status

    async def aclose(self) -> None:
        await asyncio.gather(*(c.shutdown() for c in self.connections), return_exceptions=True)


def _prompt_args(prompt: Any, rest: str) -> dict[str, str]:
    import shlex

    try:
        words = shlex.split(rest)
    except ValueError:
        words = rest.split()
    named = dict(w.split("=", 1) for w in words if "=" in w)
    plain = [w for w in words if "=" not in w]
    declared = [a.name for a in prompt.arguments or ()]
    for name, value in zip([n for n in declared if n not in named], plain):
        named[name] = value
    return named

