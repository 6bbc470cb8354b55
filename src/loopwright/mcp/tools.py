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

    def __init__(self, connection: Connection, tool: Any, name: str | None = None) -> None:
        self.connection, self.server_tool = connection, tool
        self.server = connection.spec.name
        self.remote_name = tool.name
        self.name = name or tool_name(self.server, tool.name)
        self.description = (tool.description or f"The {tool.name} tool of MCP server {self.server}.")[:4096]
        if self.name != tool_name(self.server, tool.name):  # the model can tell a renamed tool by its own name
            self.description += f"\n\n(MCP server {self.server!r}, tool {tool.name[:200]!r}.)"
        hints = getattr(tool, "annotations", None)
        self.read_only = bool(getattr(hints, "read_only_hint", False))
        self._schema, why = usable_schema(tool.input_schema)
        if why:  # the model is told; the server still checks the arguments it gets
            self.description += f"\n\n(The server's input schema for this tool was unusable ({why}); any object is sent.)"

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
        timeout, source = tool_timeout(self.connection.spec)
        try:
            result = await self.connection.call(self.remote_name, args, timeout, ctx.progress)
        except asyncio.TimeoutError:
            return ToolOutput(f"{where} timed out after {timeout:g} s ({source}) without an answer or a progress "
                              "report; the call was cancelled", is_error=True)
        except ServerGone as exc:
            return ToolOutput(f"{where} is not available: {exc}", is_error=True)
        except Exception as exc:  # noqa: BLE001 - a protocol error, a malformed answer
            return ToolOutput(f"{where} failed: {type(exc).__name__}: {exc}"[:2000], is_error=True)
        return result_output(result)


MAX_SCHEMA_CHARS = 100_000  # a schema is sent with every request: a huge one is a server's mistake


def usable_schema(schema: Any) -> tuple[dict[str, Any], str]:
    """The server's input schema if the Messages API can take it (an object schema, `properties`
    an object of schemas, `required` a list of names, a sane size), else an open object schema
    and why: one bad schema would make the API refuse every request of the session."""
    open_schema: dict[str, Any] = {"type": "object", "properties": {}}
    if not isinstance(schema, dict) or schema.get("type") != "object":
        return open_schema, "" if not isinstance(schema, dict) or not schema else f"type {schema.get('type')!r} is not \"object\""
    props, required = schema.get("properties", {}), schema.get("required", [])
    if not isinstance(props, dict) or not all(isinstance(v, (dict, bool)) for v in props.values()):
        return open_schema, "its properties are not an object of schemas"
    if not isinstance(required, list) or not all(isinstance(r, str) for r in required):
        return open_schema, "its required is not a list of names"
    try:
        size = len(json.dumps(schema))
    except (TypeError, ValueError):
        return open_schema, "it is not JSON"
    if size > MAX_SCHEMA_CHARS:
        return open_schema, f"it is {size:,} characters long, over {MAX_SCHEMA_CHARS:,}"
    return schema, ""


# What the Messages API takes in an image block: these media types, at most 5 MB of base64 each.
IMAGE_TYPES = {"image/jpeg": (b"\xff\xd8\xff",), "image/png": (b"\x89PNG\r\n\x1a\n",),
               "image/gif": (b"GIF87a", b"GIF89a"), "image/webp": (b"RIFF",)}
MAX_IMAGE_BASE64 = 5 * 1024 * 1024
MAX_IMAGES = 20  # per result: every image stays in the conversation, and a request holds a few hundred at most
MAX_IMAGES_BASE64 = 20 * 1024 * 1024  # per result, under the API's 32 MB for a whole request


def result_output(result: Any) -> ToolOutput:
    """A `CallToolResult` as a tool result, checked before the model sees it: text capped as a
    whole (MAX_MCP_OUTPUT_TOKENS), an image kept only if the API would take it (else a short
    text saying what was dropped), other content named rather than passed on."""
    structured = getattr(result, "structured_content", None)
    if result.is_error:
        return ToolOutput(cap_text(_joined_text(result.content)) or "the tool reported an error", is_error=True)
    if structured is not None:
        return ToolOutput(cap_text(json.dumps(structured, ensure_ascii=False)))
    blocks: list[dict[str, Any]] = []
    images = image_bytes = 0
    for item in result.content or ():
        kind = getattr(item, "type", "")
        if kind == "text":
            blocks.append({"type": "text", "text": item.text})
        elif kind == "image":
            why = image_problem(item.mime_type, item.data)
            if why is None and images >= MAX_IMAGES:
                why = f"more than {MAX_IMAGES} images in one result"
            if why is None and image_bytes + len(item.data) > MAX_IMAGES_BASE64:
                why = f"the result's images would pass {MAX_IMAGES_BASE64 // (1024 * 1024)} MB"
            if why is not None:
                blocks.append({"type": "text", "text": f"[an image was dropped: {why}]"})
                continue
            images, image_bytes = images + 1, image_bytes + len(item.data)
            blocks.append({"type": "image", "source": {"type": "base64", "media_type": item.mime_type,
                                                        "data": item.data}})
        elif kind == "resource":
            inner = item.resource
            text = getattr(inner, "text", None)
            blocks.append({"type": "text", "text": text if text is not None else
                           f"[resource {str(inner.uri)[:500]} ({str(getattr(inner, 'mime_type', None) or 'binary')[:100]}): "
                           "its binary contents are not shown]"})
        else:
            blocks.append({"type": "text", "text": f"[{str(kind)[:50] or 'unknown'} content: not shown]"})
    if all(b["type"] == "text" for b in blocks):
        return ToolOutput(cap_text("\n".join(b["text"] for b in blocks)))
    return ToolOutput(tuple(_capped_blocks(blocks)))


def image_problem(media_type: Any, data: Any) -> str | None:
    """Why the API would refuse this image block, or None."""
    import base64
    import binascii

    shown = str(media_type)[:100]
    if media_type not in IMAGE_TYPES:
        return f"its media type {shown!r} is not one of {', '.join(IMAGE_TYPES)}"
    if not isinstance(data, str) or not data:
        return "it has no data"
    if len(data) > MAX_IMAGE_BASE64:
        return f"{len(data):,} characters of base64, over the {MAX_IMAGE_BASE64:,} one image may have"
    try:
        raw = base64.b64decode(data, validate=True)
    except (binascii.Error, ValueError):
        return "its data is not valid base64"
    if not raw.startswith(IMAGE_TYPES[media_type]) or (media_type == "image/webp" and raw[8:12] != b"WEBP"):
        return f"its bytes are not a {media_type.split('/')[1].upper()} image"
    return None


def _capped_blocks(blocks: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Text blocks beside images share one text budget, as a text-only result has."""
    limit = output_limit()
    total = sum(len(b["text"]) for b in blocks if b["type"] == "text")
    if total <= limit:
        return blocks
    left, out = limit, []
    for b in blocks:
        if b["type"] != "text":
            out.append(b)
        elif left > 0:
            out.append({"type": "text", "text": b["text"][:left]})
            left -= len(out[-1]["text"])
    out.append({"type": "text", "text": _truncation_note(total, limit)})
    return out


def _joined_text(content: Any) -> str:
    return "\n".join(getattr(c, "text", "") for c in content or () if getattr(c, "type", "") == "text")


def output_limit() -> int:
    import os

    raw = os.environ.get("MAX_MCP_OUTPUT_TOKENS", "")
    return int(raw) * 4 if raw.isdigit() and int(raw) > 0 else MAX_OUTPUT_CHARS


def cap_text(text: str) -> str:
    limit = output_limit()
    if len(text) <= limit:
        return text
    return text[:limit] + "\n\n" + _truncation_note(len(text), limit)


def _truncation_note(total: int, limit: int) -> str:
    return (f"[output truncated: the tool returned {total:,} characters, over the {limit:,} kept; ask the tool "
            "for less, e.g. a page or a filter]")
