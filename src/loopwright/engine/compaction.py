"""Context compaction: where to cut the conversation (never between a tool call and its result),
the summary request, the conversation rebuilt around the summary; and `Compactor`, when and how the
loop compacts: a running estimate of the window in use, the token counter's confirmation, the
summary call with its Pre/PostCompact hooks, and the breakers (failed summaries, a window that
refills right after compacting)."""

from __future__ import annotations

import json
import re
import time
from typing import Any, Awaitable, Callable, Sequence

from ..core.errors import ModelError
from ..core.events import CompactBoundary, Event, Notice
from ..core.fastclass import dataclass
from ..core.hookevents import HookEvent
from ..core.ports import HookRunner
from ..core.types import Message, ModelRequest, Response, TextBlock, ToolResultBlock
from ..policy.models import resolve_model

KEEP_EXCHANGES = 2

SUMMARY_INSTRUCTIONS = """\
Stop the task for a moment: the conversation above is about to be replaced by a summary, \
because the context window is nearly full. Do not call any tools. Reply with plain text only, \
in this form:

<summary>
1. Request: every instruction and goal the user gave, in their words where it matters.
2. State: the files, commands and facts that matter now, with exact paths and names.
3. Done: what has been completed and verified, and how it was verified.
4. Errors: problems met and how they were solved (or not).
5. Next: what remains, and the very next step.
</summary>

Be complete but brief: the work continues from this summary alone, plus the most recent \
messages, which are kept word for word."""

RESUME_PREFIX = (
    "This conversation was compacted because the context window filled up. The summary of the "
    "earlier part follows; the most recent messages are kept unchanged after it. Continue the "
    "task from where it stands, without asking the user anything new.\n\n"
)


@dataclass(frozen=True, slots=True)
class Cut:
    older: tuple[Message, ...]
    kept: tuple[Message, ...]


def plan(messages: Sequence[Message], keep: int = KEEP_EXCHANGES) -> Cut | None:
    """Split into an older part to summarise and the last `keep` exchanges (an assistant message
    and the user message after it) to keep word for word. None when there is nothing older
    than the kept exchanges but the first prompt: then compaction cannot free room."""
    assistant_at = [i for i, m in enumerate(messages) if m.role == "assistant"]
    if len(assistant_at) <= keep:
        return None
    cut = assistant_at[-keep] if keep else len(messages)
    older, kept = tuple(messages[:cut]), tuple(messages[cut:])
    if not any(m.role == "assistant" for m in older):
        return None
    return Cut(older, kept)


def summary_request(cut: Cut, model: str, system: str, max_tokens: int, focus: str = "") -> ModelRequest:
    """The older part, with the summary instructions added to its last user message (after any
    tool results, where text is allowed), and no tools. `focus`: what the person asked the
    summary to keep in view (`/compact FOCUS`)."""
    older = list(cut.older)
    last = older[-1]
    asked = SUMMARY_INSTRUCTIONS + (f"\n\nFocus the summary on: {focus}" if focus else "")
    if last.role == "user":
        older[-1] = Message("user", last.content + (TextBlock(asked),))
    else:
        older.append(Message.user(asked))
    return ModelRequest(model=model, messages=tuple(older), max_tokens=max_tokens, system=system)


_SUMMARY = re.compile(r"<summary>(.*?)(?:</summary>|$)", re.S)


def extract_summary(text: str) -> str:
    match = _SUMMARY.search(text)
    return (match.group(1) if match else text).strip()


def rebuild(summary: str, cut: Cut, opening: Sequence[str] = ()) -> list[Message]:
    """The conversation after compaction: one user message with what opens every conversation
    (`opening`, e.g. the memory files) and the summary, then the kept tail (which starts with an
    assistant message, so roles still alternate)."""
    summary_text = RESUME_PREFIX + "<summary>\n" + summary + "\n</summary>"
    head = Message("user", (*(TextBlock(t) for t in opening), TextBlock(summary_text)))
    return [head, *cut.kept]


def estimate_tokens(messages: Sequence[Message]) -> int:
    """A cheap upper-side estimate (about 4 characters a token) for messages the API has not
    counted yet."""
    chars = 0
    for m in messages:
        for b in m.content:
            if isinstance(b, (TextBlock, ToolResultBlock)):
                chars += len(b.text)
            else:
                chars += len(json.dumps(b.to_api()))
    return chars // 4 + 4 * len(messages)


# ------------------------------------------------------------ when the loop compacts

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
        return self.base + estimate_tokens(messages[self.counted_upto:])

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
        cut = plan(messages)
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
        outcome = await self.stream(summary_request(cut, model, system, max_tokens, focus), "compaction")
        summary = extract_summary(outcome.message.text) if isinstance(outcome, Response) else ""
        if not summary:
            self.failed += 1
            why = outcome.describe() if isinstance(outcome, ModelError) else "the summary was empty"
            self.emit(Notice("warning", f"compaction failed: {why}"))
            return None
        rebuilt = rebuild(summary, cut, self.reopen() if self.reopen else ())
        self.base, self.counted_upto, self._just_compacted = 0, 0, True
        assert isinstance(outcome, Response)  # a summary came from one
        call = {"model": outcome.model, "id": outcome.id, "stop_reason": outcome.raw_stop_reason,
                "usage": outcome.usage.to_api(), "duration_ms": int((time.monotonic() - began) * 1000)}
        self.emit(CompactBoundary(trigger, before, self.estimate(rebuilt), summary, tuple(rebuilt), call))  # type: ignore[arg-type]
        await self.hooks.run("PostCompact", self.payload("PostCompact") | {
            "trigger": hook_trigger, "compact_summary": summary}, match=hook_trigger)
        return rebuilt
