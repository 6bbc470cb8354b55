"""When and how the loop compacts its context: a running estimate of the window in use, the
token counter's confirmation, the summary call with its Pre/PostCompact hooks, and the breakers
(failed summaries, a window that refills right after compacting)."""

from __future__ import annotations

import time
from typing import Any, Awaitable, Callable, Sequence

from . import compaction
from ..core.errors import ModelError
from ..core.events import CompactBoundary, Event, Notice
from ..core.fastclass import dataclass
from ..policy.models import resolve_model
from ..core.hookevents import HookEvent
from ..core.ports import HookRunner
from ..core.types import Message, ModelRequest, Response

Stream = Callable[[ModelRequest, str], Awaitable["Response | ModelError"]]


@dataclass(frozen=True, slots=True)
class CompactionLimits:
    threshold: float = 0.8  # of the model's context window
    max_failed: int = 3
    max_refills: int = 3


class Compactor:
    def __init__(self, limits: CompactionLimits, stream: Stream, hooks: HookRunner,
                 payload: Callable[[HookEvent], dict[str, Any]], emit: Callable[[Event], None],
                 count_tokens: Callable[[ModelRequest], Awaitable[int]] | None = None,
                 reopen: Callable[[], list[str]] | None = None) -> None:
        """`reopen`: what the conversation opens with again after a summary (the memory files)."""
        self.limits, self.stream, self.hooks, self.payload, self.emit = limits, stream, hooks, payload, emit
        self.count_tokens, self.reopen = count_tokens, reopen
        self.base = 0  # tokens the API counted for the conversation up to `counted_upto`
        self.counted_upto = 0
        self.failed = 0
        self.refills = 0
        self._just_compacted = False

    def estimate(self, messages: Sequence[Message]) -> int:
        return self.base + compaction.estimate_tokens(messages[self.counted_upto:])

    def over(self, messages: Sequence[Message], model: str) -> bool:
        if self.failed >= self.limits.max_failed:
            return False
        return self.estimate(messages) >= resolve_model(model).context_window * self.limits.threshold

    @property
    def thrashing(self) -> bool:
        return self.refills >= self.limits.max_refills

    def observe(self, response: Response, messages: Sequence[Message], model: str) -> None:
        """A main response arrived: its usage is the API's own count of the context."""
        self.base = response.usage.context_tokens + response.usage.output_tokens
        self.counted_upto = len(messages)
        if self._just_compacted:  # did the context refill the window at once?
            self.refills = self.refills + 1 if self.over(messages, model) else 0
            self._just_compacted = False

    async def confirm(self, request: ModelRequest) -> bool:
        """The estimate says the window is nearly full: ask the API's token counter, where the
        model client has one, before paying for a summary (the estimate errs high)."""
        if self.count_tokens is None or self.counted_upto == len(request.messages):
            return True  # nothing new since the API last counted the whole context
        try:
            exact = await self.count_tokens(request)
        except ModelError:
            return True
        return exact >= resolve_model(request.model).context_window * self.limits.threshold

    async def compact(self, messages: Sequence[Message], model: str, system: str, max_tokens: int,
                      trigger: str, focus: str = "") -> list[Message] | None:
        """Summarise the older conversation with the model (no tools), keeping the last
        exchanges word for word: the new conversation, or None when nothing could be done."""
        cut = compaction.plan(messages)
        if cut is None or self.failed >= self.limits.max_failed:
            return None
        hook_trigger = "manual" if trigger == "manual" else "auto"
        pre = await self.hooks.run("PreCompact", self.payload("PreCompact") | {
            "trigger": hook_trigger, "custom_instructions": focus}, match=hook_trigger)
        if pre.decision == "block":
            self.emit(Notice("warning", f"a PreCompact hook blocked compaction: {pre.reason or 'no reason'}"))
            return None
        before = self.estimate(messages)
        began = time.monotonic()
        outcome = await self.stream(compaction.summary_request(cut, model, system, max_tokens, focus), "compaction")
        summary = compaction.extract_summary(outcome.message.text) if isinstance(outcome, Response) else ""
        if not summary:
            self.failed += 1
            why = outcome.describe() if isinstance(outcome, ModelError) else "the summary was empty"
            self.emit(Notice("warning", f"compaction failed: {why}"))
            return None
        rebuilt = compaction.rebuild(summary, cut, self.reopen() if self.reopen else ())
        self.base, self.counted_upto, self._just_compacted = 0, 0, True
        assert isinstance(outcome, Response)  # a summary came from one
        call = {"model": outcome.model, "id": outcome.id, "stop_reason": outcome.raw_stop_reason,
                "usage": outcome.usage.to_api(), "duration_ms": int((time.monotonic() - began) * 1000)}
        self.emit(CompactBoundary(trigger, before, self.estimate(rebuilt), summary, tuple(rebuilt), call))  # type: ignore[arg-type]
        await self.hooks.run("PostCompact", self.payload("PostCompact") | {
            "trigger": hook_trigger, "compact_summary": summary}, match=hook_trigger)
        return rebuilt
