"""Request validation the real Messages API performs, with its 400 wording (anthropic-api.md §2).
`check_request` returns the error message for the first violation, or None for a valid body.
"""

from __future__ import annotations

from dataclasses import field
from typing import Any

from ...core.fastclass import dataclass

__all__ = ["cache_breakpoints", "check_request"]

_TOOL_USE_MISSING = (
    "messages.{n}: `tool_use` ids were found without `tool_result` blocks immediately after: {ids}."
    " Each `tool_use` block must have a corresponding `tool_result` block in the next message."
)
_UNEXPECTED_RESULT = (
    "messages.{n}.content.{m}: unexpected `tool_use_id` found in `tool_result` blocks: {id}."
    " Each `tool_result` block must have a corresponding `tool_use` block in the previous message."
)
_EMPTY = (
    "messages.{n}: all messages must have non-empty content"
    " except for the optional final assistant message"
)


@dataclass
class _Turn:
    """Consecutive same-role messages, merged the way the API merges them before checking."""

    role: str
    # (message index, block index, block) so errors can name the original position
    blocks: list[tuple[int, int, dict[str, Any]]] = field(default_factory=list)


def check_request(body: dict[str, Any], *, count_tokens: bool = False) -> str | None:
    required = ("model", "messages") if count_tokens else ("model", "max_tokens", "messages")
    for name in required:
        if name not in body:
            return f"{name}: Field required"
    return (_check_fields(body) or _check_messages(body["messages"]) or _check_pairing(body["messages"])
            or _check_cache_control(body))


def _check_fields(body: dict[str, Any]) -> str | None:
    if not isinstance(body["model"], str):
        return "model: Input should be a valid string"
    max_tokens = body.get("max_tokens", 1)
    if not isinstance(max_tokens, int) or isinstance(max_tokens, bool):
        return "max_tokens: Input should be a valid integer"
    if max_tokens < 1:
        return "max_tokens: Input should be greater than or equal to 1"
    if not isinstance(body["messages"], list):
        return "messages: Input should be a valid list"
    system = body.get("system")
    if system is not None and not isinstance(system, (str, list)):
        return "system: Input should be a valid string or a list of text blocks"
    tools = body.get("tools")
    if tools is not None:
        if not isinstance(tools, list):
            return "tools: Input should be a valid list"
        for i, tool in enumerate(tools):
            if not isinstance(tool, dict) or not isinstance(tool.get("name"), str):
                return f"tools.{i}.name: Field required"
    return None


def _check_messages(messages: list[Any]) -> str | None:
    if not messages:
        return "messages: at least one message is required"
    for n, message in enumerate(messages):
        if not isinstance(message, dict):
            return f"messages.{n}: Input should be a valid dictionary"
        if message.get("role") not in ("user", "assistant"):
            return f"messages.{n}.role: Input should be 'user' or 'assistant'"
        if "content" not in message:
            return f"messages.{n}.content: Field required"
        problem = _check_content(n, message["content"], final=n == len(messages) - 1, role=message["role"])
        if problem:
            return problem
    if messages[0]["role"] != "user":
        return 'messages: first message must use the "user" role'
    return None


def _check_content(n: int, content: Any, *, final: bool, role: str) -> str | None:
    if not isinstance(content, (str, list)):
        return f"messages.{n}.content: Input should be a valid string or a list of content blocks"
    if not content and not (final and role == "assistant"):
        return _EMPTY.format(n=n)
    for m, block in enumerate(content if isinstance(content, list) else []):
        if not isinstance(block, dict) or not isinstance(block.get("type"), str):
            return f"messages.{n}.content.{m}.type: Field required"
        if block["type"] == "tool_use" and not isinstance(block.get("id"), str):
            return f"messages.{n}.content.{m}.tool_use.id: Field required"
        if block["type"] == "tool_use" and not isinstance(block.get("input"), dict):
            return f"messages.{n}.content.{m}.tool_use.input: Input should be a valid dictionary"
        if block["type"] == "tool_result" and not isinstance(block.get("tool_use_id"), str):
            return f"messages.{n}.content.{m}.tool_result.tool_use_id: Field required"
    return None


def _turns(messages: list[dict[str, Any]]) -> list[_Turn]:
    turns: list[_Turn] = []
    for n, message in enumerate(messages):
        content = message["content"]
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content
        if not turns or turns[-1].role != message["role"]:
            turns.append(_Turn(message["role"]))
        turns[-1].blocks += [(n, m, block) for m, block in enumerate(blocks)]
    return turns


def _leading_result_ids(turn: _Turn | None) -> set[str]:
    """Ids of the tool_result blocks that open a user turn (results must come first)."""
    ids: set[str] = set()
    for _, _, block in turn.blocks if turn else []:
        if block["type"] != "tool_result":
            break
        ids.add(block["tool_use_id"])
    return ids


def _check_pairing(messages: list[dict[str, Any]]) -> str | None:
    turns = _turns(messages)
    for k, turn in enumerate(turns):
        if turn.role == "assistant":
            uses = [(n, b["id"]) for n, _, b in turn.blocks if b["type"] == "tool_use"]
            answered = _leading_result_ids(turns[k + 1] if k + 1 < len(turns) else None)
            missing = [(n, use_id) for n, use_id in uses if use_id not in answered]
            if missing:
                ids = ", ".join(use_id for _, use_id in missing)
                return _TOOL_USE_MISSING.format(n=missing[0][0], ids=ids)
            continue
        previous = turns[k - 1] if k > 0 else None
        asked = {b["id"] for _, _, b in previous.blocks if b["type"] == "tool_use"} if previous else set()
        for n, m, block in turn.blocks:
            if block["type"] == "tool_result" and block["tool_use_id"] not in asked:
                return _UNEXPECTED_RESULT.format(n=n, m=m, id=block["tool_use_id"])
    return None


_MAX_BREAKPOINTS = 4


def _marked_blocks(body: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """(where, block) for every tool, system block and message block that carries cache_control."""
    found: list[tuple[str, dict[str, Any]]] = []
    for i, tool in enumerate(body.get("tools") or []):
        if "cache_control" in tool:
            found.append((f"tools.{i}", tool))
    system = body.get("system")
    for i, block in enumerate(system if isinstance(system, list) else []):
        if isinstance(block, dict) and "cache_control" in block:
            found.append((f"system.{i}", block))
    for n, message in enumerate(body["messages"]):
        content = message["content"]
        for m, block in enumerate(content if isinstance(content, list) else []):
            if "cache_control" in block:
                found.append((f"messages.{n}.content.{m}", block))
    return found


def cache_breakpoints(body: dict[str, Any]) -> list[str]:
    """Where the request's prompt-cache breakpoints are, in prompt order (tools, system, messages)."""
    return [where for where, _ in _marked_blocks(body)]


def _check_cache_control(body: dict[str, Any]) -> str | None:
    marked = _marked_blocks(body)
    if len(marked) > _MAX_BREAKPOINTS:
        return f"A maximum of {_MAX_BREAKPOINTS} blocks with cache_control may be provided. Found {len(marked)}."
    for where, block in marked:
        control = block["cache_control"]
        if not isinstance(control, dict) or control.get("type") != "ephemeral":
            return f"{where}.cache_control.type: Input should be 'ephemeral'"
        if control.get("ttl", "5m") not in ("5m", "1h"):
            return f"{where}.cache_control.ttl: Input should be '5m' or '1h'"
        if block.get("type") in ("thinking", "redacted_thinking"):
            return f"{where}.{block['type']}.cache_control: Extra inputs are not permitted"
        if block.get("type") == "text" and not block.get("text"):
            return f"{where}: cache_control cannot be set for empty text blocks"
    return None
