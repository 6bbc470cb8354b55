"""The ports made durable: a `Model` whose every call is a DBOS step (its stream events recorded
whole, then replayed) and a `Tool` whose every call is a step (its output recorded). Inside a
recovered workflow the engine runs again from the top; each finished step answers from the record,
so the loop takes the same path without calling the model or running a tool again. A tool step
that started but never finished is not run again: it answers as the session ledger answers a
call a crash left running (`session.records.UNKNOWN_OUTCOME`). Every tool of a run is behind a
step, whoever offers it (built-in, MCP, Skill, Agent, Workflow); what a call does inside its
step (a subagent's model and tool calls) is part of that step."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator, Sequence
from typing import Any, AsyncIterator, Callable

from dbos import DBOS

from ..core.errors import ModelError
from ..core.events import Event, ToolStarted
from ..core.ports import CURRENT_TOOL_USE_ID, Model, Tool, ToolContext, ToolOutput
from ..core.types import ModelRequest, StreamEvent
from ..session.records import UNKNOWN_OUTCOME
from .registry import Registry

# The registry of this worker process, set once before DBOS launches (steps run on DBOS's own
# event-loop thread, so this is a plain module global, not a context variable).
_registry: list[Registry] = []


def use_registry(registry: Registry) -> None:
    _registry[:] = [registry]

_ERROR_FIELDS = ("status", "retry_after", "should_retry", "request_id", "error_type")


@DBOS.step(name="loopwright.model_call")
async def _model_call(model: Model, request: ModelRequest) -> tuple[str, Any]:
    """One model call, whole: ("ok", events) or ("error", the ModelError's fields). A failure is
    recorded too, so a replay takes the same retry or fallback the first run took."""
    events: list[StreamEvent] = []
    try:
        async for event in model.stream(request):
            events.append(event)
    except ModelError as exc:
        return "error", {"kind": exc.kind, "message": exc.message, **{k: getattr(exc, k) for k in _ERROR_FIELDS}}
    return "ok", events


TOOL_STEP = "loopwright.tool_call"


async def _tool_body(tool: Tool, args: Any, ctx: ToolContext) -> ToolOutput:
    for registry in _registry:
        key = f"{DBOS.workflow_id}:{DBOS.step_id}"
        if not await asyncio.to_thread(registry.mark_tool_start, key):
            return ToolOutput(UNKNOWN_OUTCOME.format(name=tool.name), is_error=True)
    return await tool.run(args, ctx)


_tool_call = DBOS.step(name=TOOL_STEP)(_tool_body)


class DurableModel:
    """`inner` behind recorded steps. Other attributes (a router's `client_for`) pass through."""

    def __init__(self, inner: Model) -> None:
        self.inner = inner

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent]:
        outcome, value = await _model_call(self.inner, request)
        if outcome == "error":
            fields = dict(value)
            raise ModelError(fields.pop("kind"), fields.pop("message"), **fields)
        for event in value:
            yield event

    async def aclose(self) -> None:
        await self.inner.aclose()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


class ToolSteps:
    """The tool steps of one durable run. `watching(emit)` sees each `ToolStarted` as the engine
    announces the calls of a batch, in their order and before any of them runs, and draws that
    call's step id then; so calls that run side by side (several subagents) keep the same step
    ids on a replay however their hooks and permission checks interleave. A call not announced
    (a typed command's shell step, before the loop) takes the next id when it runs."""

    def __init__(self) -> None:
        self._drawn: dict[str, Any] = {}  # tool_use id -> DBOS StepReservation

    def wrap(self, tools: list[Tool]) -> Sequence[Tool]:
        """`Agent.tool_steps`: every tool of a run behind a step."""
        return DurableTools(tools, self)

    def watching(self, emit: Callable[[Event], None]) -> Callable[[Event], None]:
        def watch(event: Event) -> None:
            if isinstance(event, ToolStarted) and _in_workflow_code():
                self._drawn[event.tool_use_id] = DBOS.reserve_step()
            emit(event)

        return watch

    async def run(self, tool: Tool, args: Any, ctx: ToolContext) -> ToolOutput:
        if not _in_workflow_code():  # inside another call's step (a subagent's): part of that step
            return await tool.run(args, ctx)
        drawn = self._drawn.pop(CURRENT_TOOL_USE_ID.get(), None)
        if drawn is None:
            return await _tool_call(tool, args, ctx)
        return await drawn.run_async({"name": TOOL_STEP}, _tool_body, tool, args, ctx)


def _in_workflow_code() -> bool:
    """In a workflow and not inside one of its steps (DBOS records no step within a step)."""
    return DBOS.workflow_id is not None and DBOS.step_id is None


class DurableTool:
    """`inner` with each call a recorded step (`ToolSteps.run`)."""

    def __init__(self, inner: Tool, steps: ToolSteps) -> None:
        self.inner, self.steps = inner, steps
        self.name, self.read_only = inner.name, inner.read_only

    @property
    def description(self) -> str:
        return self.inner.description

    @property
    def input_schema(self) -> dict[str, Any]:
        return self.inner.input_schema

    @property
    def shells(self) -> Any:  # the session's background work, as tools.background_work looks for it
        from ..tools import background_work

        return background_work([self.inner])

    def validate(self, raw: dict[str, Any]) -> Any:
        return self.inner.validate(raw)

    async def run(self, args: Any, ctx: ToolContext) -> ToolOutput:
        return await self.steps.run(self.inner, args, ctx)

    def __getattr__(self, name: str) -> Any:  # access(), and anything else a tool offers
        return getattr(self.inner, name)


class DurableTools(Sequence[Tool]):
    """A run's tools, each behind a recorded step. The list is read again for each request (an
    MCP server's tools may change during a run): a tool keeps its wrapper."""

    def __init__(self, tools: Sequence[Tool], steps: ToolSteps) -> None:
        self.tools, self.steps = tools, steps
        self._wrapped: dict[int, DurableTool] = {}

    def _wrap(self, tool: Tool) -> Tool:
        wrapped = self._wrapped.get(id(tool))
        if wrapped is None or wrapped.inner is not tool:
            wrapped = self._wrapped[id(tool)] = DurableTool(tool, self.steps)
        return wrapped  # type: ignore[return-value]

    def __iter__(self) -> Iterator[Tool]:
        return (self._wrap(t) for t in self.tools)

    def __len__(self) -> int:
        return len(self.tools)

    def __getitem__(self, index: Any) -> Any:
        return list(self)[index]
