"""The conversation vocabulary: content blocks, messages, usage, stop reasons, model requests
and the provider-neutral stream events every model adapter emits. Pure data, no I/O."""

from __future__ import annotations

import json
from dataclasses import field
from typing import Any, Literal, Union, get_args

from .fastclass import dataclass

StopReason = Literal[
    "end_turn",
    "max_tokens",
    "stop_sequence",
    "tool_use",
    "pause_turn",
    "refusal",
    "model_context_window_exceeded",
]
STOP_REASONS: tuple[str, ...] = get_args(StopReason)

Role = Literal["user", "assistant"]


def compact_json(value: Any) -> bytes:
    """`value` as compact JSON in UTF-8, as request bodies are sent. A lone surrogate (from text
    decoded with surrogateescape) cannot be sent as UTF-8: it becomes '?' rather than an error.
    Compositional: an object's encoding is its members' encodings joined, which lets a request
    body be put together from fragments encoded once."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode("utf-8", "replace")


# ---------------------------------------------------------------- content blocks


@dataclass(frozen=True, slots=True)
class TextBlock:
    text: str
    type: Literal["text"] = "text"

    def to_api(self) -> dict[str, Any]:
        return {"type": "text", "text": self.text}


@dataclass(frozen=True, slots=True)
class ThinkingBlock:
    thinking: str
    signature: str = ""
    type: Literal["thinking"] = "thinking"

    def to_api(self) -> dict[str, Any]:
        return {"type": "thinking", "thinking": self.thinking, "signature": self.signature}


@dataclass(frozen=True, slots=True)
class ToolUseBlock:
    """A client tool call. `complete` is False when its input is not a usable JSON object: cut
    off (max_tokens), never closed by the stream, invalid JSON, or JSON that is not an object.
    Such a block is never executed; `raw_input` keeps what arrived and `problem` says what is
    wrong with it. Its `input` is then `{}`, so the block can still be sent back in a history."""

    id: str
    name: str
    input: dict[str, Any]
    complete: bool = True
    raw_input: str | None = None
    problem: str | None = None
    type: Literal["tool_use"] = "tool_use"

    def to_api(self) -> dict[str, Any]:
        return {"type": "tool_use", "id": self.id, "name": self.name, "input": self.input}


@dataclass(frozen=True, slots=True)
class ToolResultBlock:
    tool_use_id: str
    content: str | tuple[dict[str, Any], ...]
    is_error: bool = False
    type: Literal["tool_result"] = "tool_result"

    def to_api(self) -> dict[str, Any]:
        content: Any = self.content if isinstance(self.content, str) else list(self.content)
        out: dict[str, Any] = {"type": "tool_result", "tool_use_id": self.tool_use_id, "content": content}
        if self.is_error:
            out["is_error"] = True
        return out

    @property
    def text(self) -> str:
        if isinstance(self.content, str):
            return self.content
        return "".join(str(c.get("text", "")) for c in self.content if c.get("type") == "text")


@dataclass(frozen=True, slots=True)
class OpaqueBlock:
    """Any block we pass through untouched: server tool calls and results, redacted thinking,
    images, documents, and block types newer than this code."""

    data: dict[str, Any]

    @property
    def type(self) -> str:
        return str(self.data.get("type", "unknown"))

    def to_api(self) -> dict[str, Any]:
        return dict(self.data)


Block = Union[TextBlock, ThinkingBlock, ToolUseBlock, ToolResultBlock, OpaqueBlock]


def block_from_api(data: dict[str, Any]) -> Block:
    kind = data.get("type")
    if kind == "text":
        return TextBlock(str(data.get("text", "")))
    if kind == "thinking":
        return ThinkingBlock(str(data.get("thinking", "")), str(data.get("signature", "")))
    if kind == "tool_use":
        return ToolUseBlock(str(data["id"]), str(data["name"]), dict(data.get("input") or {}))
    if kind == "tool_result":
        content = data.get("content", "")
        if not isinstance(content, str):
            content = tuple(content)
        return ToolResultBlock(str(data["tool_use_id"]), content, bool(data.get("is_error", False)))
    return OpaqueBlock(dict(data))


# ---------------------------------------------------------------- messages


@dataclass(frozen=True, slots=True)
class Message:
    role: Role
    content: tuple[Block, ...]
    # `api_json`, kept: a message is a value, and the whole history is sent again every turn
    _api_json: bytes | None = field(default=None, init=False, repr=False, compare=False)

    @staticmethod
    def user(text: str) -> "Message":
        return Message("user", (TextBlock(text),))

    def to_api(self) -> dict[str, Any]:
        return {"role": self.role, "content": [b.to_api() for b in self.content]}

    def api_json(self) -> bytes:
        """`compact_json(self.to_api())`, encoded on the first call only."""
        encoded = self._api_json
        if encoded is None:
            encoded = compact_json(self.to_api())
            object.__setattr__(self, "_api_json", encoded)
        return encoded

    @staticmethod
    def from_api(data: dict[str, Any]) -> "Message":
        content = data.get("content", "")
        if isinstance(content, str):
            return Message(data["role"], (TextBlock(content),))
        return Message(data["role"], tuple(block_from_api(b) for b in content))

    @property
    def text(self) -> str:
        return "".join(b.text for b in self.content if isinstance(b, TextBlock))

    @property
    def tool_uses(self) -> tuple[ToolUseBlock, ...]:
        return tuple(b for b in self.content if isinstance(b, ToolUseBlock))

    def results_only(self) -> "Message | None":
        """This message with its tool results alone, when it holds results and something else
        (text after them); None when there is nothing to take out."""
        kept = tuple(b for b in self.content if isinstance(b, ToolResultBlock))
        return Message(self.role, kept) if kept and len(kept) < len(self.content) else None


@dataclass(frozen=True, slots=True)
class Usage:
    input_tokens: int = 0
    output_tokens: int = 0
    cache_creation_input_tokens: int = 0
    cache_read_input_tokens: int = 0

    def __add__(self, other: "Usage") -> "Usage":
        return Usage(
            self.input_tokens + other.input_tokens,
            self.output_tokens + other.output_tokens,
            self.cache_creation_input_tokens + other.cache_creation_input_tokens,
            self.cache_read_input_tokens + other.cache_read_input_tokens,
        )

    @property
    def total(self) -> int:
        return (
            self.input_tokens
            + self.output_tokens
            + self.cache_creation_input_tokens
            + self.cache_read_input_tokens
        )

    @property
    def context_tokens(self) -> int:
        """Tokens the request occupied in the context window (all three input counts)."""
        return self.input_tokens + self.cache_creation_input_tokens + self.cache_read_input_tokens

    @staticmethod
    def from_api(data: dict[str, Any] | None) -> "Usage":
        data = data or {}
        return Usage(
            int(data.get("input_tokens") or 0),
            int(data.get("output_tokens") or 0),
            int(data.get("cache_creation_input_tokens") or 0),
            int(data.get("cache_read_input_tokens") or 0),
        )

    def to_api(self) -> dict[str, int]:
        return {
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "cache_creation_input_tokens": self.cache_creation_input_tokens,
            "cache_read_input_tokens": self.cache_read_input_tokens,
        }


@dataclass(frozen=True, slots=True)
class Response:
    """One finished model call: the assistant message and how it ended. `stop_reason` keeps
    the provider's raw value when it is not one of ours (`raw_stop_reason`)."""

    message: Message
    stop_reason: StopReason | None
    model: str
    usage: Usage = field(default_factory=Usage)
    id: str = ""
    stop_sequence: str | None = None
    stop_details: dict[str, Any] | None = None
    raw_stop_reason: str | None = None
    request_id: str | None = None


@dataclass(frozen=True, slots=True)
class ModelRequest:
    model: str
    messages: tuple[Message, ...]
    max_tokens: int
    system: str = ""
    tools: tuple[dict[str, Any], ...] = ()
    extra: dict[str, Any] = field(default_factory=dict)

    def to_api(self, *, stream: bool = True) -> dict[str, Any]:
        body: dict[str, Any] = {
            "model": self.model,
            "max_tokens": self.max_tokens,
            "messages": [m.to_api() for m in self.messages],
        }
        if self.system:
            body["system"] = self.system
        if self.tools:
            body["tools"] = list(self.tools)
        body.update(self.extra)
        if stream:
            body["stream"] = True
        return body


# ---------------------------------------------------------------- stream events
# Every provider adapter turns its wire format into these; `accumulate` folds them.


@dataclass(frozen=True, slots=True)
class StreamStart:
    id: str
    model: str
    usage: Usage
    request_id: str | None = None
    type: Literal["stream_start"] = "stream_start"


@dataclass(frozen=True, slots=True)
class BlockStart:
    index: int
    block: dict[str, Any]
    type: Literal["block_start"] = "block_start"


@dataclass(frozen=True, slots=True)
class BlockDelta:
    """`delta` keeps the Messages API delta shape: text_delta, input_json_delta,
    thinking_delta, signature_delta, citations_delta, …"""

    index: int
    delta: dict[str, Any]
    type: Literal["block_delta"] = "block_delta"


@dataclass(frozen=True, slots=True)
class BlockStop:
    index: int
    type: Literal["block_stop"] = "block_stop"


@dataclass(frozen=True, slots=True)
class StreamDelta:
    stop_reason: str | None
    usage: dict[str, Any]
    stop_sequence: str | None = None
    stop_details: dict[str, Any] | None = None
    type: Literal["stream_delta"] = "stream_delta"


@dataclass(frozen=True, slots=True)
class StreamStop:
    type: Literal["stream_stop"] = "stream_stop"


StreamEvent = Union[StreamStart, BlockStart, BlockDelta, BlockStop, StreamDelta, StreamStop]


class ModelText(str):
    """Text the model wrote that becomes a prompt later (a prompt it scheduled with the cron
    tools), or a prompt its client composed and asks to have delivered as written (stream-json
    `client_composed`): data, never a command — a leading `/name` is not expanded or refused, only sent."""

    __slots__ = ()
