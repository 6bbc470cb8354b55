"""The fold every provider shares: stream events in, one `Response` out; and `stream_response`,
one model call gathered into a `Response` (or the `ModelError` that ended it) with its time and
usage accounted. A tool_use whose input is not a whole JSON object (cut by max_tokens, never
closed, invalid JSON, another JSON type) comes out with `complete=False` and the reason in
`problem`, and is never run."""

from __future__ import annotations

import json
from dataclasses import field
from typing import TYPE_CHECKING, Any, Callable

from ..core import jsonsafe
from ..core.errors import ModelError
from ..core.events import Event, Notice, PartialEvent
from ..core.fastclass import dataclass
from ..core.types import (
    STOP_REASONS,
    Block,
    BlockDelta,
    BlockStart,
    BlockStop,
    Message,
    ModelRequest,
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

if TYPE_CHECKING:
    from .tally import Tally
    from ..core.clock import Clock
    from ..core.ports import Model


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
                # a value of another JSON type is kept as its text: an unknown reason, not a crash
                self.stop_reason = sr if sr is None or isinstance(sr, str) else json.dumps(sr)
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
        if given is None or isinstance(given, dict):  # no deltas: the input came whole, or is empty
            raw, parsed, problem = "", dict(given or {}), None
        else:  # a gateway that put a non-object straight into the block
            raw = json.dumps(given, ensure_ascii=False)
            parsed, problem = None, f"the input is {_json_kind(given)}, not an object"
    else:
        parsed, problem = decode_tool_input(raw)
    if parsed is not None and not stopped:
        problem = "the stream never closed this tool_use block, so its input may be incomplete"
    if problem is not None:
        return ToolUseBlock(tid, name, {}, complete=False, raw_input=raw, problem=problem)
    assert parsed is not None
    return ToolUseBlock(tid, name, parsed, complete=True)


def decode_tool_input(raw: str) -> tuple[dict[str, Any] | None, str | None]:
    """The one place a tool call's input text is decoded: (the object, None), or (None, what is
    wrong with it: where JSON parsing stopped and what it expected there, or which JSON type
    came instead of an object)."""
    try:
        value = jsonsafe.loads(raw)  # bounded depth: a 100,000-deep input is bad JSON, not a crash
    except json.JSONDecodeError as exc:
        return None, f"invalid JSON at line {exc.lineno}, column {exc.colno} (character {exc.pos}): {exc.msg}"
    except ValueError as exc:  # e.g. a number too long to convert
        return None, f"invalid JSON: {exc}"
    except RecursionError:
        return None, "invalid JSON: nested too deeply to read"
    if not isinstance(value, dict):
        return None, f"the input is {_json_kind(value)}, not an object"
    return value, None


def _json_kind(value: Any) -> str:
    kinds = {list: "a JSON array", str: "a JSON string", bool: "a JSON boolean", int: "a JSON number",
             float: "a JSON number", type(None): "JSON null"}
    return kinds.get(type(value), "not a JSON object")


def unreadable_calls(message: Message) -> list[Notice]:
    """A notice per tool call of `message` whose input could not be used, holding what really
    arrived (the conversation carries `{}` in its place), for the transcript."""
    return [Notice("warning", f"the model's call to {b.name} ({b.id}) was not run: {b.problem}", "malformed_tool_input",
                   {"toolUseId": b.id, "toolName": b.name, "problem": b.problem, "rawInput": b.raw_input})
            for b in message.tool_uses if not b.complete]


async def stream_response(client: Model, request: ModelRequest, role: str, *, tally: Tally, clock: Clock,
                          emit: Callable[[Event], None], partial: bool = False) -> Response | ModelError:
    """One call of the model, folded: its time and usage go to `tally` (as `role`), its stream
    events to `emit` when `partial`. A stream that ends before its end event is an error."""
    acc = Accumulator()
    started = clock.monotonic()
    try:
        async for event in client.stream(request):
            acc.add(event)
            if partial:
                emit(PartialEvent(event))
        if not acc.finished or acc.stop_reason is None:
            raise ModelError("stream_incomplete", "the response stream ended before its end event")
    except ModelError as error:
        return error
    finally:
        took = clock.monotonic() - started
        tally.api_seconds += took
    response = acc.response(fallback_model=request.model)
    tally.account(response, role, took)
    return response
