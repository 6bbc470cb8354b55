"""The simulator's script: which response answers which request, parsed and checked up front.
Owns the public JSON script format (below), its checks and consumption bookkeeping; `matching`
tests a request against a rule's match keys.

Script format (JSON-compatible; this is public API)::

    {"rules": [
      {"match": {...},          # optional; every given key must hold (missing = any request)
       "responses": [spec, ...]}
    ]}

A plain list of response specs is shorthand for one rule that matches everything.

Match keys:
    model               exact request model
    tools_present       list of tool names (or one name) that must all be in the request's `tools`
    has_tools           bool: the request has a non-empty `tools` list
    system_contains     substring of the system prompt (string or text blocks)
    last_user_contains  substring of the last user message's text (text blocks and
                        tool_result contents)
    first_user_contains substring of the first user message's text: it tells apart the
                        conversations of agents that run at once, on every turn
    stream              bool: the request's `stream` flag
    retry_count         int: the `x-stainless-retry-count` header the SDK sends

Response spec keys:
    text         str -> one text block
    tool_use     {"name", "input", "id"?} or a list of them -> tool_use blocks after the text
    content      list of content blocks (instead of text/tool_use): text, tool_use (may carry
                 `partial_json`: the exact input text streamed, then the block is closed as
                 usual, so it can be cut off, invalid JSON or any JSON; a tool_use `input` may
                 be any JSON value, as a broken gateway may send a list or a string), thinking
                 (`thinking`, `signature`), server_tool_use, redacted_thinking, or any other
                 block sent as given
    stop_reason  default: "tool_use" when a tool_use block is present, else "end_turn";
                 any string is sent as given (so unknown future values can be simulated)
    stop_sequence, stop_details   sent as given (refusal defaults stop_details to nulls)
    usage        keys override the estimated usage
    model, id    override the echoed request model / generated message id
    headers      extra response headers
    delay        seconds to wait before answering (also with faults)
    repeat       how many requests this response serves (default 1; -1 = forever)
    fault        one of:
        {"status": 4xx/5xx, "error_type"?, "message"?, "error_code"?,
         "retry_after"?, "retry_after_ms"?, "should_retry"?}       HTTP error response
                                            (status may be omitted if error_type is known)
        {"sse_error": {"type", "message"}, "after_blocks"?: N}     200, then `event: error`
        {"cut": true, "after_blocks"?: N}                          stream ends early
        {"reset": true}                                            TCP reset, no response
        Stream faults first send the spec's content (default: N text blocks) up to N finished
        blocks. On a non-streaming request, sse_error answers with its type's HTTP status and
        cut sends half of the JSON body, then closes the connection.

The request's `tool_choice` is kept as the API keeps it: with `none` the scripted tool_use blocks
are left out (a short text stands in when nothing else is left, and the stop reason is then
end_turn); with `any` or `tool` a scripted response that does not make such a call is answered
with HTTP 400, since the real API could not have sent it.

Rules are tried in order: the first rule whose match fits and which still has unconsumed
responses serves its next response; when none does, the simulator answers HTTP 400
invalid_request_error "simulator: no rule matched ..." and records the request as unmatched.
Tool-use ids are generated (toolu_sim_0001, ...) unless given; `model` echoes the request's.
Default usage: input_tokens = len(JSON of messages+system+tools) // 4 (at least 1),
output_tokens = len(generated text, thinking and tool-input JSON) // 4 + 1.
"""

from __future__ import annotations

import copy
import json
import threading

from ...core.fastclass import dataclass
from dataclasses import field
from pathlib import Path
from typing import Any

from .matching import MATCH_KEYS, MATCHERS

__all__ = ["STATUS_OF_TYPE", "Cursor", "Fault", "Reply", "Rule", "Script", "ScriptError", "parse_reply"]

_REPLY_KEYS = {
    "text", "tool_use", "content", "stop_reason", "stop_sequence", "stop_details",
    "usage", "model", "id", "headers", "delay", "repeat", "fault",
}
_FAULT_KEYS = {
    "status", "error_type", "message", "error_code", "retry_after", "retry_after_ms",
    "should_retry", "sse_error", "cut", "reset", "after_blocks",
}
# HTTP status for an error type: a fault may name only its type, and a stream error event
# sent to a non-streaming request becomes this status.
STATUS_OF_TYPE = {
    "invalid_request_error": 400, "authentication_error": 401, "billing_error": 402,
    "permission_error": 403, "not_found_error": 404, "conflict_error": 409,
    "request_too_large": 413, "rate_limit_error": 429, "api_error": 500,
    "timeout_error": 504, "overloaded_error": 529,
}


class ScriptError(ValueError):
    """A script that cannot be served; the message names where and why."""


@dataclass(frozen=True)
class Fault:
    kind: str  # "status" | "sse_error" | "cut" | "reset"
    status: int | None = None
    error_type: str | None = None
    message: str | None = None
    error_code: str | None = None
    retry_after: float | None = None
    retry_after_ms: float | None = None
    should_retry: bool | None = None
    after_blocks: int = 0


@dataclass(frozen=True)
class Reply:
    """One parsed response spec; `spec` keeps the original for `remaining()`."""

    spec: dict[str, Any]
    content: list[dict[str, Any]] = field(default_factory=list)
    stop_reason: str | None = None
    stop_sequence: str | None = None
    stop_details: dict[str, Any] | None = None
    usage: dict[str, Any] = field(default_factory=dict)
    model: str | None = None
    id: str | None = None
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0
    repeat: int = 1
    fault: Fault | None = None


@dataclass(frozen=True)
class Rule:
    match: dict[str, Any]
    responses: tuple[Reply, ...]

    def matches(self, body: dict[str, Any], headers: dict[str, str]) -> bool:
        return all(MATCHERS[key](value, body, headers) for key, value in self.match.items())


class Script:
    """An ordered list of rules, checked when built so typos fail before any request."""

    def __init__(self, rules: list[dict[str, Any]] | None = None) -> None:
        if not isinstance(rules or [], list):
            raise ScriptError("rules: expected a list")
        self.rules: tuple[Rule, ...] = tuple(
            _parse_rule(rule, f"rules[{i}]") for i, rule in enumerate(rules or [])
        )

    @classmethod
    def coerce(cls, obj: Script | dict[str, Any] | list[Any] | None) -> Script:
        """Accept a Script, a `{"rules": [...]}` dict, a list of response specs, or None."""
        if isinstance(obj, Script):
            return obj
        if obj is None:
            return cls([])
        if isinstance(obj, list):
            return cls([{"responses": obj}])
        if isinstance(obj, dict):
            unknown = set(obj) - {"rules"}
            if unknown:
                raise ScriptError(f"script: unknown key(s) {sorted(unknown)}; expected 'rules'")
            return cls(obj.get("rules", []))
        raise ScriptError(f"script: expected a dict or a list, got {type(obj).__name__}")

    @classmethod
    def from_file(cls, path: str | Path) -> Script:
        try:
            data = json.loads(Path(path).read_text(encoding="utf-8"))
        except OSError as exc:
            raise ScriptError(f"{path}: cannot read: {exc.strerror or exc}") from exc
        except json.JSONDecodeError as exc:
            raise ScriptError(f"{path}: invalid JSON: {exc}") from exc
        try:
            return cls.coerce(data)
        except ScriptError as exc:
            raise ScriptError(f"{path}: {exc}") from exc

    def cursor(self) -> Cursor:
        return Cursor(self)


class Cursor:
    """Consumption state of one script: thread-safe, since every connection has a thread."""

    def __init__(self, script: Script) -> None:
        self._rules = script.rules
        self._served = [[0] * len(rule.responses) for rule in script.rules]
        self._lock = threading.Lock()

    def take(self, body: dict[str, Any], headers: dict[str, str]) -> Reply | None:
        with self._lock:
            for served, rule in zip(self._served, self._rules):
                if not rule.matches(body, headers):
                    continue
                for i, reply in enumerate(rule.responses):
                    if reply.repeat < 0 or served[i] < reply.repeat:
                        served[i] += 1
                        return reply
            return None

    def remaining(self) -> list[dict[str, Any]]:
        """Unserved response specs, `repeat` reduced to what is left.

        A `repeat: -1` response counts as remaining only until it has served once.
        """
        left: list[dict[str, Any]] = []
        with self._lock:
            for served, rule in zip(self._served, self._rules):
                for n, reply in zip(served, rule.responses):
                    if reply.repeat < 0 and n == 0:
                        left.append(copy.deepcopy(reply.spec))
                    elif reply.repeat > 0 and n < reply.repeat:
                        spec = copy.deepcopy(reply.spec)
                        if n:
                            spec["repeat"] = reply.repeat - n
                        left.append(spec)
        return left


# --- parsing --------------------------------------------------------------------------------


def _parse_rule(rule: Any, where: str) -> Rule:
    if not isinstance(rule, dict):
        raise ScriptError(f"{where}: expected an object")
    _no_unknown(rule, {"match", "responses"}, where)
    match = rule.get("match") or {}
    if not isinstance(match, dict):
        raise ScriptError(f"{where}.match: expected an object")
    for key, value in match.items():
        if key not in MATCH_KEYS:
            raise ScriptError(f"{where}.match: unknown key {key!r}; known: {sorted(MATCH_KEYS)}")
        if not isinstance(value, MATCH_KEYS[key]):
            raise ScriptError(f"{where}.match.{key}: wrong type {type(value).__name__}")
    responses = rule.get("responses")
    if not isinstance(responses, list):
        raise ScriptError(f"{where}.responses: expected a list")
    parsed = tuple(_parse_reply(r, f"{where}.responses[{i}]") for i, r in enumerate(responses))
    return Rule(match=dict(match), responses=parsed)


def parse_reply(spec: Any, where: str = "reply") -> Reply:
    """One response spec, checked as a script's are (for scripts that choose replies their own way:
    a `Script` subclass with its own cursor, such as a replayed session's)."""
    return _parse_reply(spec, where)


def _parse_reply(spec: Any, where: str) -> Reply:
    if not isinstance(spec, dict):
        raise ScriptError(f"{where}: expected an object")
    _no_unknown(spec, _REPLY_KEYS, where)
    repeat = spec.get("repeat", 1)
    if not isinstance(repeat, int) or isinstance(repeat, bool) or not (repeat >= 1 or repeat == -1):
        raise ScriptError(f"{where}.repeat: expected an integer >= 1 or -1")
    delay = spec.get("delay", 0)
    if not isinstance(delay, (int, float)) or delay < 0:
        raise ScriptError(f"{where}.delay: expected seconds >= 0")
    fault = _parse_fault(spec["fault"], f"{where}.fault") if "fault" in spec else None
    content = _parse_content(spec, where, fault)
    for key in ("usage", "headers", "stop_details"):
        if spec.get(key) is not None and not isinstance(spec[key], dict):
            raise ScriptError(f"{where}.{key}: expected an object")
    return Reply(
        spec=copy.deepcopy(spec),
        content=content,
        stop_reason=spec.get("stop_reason"),
        stop_sequence=spec.get("stop_sequence"),
        stop_details=spec.get("stop_details"),
        usage=dict(spec.get("usage") or {}),
        model=spec.get("model"),
        id=spec.get("id"),
        headers={str(k): str(v) for k, v in (spec.get("headers") or {}).items()},
        delay=float(delay),
        repeat=repeat,
        fault=fault,
    )


def _parse_content(spec: dict[str, Any], where: str, fault: Fault | None) -> list[dict[str, Any]]:
    if "content" in spec:
        if "text" in spec or "tool_use" in spec:
            raise ScriptError(f"{where}: give either 'content' or 'text'/'tool_use', not both")
        blocks = spec["content"]
        if not isinstance(blocks, list):
            raise ScriptError(f"{where}.content: expected a list of blocks")
    else:
        blocks = []
        if "text" in spec:
            if not isinstance(spec["text"], str):
                raise ScriptError(f"{where}.text: expected a string")
            blocks.append({"type": "text", "text": spec["text"]})
        uses = spec.get("tool_use", [])
        for use in uses if isinstance(uses, list) else [uses]:
            if not isinstance(use, dict):
                raise ScriptError(f"{where}.tool_use: expected an object or a list of objects")
            blocks.append({"type": "tool_use", **use})
        if not blocks and fault is not None and fault.kind in ("sse_error", "cut"):
            # A stream fault "after N blocks" needs N blocks to send first.
            blocks = [{"type": "text", "text": f"partial {i + 1} "} for i in range(fault.after_blocks)]
    for i, block in enumerate(blocks):
        _check_block(block, f"{where}.content[{i}]")
    if fault is not None and fault.after_blocks > len(blocks):
        raise ScriptError(f"{where}.fault.after_blocks: {fault.after_blocks} > {len(blocks)} blocks")
    return [dict(b) for b in blocks]


def _check_block(block: Any, where: str) -> None:
    if not isinstance(block, dict) or not isinstance(block.get("type"), str):
        raise ScriptError(f"{where}: expected an object with a string 'type'")
    required = {"text": ("text",), "tool_use": ("name",), "thinking": ("thinking",)}
    for key in required.get(block["type"], ()):
        if key not in block:
            raise ScriptError(f"{where}: a {block['type']} block needs {key!r}")
    if block["type"] == "server_tool_use" and "input" in block and not isinstance(block["input"], dict):
        raise ScriptError(f"{where}.input: expected an object")
    if block["type"] in ("tool_use", "server_tool_use"):
        if "partial_json" in block and not isinstance(block["partial_json"], str):
            raise ScriptError(f"{where}.partial_json: expected a string")


def _parse_fault(fault: Any, where: str) -> Fault:
    if not isinstance(fault, dict):
        raise ScriptError(f"{where}: expected an object")
    _no_unknown(fault, _FAULT_KEYS, where)
    kinds = [k for k in ("status", "sse_error", "cut", "reset") if fault.get(k)]
    status = fault.get("status")
    if not kinds and fault.get("error_type") in STATUS_OF_TYPE:
        kinds, status = ["status"], STATUS_OF_TYPE[fault["error_type"]]
    if len(kinds) != 1:
        raise ScriptError(f"{where}: give exactly one of status, sse_error, cut, reset")
    if status is not None and (not isinstance(status, int) or not 400 <= status <= 599):
        raise ScriptError(f"{where}.status: expected an HTTP error status 400-599")
    after = fault.get("after_blocks", 0)
    if not isinstance(after, int) or after < 0:
        raise ScriptError(f"{where}.after_blocks: expected an integer >= 0")
    sse = fault.get("sse_error") or {}
    if not isinstance(sse, dict):
        raise ScriptError(f"{where}.sse_error: expected an object with type and message")
    return Fault(
        kind=kinds[0],
        status=status,
        error_type=fault.get("error_type") or sse.get("type"),
        message=fault.get("message") or sse.get("message"),
        error_code=fault.get("error_code"),
        retry_after=fault.get("retry_after"),
        retry_after_ms=fault.get("retry_after_ms"),
        should_retry=fault.get("should_retry"),
        after_blocks=after,
    )


def _no_unknown(obj: dict[str, Any], known: set[str], where: str) -> None:
    unknown = set(obj) - known
    if unknown:
        raise ScriptError(f"{where}: unknown key(s) {sorted(unknown)}; known: {sorted(known)}")
