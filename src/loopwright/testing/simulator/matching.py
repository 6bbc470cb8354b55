"""Which requests a script rule's `match` fits: each match key's JSON type and its test of a
request body and headers. The keys are public API, listed in `script`'s docstring."""

from __future__ import annotations

from typing import Any

__all__ = ["MATCHERS", "MATCH_KEYS", "first_user_text", "last_user_text", "text_of"]

MATCH_KEYS: dict[str, type | tuple[type, ...]] = {
    "model": str,
    "tools_present": (list, str),
    "has_tools": bool,
    "system_contains": str,
    "last_user_contains": str,
    "first_user_contains": str,
    "stream": bool,
    "retry_count": int,
}


def text_of(content: Any) -> str:
    """Plain text of a message's content: text blocks and tool_result contents."""
    if isinstance(content, str):
        return content
    parts: list[str] = []
    for block in content if isinstance(content, list) else []:
        if not isinstance(block, dict):
            continue
        if block.get("type") == "text":
            parts.append(str(block.get("text", "")))
        elif block.get("type") == "tool_result":
            parts.append(text_of(block.get("content", "")))
    return "\n".join(parts)


def first_user_text(body: dict[str, Any]) -> str:
    for message in body.get("messages") or []:
        if isinstance(message, dict) and message.get("role") == "user":
            return text_of(message.get("content"))
    return ""


def last_user_text(body: dict[str, Any]) -> str:
    for message in reversed(body.get("messages") or []):
        if isinstance(message, dict) and message.get("role") == "user":
            return text_of(message.get("content"))
    return ""


def _tool_names(body: dict[str, Any]) -> set[str]:
    return {t["name"] for t in body.get("tools") or [] if isinstance(t, dict) and isinstance(t.get("name"), str)}


def _wanted_tools(value: list[str] | str) -> set[str]:
    return {value} if isinstance(value, str) else set(value)


MATCHERS = {
    "model": lambda v, body, h: body.get("model") == v,
    "tools_present": lambda v, body, h: _wanted_tools(v) <= _tool_names(body),
    "has_tools": lambda v, body, h: bool(body.get("tools")) == v,
    "system_contains": lambda v, body, h: v in text_of(body.get("system") or ""),
    "last_user_contains": lambda v, body, h: v in last_user_text(body),
    "first_user_contains": lambda v, body, h: v in first_user_text(body),
    "stream": lambda v, body, h: bool(body.get("stream")) == v,
    "retry_count": lambda v, body, h: h.get("x-stainless-retry-count", "0") == str(v),
}
