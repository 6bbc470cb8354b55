"""Request validation the real Chat Completions API performs, with its 400 error bodies.
`check_chat` returns the error body for the first problem, or None for a valid body.
"""

from __future__ import annotations

from typing import Any

__all__ = ["check_chat"]

_ROLES = ("system", "developer", "user", "assistant", "tool", "function")


def _invalid(message: str, param: str | None = None, code: str | None = None) -> dict[str, Any]:
    return {"error": {"message": message, "type": "invalid_request_error", "param": param, "code": code}}


def _json_type(value: Any) -> str:
    names = {bool: "a boolean", int: "an integer", float: "a decimal", str: "a string",
             list: "an array", dict: "an object", type(None): "null"}
    return names.get(type(value), "an object")


def check_chat(body: dict[str, Any]) -> dict[str, Any] | None:
    """The 400 error body for the first problem the real API would reject, or None."""
    if "model" not in body:
        return _invalid("you must provide a model parameter")
    if not isinstance(body["model"], str):
        got = _json_type(body["model"])
        return _invalid(f"Invalid type for 'model': expected a string, but got {got} instead.", "model", "invalid_type")
    messages = body.get("messages")
    if messages is None:
        return _invalid("Missing required parameter: 'messages'.", "messages", "missing_required_parameter")
    if not isinstance(messages, list):
        got = _json_type(messages)
        return _invalid(f"Invalid type for 'messages': expected an array of objects, but got {got} instead.",
                        "messages", "invalid_type")
    if not messages:
        return _invalid("Invalid 'messages': empty array. Expected an array with minimum length 1,"
                        " but got an empty array instead.", "messages", "empty_array")
    if body.get("stream_options") is not None and not body.get("stream"):
        return _invalid("The 'stream_options' parameter is only allowed when 'stream' is enabled.", "stream_options")
    return _check_roles(messages) or _check_tool_pairing(messages)


def _check_roles(messages: list[Any]) -> dict[str, Any] | None:
    for n, message in enumerate(messages):
        if not isinstance(message, dict):
            got = _json_type(message)
            return _invalid(f"Invalid type for 'messages[{n}]': expected an object, but got {got} instead.",
                            f"messages[{n}]", "invalid_type")
        if message.get("role") not in _ROLES:
            return _invalid(f"Invalid value: {message.get('role')!r}. Supported values are: 'system',"
                            " 'assistant', 'user', 'function', 'tool', and 'developer'.",
                            f"messages[{n}].role", "invalid_value")
    return None


def _call_ids(message: dict[str, Any]) -> list[str]:
    calls = message.get("tool_calls") if message.get("role") == "assistant" else None
    return [str(c.get("id")) for c in calls or [] if isinstance(c, dict)]


def _check_tool_pairing(messages: list[dict[str, Any]]) -> dict[str, Any] | None:
    """Every tool call answered by tool messages right after it; no tool message unasked."""
    pending: list[str] = []
    caller = 0
    for n, message in enumerate(messages):
        if message.get("role") == "tool":
            if message.get("tool_call_id") not in pending:
                # "preceeding" is how the real API spells it.
                return _invalid("Invalid parameter: messages with role 'tool' must be a response to a"
                                " preceeding message with 'tool_calls'.", f"messages.[{n}].role")
            pending.remove(message["tool_call_id"])
            continue
        if pending:
            break
        pending, caller = _call_ids(message), n
    if pending:
        return _invalid("An assistant message with 'tool_calls' must be followed by tool messages responding"
                        " to each 'tool_call_id'. The following tool_call_ids did not have response messages: "
                        + ", ".join(pending), f"messages.[{caller}].role")
    return None
