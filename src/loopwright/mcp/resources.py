"""The servers' resources as two tools with Claude Code's names: `ListMcpResourcesTool` (every
resource of one server or all, as JSON) and `ReadMcpResourceTool` (one resource's contents)."""

from __future__ import annotations

import json
from typing import Any, Sequence

from ..core.errors import ToolInputError
from ..core.ports import Access, ToolContext, ToolOutput
from .servers import Connection, ServerGone
from .tools import cap_text

__all__ = ["ListResources", "ReadResource"]


class _ResourceTool:
    name: str  # each tool's own
    read_only = True

    def __init__(self, connections: Sequence[Connection]) -> None:
        self.connections = connections

    def access(self, tool_input: dict[str, Any]) -> Access:
        return Access("read")

    def _named(self, server: Any) -> list[Connection]:
        if server is None:
            return [c for c in self.connections if c.status == "connected"]
        found = [c for c in self.connections if c.spec.name == server]
        if not found:
            names = ", ".join(c.spec.name for c in self.connections) or "none"
            raise ToolInputError(f"{self.name}: no MCP server named {server!r}; the servers are: {names}")
        return found


class ListResources(_ResourceTool):
    name = "ListMcpResourcesTool"
    description = ("List the resources the MCP servers offer (name, uri, description, mimeType, server); "
                   "`server` limits the list to one server.")
    input_schema = {"type": "object", "properties": {"server": {"type": "string"}}, "additionalProperties": False}

    def validate(self, raw: dict[str, Any]) -> dict[str, Any]:
        if not isinstance(raw.get("server", ""), str) or set(raw) - {"server"}:
            raise ToolInputError(f"Invalid input for {self.name}: expected {{\"server\"?: string}}")
        return raw

    async def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolOutput:
        out: list[dict[str, Any]] = []
        try:
            connections = self._named(args.get("server"))
        except ToolInputError as exc:
            return ToolOutput(str(exc), is_error=True)
        for c in connections:
            if not c.offers("resources"):
                continue
            try:
                listed = await c.request("list_resources")
            except (ServerGone, Exception) as exc:  # noqa: BLE001 - one server's failure is named
                return ToolOutput(f"MCP server {c.spec.name!r} could not list its resources: {exc}", is_error=True)
            out += [{"name": r.name, "uri": str(r.uri), "description": r.description, "mimeType": r.mime_type,
                     "server": c.spec.name} for r in listed.resources]
        return ToolOutput(cap_text(json.dumps(out, ensure_ascii=False)))


class ReadResource(_ResourceTool):
    name = "ReadMcpResourceTool"
    description = "Read one resource of an MCP server by its uri."
    input_schema = {"type": "object", "properties": {"server": {"type": "string"}, "uri": {"type": "string"}},
                    "required": ["server", "uri"], "additionalProperties": False}

    def validate(self, raw: dict[str, Any]) -> dict[str, Any]:
        if not (isinstance(raw.get("server"), str) and isinstance(raw.get("uri"), str)) or set(raw) - {"server", "uri"}:
            raise ToolInputError(f"Invalid input for {self.name}: expected {{\"server\": string, \"uri\": string}}")
        return raw

    async def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolOutput:
        try:
            [c] = self._named(args["server"])
            read = await c.request("read_resource", args["uri"])
        except ToolInputError as exc:
            return ToolOutput(str(exc), is_error=True)
        except Exception as exc:  # noqa: BLE001
            return ToolOutput(f"MCP server {args['server']!r} could not read {args['uri']!r}: {exc}", is_error=True)
        contents = [item.model_dump(mode="json", exclude_none=True, by_alias=True) for item in read.contents]
        return ToolOutput(cap_text(json.dumps({"contents": contents}, ensure_ascii=False)))
