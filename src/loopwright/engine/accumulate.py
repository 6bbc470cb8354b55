"""The fold every provider shares: stream events in, one `Response` out. A tool_use whose input
JSON never completed (cut by max_tokens) comes out with `complete=False` and is never run."""

from __future__ import annotations

from dataclasses import field
from typing import Any

from ..core import jsonsafe
from ..core.fastclass import dataclass
from ..core.types import (
    STOP_REASONS,
    Block,
    BlockDelta,
    BlockStart,
    BlockStop,
    Message,
    OpaqueBlock,
    Response,
    StreamDelta,
    StreamEvent,
    StreamStart,
    StreamStop,
    TextBlock,
    ThinkingBlock,
    ToolUseBlock,
    Usage,
)


@dataclass
class _Open:
    start: dict[str, Any]
    parts: list[str] = field(default_factory=list)
    signature: str = ""
    extra: dict[str, Any] = field(default_factory=dict)


class Accumulator:
    """Feed events with `add`; `response()` builds the message. `finished` is True once the
    stream's own end (`StreamStop`) arrived: a response without it is a transport failure."""

    def __init__(self) -> None:
        self.id = ""
        self.model = ""
        self.request_id: str | None = None
        self.usage: dict[str, Any] = {}
        self.stop_reason: str | None = None
        self.stop_sequence: str | None = None
        self.stop_details: dict[str, Any] | None = None
        self.finished = False
        self._open: dict[int, _Open] = {}
        self._blocks: dict[int, Block] = {}

    def add(self, event: StreamEvent) -> None:
        match event:
            case BlockDelta(index=i, delta=delta):
                self._delta(i, delta)
            case BlockStart(index=i, block=block):
                self._open[i] = _Open(dict(block))
            case BlockStop(index=i):
                opened = self._open.pop(i, None)
                if opened is not None:
                    self._blocks[i] = _close(opened, stopped=True)
            case StreamStart(id=mid, model=model, usage=usage, request_id=rid):
                self.id, self.model, self.request_id = mid, model, rid
                self.usage = usage.to_api()
            case StreamDelta(stop_reason=sr, usage=usage, stop_sequence=seq, stop_details=details):
                self.stop_reason = sr
                self.stop_sequence = seq
                self.stop_details = details
                # message_delta usage counts are cumulative totals: they overwrite.
                self.usage.update({k: v for k, v in usage.items() if v is not None})
            case StreamStop():
                self.finished = True

    def _delta(self, index: int, delta: dict[str, Any]) -> None:
        opened = self._open.get(index)
        if opened is None:
            return
        kind = delta.get("type")
        if kind == "text_delta":
            opened.parts.append(delta.get("text", ""))
        elif kind == "input_json_delta":
            opened.parts.append(delta.get("partial_json", ""))
        elif kind == "thinking_delta":
            opened.parts.append(delta.get("thinking", ""))
        elif kind == "signature_delta":
            opened.signature += delta.get("signature", "")
        elif kind == "citations_delta":
            opened.extra.setdefault("citations", []).append(delta.get("citation"))

    def response(self, fallback_model: str = "") -> Response:
        blocks = dict(self._blocks)
        for index, opened in self._open.items():  # blocks the stream never closed
            blocks[index] = _close(opened, stopped=False)
        content = tuple(blocks[i] for i in sorted(blocks))
        raw = self.stop_reason
        stop = raw if raw in STOP_REASONS else None
        return Response(
            message=Message("assistant", content),
            stop_reason=stop,  # type: ignore[arg-type]
            model=self.model or fallback_model,
            usage=Usage.from_api(self.usage),
            id=self.id,
            stop_sequence=self.stop_sequence,
            stop_details=self.stop_details,
            raw_stop_reason=raw,
            request_id=self.request_id,
        )


def _close(opened: _Open, *, stopped: bool) -> Block:
    start = opened.start
    kind = start.get("type")
    if kind == "text":
        return TextBlock(start.get("text", "") + "".join(opened.parts))
    if kind == "thinking":
        return ThinkingBlock(start.get("thinking", "") + "".join(opened.parts), opened.signature or start.get("signature", ""))
    if kind == "tool_use":
        return _tool_use(start, "".join(opened.parts), stopped)
    data = dict(start)
    data.update(opened.extra)
    return OpaqueBlock(data)


def _tool_use(start: dict[str, Any], raw: str, stopped: bool) -> ToolUseBlock:
    tid, name = str(start.get("id", "")), str(start.get("name", ""))
    if not raw.strip():
        given = start.get("input")
        return ToolUseBlock(tid, name, dict(given) if isinstance(given, dict) else {}, complete=stopped, raw_input=raw)
    try:
        parsed = jsonsafe.loads(raw)  # bounded depth: a 100,000-deep input is bad JSON, not a crash
    except ValueError:
        return ToolUseBlock(tid, name, {}, complete=False, raw_input=raw)
    if not isinstance(parsed, dict):
        return ToolUseBlock(tid, name, {}, complete=False, raw_input=raw)
    return ToolUseBlock(tid, name, parsed, complete=stopped, raw_input=None if stopped else raw)
