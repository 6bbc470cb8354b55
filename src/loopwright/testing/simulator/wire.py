"""What the Messages API puts on the wire: messages, SSE event sequences, error bodies, usage.
Pure functions of a parsed Reply and the request body; no sockets here.
"""

from __future__ import annotations

import dataclasses
import itertools
import json
import threading
from typing import Any

from .script import STATUS_OF_TYPE, Reply
from .validate import cache_breakpoints

__all__ = [
    "STATUS_OF_TYPE",
    "IdGen",
    "build_message",
    "error_body",
    "error_type_for",
    "estimate_input_tokens",
    "frame",
    "stream_events",
]

Event = tuple[str, dict[str, Any]]

# Default error type per HTTP status, as the real API labels them (anthropic-api.md §4.1).
_TYPE_OF_STATUS = {
    400: "invalid_request_error", 401: "authentication_error", 402: "billing_error",
    403: "permission_error", 404: "not_found_error", 408: "timeout_error",
    409: "conflict_error", 413: "request_too_large", 429: "rate_limit_error",
    500: "api_error", 502: "api_error", 503: "api_error", 504: "timeout_error",
    529: "overloaded_error",
}
_DEFAULT_MESSAGE = {
    "invalid_request_error": "Invalid request", "authentication_error": "invalid x-api-key",
    "billing_error": "Billing error", "permission_error": "Permission denied",
    "not_found_error": "Not found", "timeout_error": "Request timed out",
    "conflict_error": "Conflict", "request_too_large": "Request exceeds the maximum size",
    "rate_limit_error": "Rate limited", "api_error": "Internal server error",
    "overloaded_error": "Overloaded",
}
_DELTA_USAGE_KEYS = (
    "input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens",
    "server_tool_use", "output_tokens_details",
)


class IdGen:
    """Sequential ids per prefix (toolu_sim_0001, ...): deterministic within one simulator."""

    def __init__(self) -> None:
        self._counters: dict[str, itertools.count[int]] = {}
        self._lock = threading.Lock()

    def next(self, prefix: str) -> str:
        with self._lock:
            counter = self._counters.setdefault(prefix, itertools.count(1))
            return f"{prefix}_sim_{next(counter):04d}"


def error_type_for(status: int) -> str:
    return _TYPE_OF_STATUS.get(status, "invalid_request_error" if status < 500 else "api_error")


def error_body(
    error_type: str, message: str | None, request_id: str, error_code: str | None = None
) -> dict[str, Any]:
    error: dict[str, Any] = {"type": error_type, "message": message or _DEFAULT_MESSAGE.get(error_type, error_type)}
    if error_code is not None:
        error["details"] = {"error_code": error_code}
    return {"type": "error", "error": error, "request_id": request_id}


def _dumps(obj: Any) -> str:
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False)


def estimate_input_tokens(body: dict[str, Any]) -> int:
    """Deterministic stand-in for a tokenizer: ~4 characters per token."""
    seen = {k: body.get(k) for k in ("messages", "system", "tools")}
    return max(1, len(json.dumps(seen, sort_keys=True, separators=(",", ":"))) // 4)


def _tool_json(block: dict[str, Any]) -> str:
    if "partial_json" in block:
        return str(block["partial_json"])
    return _dumps(block.get("input", {}))


def _generated_text(block: dict[str, Any]) -> str:
    kind = block["type"]
    if kind == "text":
        return str(block["text"])
    if kind == "thinking":
        return str(block["thinking"])
    if kind in ("tool_use", "server_tool_use"):
        return _tool_json(block)
    return ""


def _resolve(block: dict[str, Any], ids: IdGen) -> dict[str, Any]:
    block = dict(block)
    if block["type"] == "tool_use":
        block.setdefault("id", ids.next("toolu"))
        block.setdefault("input", {})
    elif block["type"] == "server_tool_use":
        block.setdefault("id", ids.next("srvtoolu"))
        block.setdefault("input", {})
    elif block["type"] == "thinking":
        block.setdefault("signature", "sig_sim")
    return block


def _final_block(block: dict[str, Any]) -> dict[str, Any]:
    """A block as a non-streaming response carries it."""
    out = {k: v for k, v in block.items() if k != "partial_json"}
    if "partial_json" in block:
        # The API's shape for a cut-off tool input in a JSON response is unconfirmed;
        # an empty input is the safe choice (the loop must not run it anyway).
        out["input"] = {}
    return out


_INPUT_SIDE = ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")


def _usage(reply: Reply, body: dict[str, Any], blocks: list[dict[str, Any]], cache: Any = None) -> dict[str, Any]:
    generated = "".join(_generated_text(b) for b in blocks)
    usage: dict[str, Any] = {
        "input_tokens": estimate_input_tokens(body),
        "output_tokens": len(generated) // 4 + 1,
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": 0,
    }
    if cache is not None and not any(k in reply.usage for k in _INPUT_SIDE) and cache_breakpoints(body):
        usage.update(cache.account(body))  # the prompt cache's reads and writes, as the API counts them
    usage.update(reply.usage)
    return usage


def _stop_fields(reply: Reply, body: dict[str, Any], blocks: list[dict[str, Any]]) -> dict[str, Any]:
    stop_reason = reply.stop_reason
    if stop_reason is None:
        stop_reason = "tool_use" if any(b["type"] == "tool_use" for b in blocks) else "end_turn"
    stop_sequence = reply.stop_sequence
    if stop_reason == "stop_sequence" and stop_sequence is None:
        stop_sequence = (body.get("stop_sequences") or ["STOP"])[0]
    stop_details = reply.stop_details
    if stop_reason == "refusal" and stop_details is None:
        stop_details = {"type": "refusal", "category": None, "explanation": None}
    return {"stop_reason": stop_reason, "stop_sequence": stop_sequence, "stop_details": stop_details}


NO_TOOL_TEXT = "(tool_choice was none: the scripted tool call was left out)"


def honour_tool_choice(reply: Reply, body: dict[str, Any]) -> Reply | str:
    """The request's `tool_choice` kept as the API keeps it. `none`: the scripted tool calls are
    left out (a short text stands in when nothing else is left). `any` / `tool`: a scripted reply
    without such a call is a script that cannot happen, so the reason comes back (a 400)."""
    choice = body.get("tool_choice")
    if not isinstance(choice, dict):
        return reply
    kind = choice.get("type")
    if reply.fault is not None or kind not in ("none", "any", "tool"):
        return reply
    calls = [b for b in reply.content if b.get("type") == "tool_use"]
    if kind == "none":
        if not calls:
            return reply
        kept = [b for b in reply.content if b.get("type") != "tool_use"] or [{"type": "text", "text": NO_TOOL_TEXT}]
        stop = None if reply.stop_reason == "tool_use" else reply.stop_reason
        return dataclasses.replace(reply, content=kept, stop_reason=stop)
    if kind == "any" and not calls:
        return "simulator: the request's tool_choice is any, but the scripted response calls no tool"
    if kind == "tool" and not any(b.get("name") == choice.get("name") for b in calls):
        return (f"simulator: the request's tool_choice names the tool {choice.get('name')!r}, but the scripted "
                "response does not call it")
    return reply


def build_message(
    reply: Reply, body: dict[str, Any], ids: IdGen, cache: Any = None
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The final Message for `reply`, plus its blocks with ids assigned (for streaming)."""
    blocks = [_resolve(b, ids) for b in reply.content]
    message = {
        "id": reply.id or ids.next("msg"),
        "type": "message",
        "role": "assistant",
        "model": reply.model or body.get("model") or "claude-sim",
        "content": [_final_block(b) for b in blocks],
        **_stop_fields(reply, body, blocks),
        "usage": _usage(reply, body, blocks, cache),
    }
    return message, blocks


# --- streaming ------------------------------------------------------------------------------


def _chunks(text: str, parts: int = 3) -> list[str]:
    """Split into at most `parts` non-empty pieces, so clients must concatenate deltas."""
    if not text:
        return []
    size = max(1, -(-len(text) // parts))
    return [text[i : i + size] for i in range(0, len(text), size)]


def _block_events(index: int, block: dict[str, Any]) -> list[Event]:
    kind = block["type"]
    start: dict[str, Any]
    deltas: list[dict[str, Any]] = []
    if kind == "text":
        start = {k: v for k, v in block.items() if k != "citations"} | {"text": ""}
        deltas = [{"type": "text_delta", "text": c} for c in _chunks(block["text"])]
        deltas += [{"type": "citations_delta", "citation": c} for c in block.get("citations") or []]
    elif kind == "tool_use":
        start = {k: v for k, v in block.items() if k != "partial_json"} | {"input": {}}
        # The real API's first input_json_delta is often empty; clients must cope.
        pieces = [""] + _chunks(_tool_json(block))
        deltas = [{"type": "input_json_delta", "partial_json": p} for p in pieces]
    elif kind == "thinking":
        start = {"type": "thinking", "thinking": "", "signature": ""}
        deltas = [{"type": "thinking_delta", "thinking": c} for c in _chunks(block["thinking"])]
        deltas.append({"type": "signature_delta", "signature": block["signature"]})
    else:
        start = dict(block)  # server_tool_use, redacted_thinking, *_tool_result: sent whole
    events: list[Event] = [
        ("content_block_start", {"type": "content_block_start", "index": index, "content_block": start})
    ]
    events += [("content_block_delta", {"type": "content_block_delta", "index": index, "delta": d}) for d in deltas]
    events.append(("content_block_stop", {"type": "content_block_stop", "index": index}))
    return events


def _start_message(message: dict[str, Any]) -> dict[str, Any]:
    usage = dict(message["usage"])
    # message_start reports input-side usage; output so far is at most one token.
    usage["output_tokens"] = min(1, usage["output_tokens"])
    return message | {
        "content": [], "stop_reason": None, "stop_sequence": None, "stop_details": None, "usage": usage,
    }


def _delta_usage(usage: dict[str, Any]) -> dict[str, Any]:
    out = {k: usage[k] for k in _DELTA_USAGE_KEYS if k in usage}
    out["output_tokens"] = usage["output_tokens"]
    return out


def stream_events(
    message: dict[str, Any],
    blocks: list[dict[str, Any]],
    *,
    stop_after: int | None = None,
    error: dict[str, Any] | None = None,
) -> list[Event]:
    """SSE events for `message`; with `stop_after`, only that many blocks, then `error` or nothing."""
    events: list[Event] = [
        ("message_start", {"type": "message_start", "message": _start_message(message)}),
        ("ping", {"type": "ping"}),
    ]
    for index, block in enumerate(blocks[:stop_after]):
        events += _block_events(index, block)
    if stop_after is not None:
        if error is not None:
            events.append(("error", {"type": "error", "error": error}))
        return events
    delta = {k: message[k] for k in ("stop_reason", "stop_sequence", "stop_details")}
    events.append(
        ("message_delta", {"type": "message_delta", "delta": delta, "usage": _delta_usage(message["usage"])})
    )
    events.append(("message_stop", {"type": "message_stop"}))
    return events


def frame(name: str, data: dict[str, Any]) -> bytes:
    return f"event: {name}\ndata: {_dumps(data)}\n\n".encode()
