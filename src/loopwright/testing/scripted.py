"""`ScriptedModel`: an in-process fake of the `Model` port. It plays a list of steps (responses
or errors), fails loudly on a call it has no step for, and `assert_done()` fails on unused steps."""

from __future__ import annotations

from typing import AsyncIterator, Callable, Sequence, Union

from ..core.errors import ModelError
from ..core.fastclass import dataclass
from ..core.types import (
    BlockDelta, BlockStart, BlockStop, Message, ModelRequest, Response, StreamDelta, StreamEvent,
    StreamStart, StreamStop, TextBlock, ToolUseBlock, Usage,
)

Check = Callable[[ModelRequest], None]


@dataclass(frozen=True)
class Step:
    """One expected call: answer with `response` or raise `error`; `check` may assert on the
    request (raise AssertionError to fail the test)."""

    response: Response | None = None
    error: ModelError | None = None
    check: Check | None = None


StepLike = Union[Step, Response, ModelError, str]


def text(value: str, stop_reason: str = "end_turn") -> Response:
    return Response(Message("assistant", (TextBlock(value),)), stop_reason, "", Usage(10, max(1, len(value) // 4)))  # type: ignore[arg-type]


def tool_call(name: str, input: dict, id: str | None = None, stop_reason: str = "tool_use") -> Response:
    block = ToolUseBlock(id or f"toolu_scripted_{name}_{abs(hash(repr(input))) % 10**8}", name, input)
    return Response(Message("assistant", (block,)), stop_reason, "", Usage(10, 10))  # type: ignore[arg-type]


class ScriptedModel:
    def __init__(self, steps: Sequence[StepLike]) -> None:
        self.steps = [self._step(s) for s in steps]
        self.requests: list[ModelRequest] = []

    @staticmethod
    def _step(step: StepLike) -> Step:
        if isinstance(step, Step):
            return step
        if isinstance(step, Response):
            return Step(response=step)
        if isinstance(step, ModelError):
            return Step(error=step)
        return Step(response=text(step))

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent]:
        self.requests.append(request)
        index = len(self.requests) - 1
        if index >= len(self.steps):
            raise AssertionError(f"ScriptedModel: unexpected call #{index + 1}; the script has {len(self.steps)} steps")
        step = self.steps[index]
        if step.check is not None:
            step.check(request)
        if step.error is not None:
            raise step.error
        assert step.response is not None
        for event in response_events(step.response, request.model):
            yield event

    def assert_done(self) -> None:
        unused = len(self.steps) - len(self.requests)
        if unused > 0:
            raise AssertionError(f"ScriptedModel: {unused} scripted step(s) were never used")

    async def aclose(self) -> None:
        return None


def response_events(response: Response, model: str) -> list[StreamEvent]:
    """The stream events that fold back into `response`."""
    import json

    events: list[StreamEvent] = [StreamStart(response.id or "msg_scripted", response.model or model,
                                             Usage(response.usage.input_tokens))]
    for i, block in enumerate(response.message.content):
        if isinstance(block, ToolUseBlock):
            events.append(BlockStart(i, {"type": "tool_use", "id": block.id, "name": block.name, "input": {}}))
            raw = block.raw_input if not block.complete and block.raw_input is not None else json.dumps(block.input)
            events.append(BlockDelta(i, {"type": "input_json_delta", "partial_json": raw}))
        elif isinstance(block, TextBlock):
            events.append(BlockStart(i, {"type": "text", "text": ""}))
            events.append(BlockDelta(i, {"type": "text_delta", "text": block.text}))
        else:
            events.append(BlockStart(i, block.to_api()))
        events.append(BlockStop(i))
    events.append(StreamDelta(response.stop_reason, {"output_tokens": response.usage.output_tokens},
                              response.stop_sequence, response.stop_details))
    events.append(StreamStop())
    return events
