"""The model's side of a turn, for the loop: the tools a request shows, the request itself, the
wrap-up request after the turn limit, one streamed call gathered into a `Response` (or the
`ModelError` that ended it), and the text of the last answer. The loop decides what to do with
each answer."""

from __future__ import annotations

from typing import Any, Callable, Sequence

from .accumulate import Accumulator
from .loopconfig import FINAL_TURN
from .tally import Tally
from ..core.clock import Clock
from ..core.errors import ModelError
from ..core.events import Event, PartialEvent
from ..core.ports import Model, Tool, tool_spec
from ..core.types import Message, ModelRequest, Response, TextBlock
from ..permissions.rules import name_hits


def visible_tools(tools: Sequence[Tool], removed: Sequence[str]) -> list[Tool]:
    """The tools the model may see: `tools` without those the permission rules remove."""
    if not removed:  # (every turn: the common case without the scan)
        return list(tools)
    if "*" in removed:
        return []
    return [t for t in tools if not any(name_hits(r, t.name) for r in removed)]


def request_for(model: str, messages: Sequence[Message], max_tokens: int, system: Any, tools: Sequence[Tool],
                extra: dict[str, Any] | None = None) -> ModelRequest:
    return ModelRequest(model=model, messages=tuple(messages), max_tokens=max_tokens, system=system,
                        tools=tuple(tool_spec(t) for t in tools), extra=extra or {})


def wrap_up(messages: Sequence[Message]) -> tuple[Message, ...]:
    """The conversation with the final-turn request after it."""
    last = messages[-1]
    if last.role == "user":  # usually tool results: the request goes after them
        return (*messages[:-1], Message("user", last.content + (TextBlock(FINAL_TURN),)))
    return (*messages, Message.user(FINAL_TURN))


def last_text(messages: Sequence[Message]) -> str:
    """The text of the model's last answer that has any ("" when none has)."""
    for message in reversed(messages):
        if message.role == "assistant" and message.text.strip():
            return message.text
    return ""


async def stream_response(client: Model, request: ModelRequest, role: str, *, tally: Tally, clock: Clock,
                          emit: Callable[[Event], None],
                          partial: bool = False) -> Response | ModelError:
    """One call of the model; its time and usage go to `tally` (as `role`), its stream events to
    `emit` when `partial`."""
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
