"""An MCP server's tool as a loopwright tool: `mcp__<server>__<tool>`, the server's JSON schema
passed through, the result mapped to a tool result (text and images; `structuredContent` as its
JSON; `isError` kept). Every failure — a dead server, a timeout, a malformed answer — is an
`is_error` result naming the server and the tool, never an exception out of the loop."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from ..core.errors import ToolInputError
from ..core.ports import Access, ToolContext, ToolOutput
from .config import tool_name
from .servers import Connection, ServerGone, tool_timeout

__all__ = ["McpTool", "cap_text", "result_output"]

MAX_OUTPUT_CHARS = 100_000  # about 25,000 tokens, Claude Code's default; MAX_MCP_OUTPUT_TOKENS overrides


class McpTool:
    """Not read-only for the gate (every call is asked for unless a rule allows it); calls of a
    tool the server annotates `readOnlyHint` may run beside other read-only calls."""

    def __init__(self, connection: Connection, tool: Any) -> None:
        self.connection, self.server_tool = connection, tool
        self.server = connection.spec.name
        self.remote_name = tool.name
        self.name = tool_name(self.server, tool.name)
        self.description = (tool.description or f"The {tool.name} tool of MCP server {self.server}.")[:4096]
        hints = getattr(tool, "annotations", None)
        self.read_only = bool(getattr(hints, "read_only_hint", False))
        schema = tool.input_schema if isinstance(tool.input_schema, dict) else {}
        self._schema = schema if schema.get("type") == "object" else {"type": "object", "properties": {}}

    @property
    def input_schema(self) -> dict[str, Any]:
        return self._schema

    def access(self, tool_input: dict[str, Any]) -> Access:
        return Access("other")

    def validate(self, raw: dict[str, Any]) -> dict[str, Any]:
        if not isinstance(raw, dict):
            raise ToolInputError(f"Invalid input for {self.name}: expected a JSON object of its arguments")
        return raw  # the server checks its own schema and says what is wrong

    async def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolOutput:
        where = f"MCP server {self.server!r} tool {self.remote_name!r}"
        timeout = tool_timeout(self.connection.spec)
        try:
            result = await self.connection.call(self.remote_name, args, timeout, ctx.progress)
        except asyncio.TimeoutError:
            return ToolOutput(f"{where} timed out after {timeout:g} s without an answer or a progress report; the "
                              "call was cancelled", is_error=True)
        except ServerGone as exc:
            return ToolOutput(f"{where} is not available: {exc}", is_error=True)
        except Exception as exc:  # noqa: BLE001 - a protocol error, a malformed answer
            return ToolOutput(f"{where} failed: {type(exc).__name__}: {exc}"[:2000], is_error=True)
        return result_output(result)


def result_output(result: Any) -> ToolOutput:
    """A `CallToolResult` as a tool result."""
    structured = getattr(result, "structured_content", None)
    if result.is_error:
        return ToolOutput(cap_text(_joined_text(result.content)) or "the tool reported an error", is_error=True)
    if structured is not None:
        return ToolOutput(cap_text(json.dumps(structured, ensure_ascii=False)))
    blocks: list[dict[str, Any]] = []
    for item in result.content or ():
        kind = getattr(item, "type", "")
        if kind == "text":
            blocks.append({"type": "text", "text": item.text})
        elif kind == "image":
            blocks.append({"type": "image", "source": {"type": "base64", "media_type": item.mime_type,
                                                        "data": item.data}})
        elif kind == "resource":
            inner = item.resource
            text = getattr(inner, "text", None)
            blocks.append({"type": "text", "text": text if text is not None else f"[resource {inner.uri}]"})
        else:
            blocks.append({"type": "text", "text": f"[{kind or 'unknown'} content]"})
    if all(b["type"] == "text" for b in blocks):
        return ToolOutput(cap_text("\n".join(b["text"] for b in blocks)))
    return ToolOutput(tuple(blocks))


def _joined_text(content: Any) -> str:
    return "\n".join(getattr(c, "text", "") for c in content or () if getattr(c, "type", "") == "text")


def cap_text(text: str) -> str:
    import os

    raw = os.environ.get("MAX_MCP_OUTPUT_TOKENS", "")
    limit = int(raw) * 4 if raw.isdigit() and int(raw) > 0 else MAX_OUTPUT_CHARS
    if len(text) <= limit:
        return text
    return (text[:limit] + f"\n\n[output truncated: the tool returned {len(text):,} characters, over the "
            f"{limit:,} kept; ask the tool for less, e.g. a page or a filter]")
