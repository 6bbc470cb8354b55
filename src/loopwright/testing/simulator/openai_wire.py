"""What the OpenAI Chat Completions API puts on the wire, built from the same scripted replies.
The script and `build_message` speak the Messages API, so a chat request is first seen as a
Messages body (`anthropic_view`), and the resulting message is then rewritten as a
`chat.completion` object or a list of `chat.completion.chunk` dicts. Pure functions; no sockets.
"""

from __future__ import annotations

import json
import time
from typing import Any

from .script import STATUS_OF_TYPE, Fault
from .wire import IdGen

__all__ = [
    "anthropic_view",
    "chat_error",
    "chat_id",
    "completion",
    "completion_chunks",
    "data_frame",
    "fault_error",
    "finish_reason",
    "DONE_FRAME",
    "NO_KEY_MESSAGE",
]

DONE_FRAME = b"data: [DONE]\n\n"
NO_KEY_MESSAGE = (
    "You didn't provide an API key. You need to provide your API key in an Authorization header"
    " using Bearer auth (i.e. Authorization: Bearer YOUR_KEY)."
)

# Messages API stop_reason -> Chat Completions finish_reason; unknown values are sent as given.
_FINISH = {
    "end_turn": "stop", "stop_sequence": "stop", "pause_turn": "stop",
    "max_tokens": "length", "model_context_window_exceeded": "length",
    "tool_use": "tool_calls", "refusal": "content_filter",
}
# Default (type, code, message) per HTTP status, as OpenAI labels its errors.
_ERROR_OF_STATUS: dict[int, tuple[str, str | None, str]] = {
    400: ("invalid_request_error", None, "Invalid request."),
    401: ("invalid_request_error", "invalid_api_key", "Incorrect API key provided."),
    403: ("invalid_request_error", None, "You are not allowed to make this request."),
    404: ("invalid_request_error", "model_not_found",
          "The model `{model}` does not exist or you do not have access to it."),
    429: ("requests", "rate_limit_exceeded", "Rate limit reached for requests. Please try again later."),
    500: ("server_error", None, "The server had an error while processing your request. Sorry about that!"),
    502: ("server_error", None, "Bad gateway."),
    503: ("server_error", "service_unavailable", "The server is overloaded or not ready yet."),
    504: ("server_error", None, "Gateway timeout."),
    529: ("server_error", None, "The server is overloaded. Please try again later."),
}
# Error codes that come with their own type and wording in the real API.
_ERROR_OF_CODE: dict[str, tuple[str, str]] = {
    "insufficient_quota": (
        "insufficient_quota", "You exceeded your current quota, please check your plan and billing details."
    ),
    "context_length_exceeded": (
        "invalid_request_error",
        "This model's maximum context length was exceeded. Please reduce the length of the messages.",
    ),
}


# --- requests: the chat body as the script sees it ------------------------------------------


def _text(content: Any) -> str:
    """Text of a chat message's content: a string, or the text parts of a list of parts."""
    if isinstance(content, str):
        return content
    parts = content if isinstance(content, list) else []
    return "\n".join(str(p.get("text", "")) for p in parts if isinstance(p, dict) and p.get("type") == "text")


def _arguments(raw: Any) -> dict[str, Any]:
    try:
        parsed = json.loads(raw) if isinstance(raw, str) else raw
    except ValueError:
        return {}
    return parsed if isinstance(parsed, dict) else {}


def _assistant_blocks(message: dict[str, Any]) -> list[dict[str, Any]]:
    text = _text(message.get("content"))
    blocks: list[dict[str, Any]] = [{"type": "text", "text": text}] if text else []
    for call in [c for c in message.get("tool_calls") or [] if isinstance(c, dict)]:
        function = call["function"] if isinstance(call.get("function"), dict) else {}
        blocks.append({
            "type": "tool_use", "id": call.get("id"), "name": function.get("name"),
            "input": _arguments(function.get("arguments")),
        })
    return blocks


def _turn(message: dict[str, Any]) -> tuple[str, list[dict[str, Any]]] | None:
    """(Messages role, content blocks) of one chat message; None for roles it has no turn for."""
    role = message.get("role")
    if role == "user":
        text = _text(message.get("content"))
        return "user", [{"type": "text", "text": text}] if text else []
    if role == "assistant":
        return "assistant", _assistant_blocks(message)
    if role == "tool":
        result = {"type": "tool_result", "tool_use_id": message.get("tool_call_id"),
                  "content": _text(message.get("content"))}
        return "user", [result]
    return None


def _tool_names(tools: Any) -> list[dict[str, Any]]:
    out = []
    for tool in tools if isinstance(tools, list) else []:
        function = tool.get("function") if isinstance(tool, dict) else None
        if isinstance(function, dict):
            out.append({"name": function.get("name"), "description": function.get("description", ""),
                        "input_schema": function.get("parameters") or {"type": "object"}})
    return out


def anthropic_view(body: dict[str, Any]) -> dict[str, Any]:
    """A chat request body as a Messages body, only for rule matching and token estimates.

    system/developer messages become `system`; tool messages become user turns holding
    tool_result blocks; consecutive turns of one role merge, as the Messages API merges them.
    Non-text content parts (images, audio) are left out.
    """
    raw = body.get("messages")
    messages = [m for m in raw if isinstance(m, dict)] if isinstance(raw, list) else []
    system = [_text(m.get("content")) for m in messages if m.get("role") in ("system", "developer")]
    turns: list[dict[str, Any]] = []
    for message in messages:
        turn = _turn(message)
        if turn is None:
            continue
        role, blocks = turn
        if turns and turns[-1]["role"] == role:
            turns[-1]["content"].extend(blocks)
        else:
            turns.append({"role": role, "content": blocks})
    view: dict[str, Any] = {"model": body.get("model"), "messages": turns, "stream": bool(body.get("stream"))}
    if system:
        view["system"] = "\n".join(system)
    tools = _tool_names(body.get("tools"))
    if tools:
        view["tools"] = tools
    max_tokens = body.get("max_completion_tokens", body.get("max_tokens"))
    if max_tokens is not None:
        view["max_tokens"] = max_tokens
    choice = _tool_choice(body.get("tool_choice"))
    if choice is not None:
        view["tool_choice"] = choice
    return view


def _tool_choice(choice: Any) -> dict[str, Any] | None:
    """A chat `tool_choice` in the Messages API's terms: none, auto, any (required), tool."""
    if choice in ("none", "auto"):
        return {"type": choice}
    if choice == "required":
        return {"type": "any"}
    if isinstance(choice, dict) and isinstance(choice.get("function"), dict):
        return {"type": "tool", "name": choice["function"].get("name")}
    return None


# --- errors -----------------------------------------------------------------------------------


def chat_error(
    status: int, message: str | None = None, *, error_type: str | None = None,
    code: str | None = None, model: str | None = None,
) -> dict[str, Any]:
    """An OpenAI error body; type, code and message default from the status and the code."""
    default_type, default_code, default_message = _ERROR_OF_STATUS.get(
        status, ("invalid_request_error" if status < 500 else "server_error", None, "Request failed.")
    )
    code = code if code is not None else default_code
    if code in _ERROR_OF_CODE and code != default_code:
        default_type, default_message = _ERROR_OF_CODE[code]
    error = {
        "message": message or default_message.replace("{model}", model or "unknown"),
        "type": error_type or default_type,
        "param": "messages" if code == "context_length_exceeded" else None,
        "code": code,
    }
    return {"error": error}


def fault_error(fault: Fault, status: int, model: str | None = None) -> dict[str, Any]:
    """The error body for a scripted fault. Messages API error types (rate_limit_error, ...)
    are replaced by OpenAI's type for the status; any other type the script names is sent as given."""
    error_type = fault.error_type if fault.error_type not in STATUS_OF_TYPE else None
    return chat_error(status, fault.message, error_type=error_type, code=fault.error_code, model=model)


# --- responses --------------------------------------------------------------------------------


def chat_id(ids: IdGen) -> str:
    """A completion id in OpenAI's shape: chatcmpl-sim-0001, ..."""
    return ids.next("chatcmpl").replace("_sim_", "-sim-")


def finish_reason(stop_reason: str | None) -> str:
    """The finish_reason for a Messages stop_reason; an unknown one is sent as given."""
    return _FINISH.get(stop_reason or "end_turn", stop_reason or "stop")


def _usage(usage: dict[str, Any]) -> dict[str, Any]:
    cached = int(usage.get("cache_read_input_tokens") or 0)
    prompt = int(usage.get("input_tokens") or 0) + cached + int(usage.get("cache_creation_input_tokens") or 0)
    output = int(usage.get("output_tokens") or 0)
    return {
        "prompt_tokens": prompt, "completion_tokens": output, "total_tokens": prompt + output,
        "prompt_tokens_details": {"cached_tokens": cached},
    }


def _arguments_text(block: dict[str, Any]) -> str:
    """A tool call's arguments: `partial_json` is sent exactly (cut off, invalid or a JSON string
    stay so), any other input as its JSON, whatever its type."""
    if "partial_json" in block:
        return str(block["partial_json"])
    return json.dumps(block.get("input", {}), separators=(",", ":"), ensure_ascii=False)


def _tool_call(index: int, block: dict[str, Any]) -> dict[str, Any]:
    function = {"name": block["name"], "arguments": _arguments_text(block)}
    return {"index": index, "id": block["id"], "type": "function", "function": function}


def _refusing(message: dict[str, Any]) -> bool:
    return message.get("stop_reason") == "refusal"


def _refusal_text(message: dict[str, Any], text: str) -> str | None:
    explanation = (message.get("stop_details") or {}).get("explanation")
    return text or explanation or None


def _envelope(message: dict[str, Any], model: str, kind: str, created: int) -> dict[str, Any]:
    return {"id": message["id"], "object": kind, "created": created, "model": model,
            "service_tier": "default", "system_fingerprint": None}


def completion(message: dict[str, Any], blocks: list[dict[str, Any]], model: str) -> dict[str, Any]:
    """The non-streaming `chat.completion` for a built message (`build_message`'s output)."""
    text = "".join(str(b["text"]) for b in blocks if b["type"] == "text")
    calls = [_tool_call(i, b) for i, b in enumerate(b for b in blocks if b["type"] == "tool_use")]
    refusing = _refusing(message)
    out: dict[str, Any] = {
        "role": "assistant",
        "content": None if refusing else text or None,
        "refusal": _refusal_text(message, text) if refusing else None,
        "annotations": [],
    }
    if calls:
        out["tool_calls"] = [{k: v for k, v in call.items() if k != "index"} for call in calls]
    choice = {"index": 0, "message": out, "logprobs": None, "finish_reason": finish_reason(message["stop_reason"])}
    envelope = _envelope(message, model, "chat.completion", int(time.time()))
    return envelope | {"choices": [choice], "usage": _usage(message["usage"])}


def _pieces(text: str, parts: int = 3) -> list[str]:
    """At most `parts` non-empty pieces, so clients must concatenate deltas."""
    size = max(1, -(-len(text) // parts))
    return [text[i : i + size] for i in range(0, len(text), size)]


def _deltas(blocks: list[dict[str, Any]], field: str) -> list[dict[str, Any]]:
    """Content deltas of the blocks in order: text into `field` (content or refusal), tool calls
    as a header delta (index, id, type, name, empty arguments) then argument fragments."""
    deltas: list[dict[str, Any]] = []
    calls = 0
    for block in blocks:
        if block["type"] == "text":
            deltas += [{field: piece} for piece in _pieces(str(block["text"]))]
        elif block["type"] == "tool_use":
            head = _tool_call(calls, block)
            head["function"]["arguments"] = ""
            deltas.append({"tool_calls": [head]})
            deltas += [{"tool_calls": [{"index": calls, "function": {"arguments": piece}}]}
                       for piece in _pieces(_arguments_text(block))]
            calls += 1
    return deltas


def completion_chunks(
    message: dict[str, Any],
    blocks: list[dict[str, Any]],
    model: str,
    *,
    include_usage: bool,
    stop_after: int | None = None,
    error: dict[str, Any] | None = None,
) -> list[dict[str, Any]]:
    """The `chat.completion.chunk` dicts for a built message, in order (without `[DONE]`).

    With `stop_after`, only the deltas of the first that many blocks are sent, then the
    `error` body if given: no finishing chunk, no usage chunk.
    """
    envelope = _envelope(message, model, "chat.completion.chunk", int(time.time()))
    if include_usage:
        envelope["usage"] = None

    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        return envelope | {"choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}]}

    field = "refusal" if _refusing(message) else "content"
    chunks = [chunk({"role": "assistant", "content": "", "refusal": None})]
    chunks += [chunk(d) for d in _deltas(blocks[:stop_after], field)]
    if stop_after is not None:
        return chunks + ([error] if error is not None else [])
    if field == "refusal" and not any(b["type"] == "text" for b in blocks) and _refusal_text(message, ""):
        chunks.append(chunk({"refusal": _refusal_text(message, "")}))
    chunks.append(chunk({}, finish_reason(message["stop_reason"])))
    if include_usage:
        chunks.append(envelope | {"choices": [], "usage": _usage(message["usage"])})
    return chunks


def data_frame(obj: dict[str, Any]) -> bytes:
    """One SSE frame as the Chat Completions API sends it: a `data:` line only, no `event:`."""
    return f"data: {json.dumps(obj, separators=(',', ':'), ensure_ascii=False)}\n\n".encode()
