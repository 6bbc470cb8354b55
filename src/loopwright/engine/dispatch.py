"""Carrying out one response's tool calls for the loop: PreToolUse hooks, the permission gate,
input validation, scheduling (consecutive read-only calls in parallel, others in order),
PostToolUse hooks. Results always come back in tool_use order; no failure escapes as an
exception, every one becomes an `is_error` result the model can read, and a call that a limit, an
interrupt or an internal error cut short is answered too (`answer_unfinished`: the transcript stays
a conversation a resume can continue, and nothing runs twice).

What enters the conversation from tools and hooks is bounded and made sendable: a tool result
keeps at most `MAX_RESULT_CHARS` (its start and end, with a note of what was left out); hook
`additionalContext` at most `MAX_CONTEXT_CHARS` a text and `MAX_CONTEXT_TOTAL` a message (cut, with
a note); lone surrogates (undecodable file names, a stray `\\ud800`) are made visible escapes, so
every message encodes as UTF-8."""

from __future__ import annotations

import json

from dataclasses import field, replace
from typing import TYPE_CHECKING, Any, Awaitable, Callable, Iterable, Sequence

import anyio

from ..core.clock import Clock, SystemClock
from ..core.environ import child_env
from ..core.errors import ToolInputError
from ..core.events import Event, PermissionDenial, ToolFinished, ToolProgress, ToolStarted
from ..core.fastclass import dataclass
from ..core.hookevents import HookEvent
from ..core.jsonsafe import valid_text
from ..core.ports import (
    CURRENT_TOOL_USE_ID, NO_HOOK_RESULT, HookResult, HookRunner, StepOutcome, Tool, ToolContext, ToolOutput,
    hooks_want,
)
from ..core.types import Message, ToolResultBlock, ToolUseBlock

if TYPE_CHECKING:
    from .gate import ToolGate

Payload = Callable[[HookEvent], dict[str, Any]]  # the fields every input of the event has

MAX_RESULT_CHARS = 200_000  # about 50,000 tokens: more would crowd out the conversation
MAX_CONTEXT_CHARS = 10_000  # Claude Code's cap on a hook's text
MAX_CONTEXT_TOTAL = 50_000  # all hooks together, for one message

# The results of calls a cut left unfinished (`running`: it had started; `waiting`: it had not)
INTERRUPTED = "Interrupted: the run was stopped before this tool call finished."
DEADLINE_RUNNING = ("Interrupted: the run reached its time limit (--max-duration) while this call was running, "
                    "so it was stopped; it may have had part of its effect.")
DEADLINE_WAITING = "Not run: the run reached its time limit (--max-duration) before this call started."
SPENT_WAITING = "Not run: the response that asked for this call used up the run's budget ({what}), so nothing more runs."
CRASH_RUNNING = ("Outcome unknown: loopwright stopped on an internal error while this call was running; it may "
                 "have finished, partly run or not run at all. Check its effects before running it again.")
CRASH_WAITING = "Not run: loopwright stopped on an internal error before this call started."

RETRY_REMINDER = ("\n\n<system-reminder>A hook allows one more try of this call; it will face the same check. If "
                  "the user did not ask for this action, drop it and say so instead.</system-reminder>")


@dataclass
class Batch:
    """The outcome of one batch: results in tool_use order, context for the model, and a hook's
    request to stop the run (`continue: false`)."""

    results: list[ToolResultBlock]
    context: list[str] = field(default_factory=list)
    stop: HookResult | None = None


class ToolDispatcher:
    def __init__(self, tools: Sequence[Tool], gate: Callable[[], ToolGate], hooks: HookRunner, ctx: ToolContext,
                 emit: Callable[[Event], None], payload: Payload, parallel: int = 10,
                 clock: Clock | None = None, settle: Callable[[], Awaitable[None]] | None = None) -> None:
        self.tools = {t.name: t for t in tools}
        self._make_gate = gate
        self._gate: ToolGate | None = None
        self.hooks, self.ctx, self.emit, self.payload = hooks, ctx, emit, payload
        self.parallel, self.settle = parallel, settle
        self.clock = clock or SystemClock()
        self.denials: list[PermissionDenial] = []
        self.inflight: dict[str, ToolResultBlock] = {}  # finished results of the batch running now
        self.started: set[str] = set()  # calls of that batch announced as started (tool_started recorded)
        self._batch = Batch([])  # the batch running now: a step's hook may stop it
        self._steps: dict[str, int] = {}  # steps made so far, by the call that made them
        # each call's permission decision (decision, who, why), for its `ToolFinished`
        self._decided: dict[str, tuple[str, str, str, tuple[dict[str, Any], ...]]] = {}

    @property
    def gate(self) -> ToolGate:
        """Built on first use: the rule engine is not needed before the first tool call."""
        if self._gate is None:
            self._gate = self._make_gate()
        return self._gate

    def names(self) -> list[str]:
        return list(self.tools)

    def offer(self, tools: Sequence[Tool]) -> None:
        """The tools of the next request (a server's tool list may change during a run)."""
        if len(tools) != len(self.tools) or any(self.tools.get(t.name) is not t for t in tools):
            self.tools = {t.name: t for t in tools}

    async def run(self, calls: Sequence[ToolUseBlock]) -> Batch:
        batch = self._batch = Batch([])
        results: dict[str, ToolResultBlock] = {}
        self.inflight, self.started, self._steps = results, set(), {}
        for group in self._groups(calls):
            for call in group:
                self.started.add(call.id)
                self.emit(ToolStarted(call.id, call.name, call.input))
            if self.settle is not None:
                await self.settle()  # the tool_started records are on disk before the tools run

            async def one(call: ToolUseBlock, limiter: anyio.CapacityLimiter | None = None) -> None:
                if limiter is None:  # a call alone: nothing to limit
                    began = self.clock.monotonic()
                    result = results[call.id] = await self._one(call, batch)
                else:
                    async with limiter:
                        began = self.clock.monotonic()
                        result = results[call.id] = await self._one(call, batch)
                # at once, not after the group: the session ledger must know what finished
                self.emit(self._finished(call, result, began))

            if len(group) == 1:
                await one(group[0])
            else:
                limiter = anyio.CapacityLimiter(self.parallel)
                async with anyio.create_task_group() as tg:
                    for call in group:
                        tg.start_soon(one, call, limiter)
            if batch.stop is not None:  # a hook asked to stop: later calls do not run
                for rest in calls[calls.index(group[-1]) + 1:]:
                    results[rest.id] = ToolResultBlock(rest.id, "Not run: a hook stopped the run.", True)
                break
        batch.results = [results[c.id] for c in calls]
        return batch

    def answer_unfinished(self, messages: Sequence[Message], running: str, waiting: str) -> Message | None:
        """The user message that answers every tool call of the last message when a cut left it
        without one (it is the assistant's): the result of each call of the batch that finished,
        `running` for one that started, `waiting` for one that never did. None when it asks none."""
        last = messages[-1] if messages else None
        if last is None or last.role != "assistant" or not last.tool_uses:
            return None
        return Message("user", tuple(
            self.inflight.get(call.id) or ToolResultBlock(call.id, running if call.id in self.started else waiting, True)
            for call in last.tool_uses))

    def _finished(self, call: ToolUseBlock, result: ToolResultBlock, began: float) -> ToolFinished:
        decision, source, reason, calls = self._decided.pop(call.id, ("", "", "", ()))
        return ToolFinished(call.id, call.name, result.is_error, result.text, result,
                            int((self.clock.monotonic() - began) * 1000), decision, source, reason, calls)

    def _groups(self, calls: Sequence[ToolUseBlock]) -> list[list[ToolUseBlock]]:
        groups: list[list[ToolUseBlock]] = []
        for call in calls:
            if self._read_only(call) and groups and self._read_only(groups[-1][-1]):
                groups[-1].append(call)
            else:
                groups.append([call])
        return groups

    def _read_only(self, call: ToolUseBlock) -> bool:
        tool = self.tools.get(call.name)
        return tool is not None and tool.read_only

    async def _one(self, call: ToolUseBlock, batch: Batch) -> ToolResultBlock:
        tool = self.tools.get(call.name)
        if tool is None:
            names = ", ".join(self.tools) or "none"
            return _error(call, f"No such tool: {call.name}. Available tools: {names}. Use one of those.")
        pre = await self.hooks.run("PreToolUse", self.payload("PreToolUse") | {
            "tool_name": call.name, "tool_input": call.input, "tool_use_id": call.id},
            match=call.name) if hooks_want(self.hooks, "PreToolUse") else NO_HOOK_RESULT
        self._note(pre, batch)
        tool_input = pre.updated_input if pre.updated_input is not None else call.input
        if pre.decision == "deny":
            self._decided[call.id] = ("deny", "hook", pre.reason or "no reason given", ())
            self.denials.append(PermissionDenial(call.name, call.id, call.input,
                                                 f"a PreToolUse hook blocked it: {pre.reason or 'no reason given'}"))
            context = "".join(f"\n\n{c}" for c in bounded_context(pre.additional_context))
            return _error(call, f"A PreToolUse hook blocked this call: {pre.reason or 'no reason given'}{context}")
        CURRENT_TOOL_USE_ID.set(call.id)  # an approver that asks elsewhere names the call
        decision = await self.gate.check(tool, tool_input, hook_allowed=pre.decision == "allow",
                                         hook_asked=(pre.reason or "no reason given") if pre.decision == "ask" else None)
        self._decided[call.id] = ("allow", decision.source, "", decision.calls) if decision.allowed else (
            "deny", decision.source, decision.reason, decision.calls)
        if not decision.allowed:
            self.denials.append(PermissionDenial(call.name, call.id, tool_input, decision.reason, decision.hint))
            message = decision.message
            if decision.auto:  # auto mode's PermissionDenied hook: `retry` grants one more try after a verdict
                denied = await self.hooks.run("PermissionDenied", self.payload("PermissionDenied") | {
                    "tool_name": call.name, "tool_input": tool_input, "tool_use_id": call.id,
                    "reason": decision.reason}, match=call.name)
                if denied.retry and decision.auto == "blocked":
                    message += RETRY_REMINDER
            return _error(call, message)
        tool_input = decision.updated_input if decision.updated_input is not None else tool_input
        try:
            args = tool.validate(tool_input)
        except ToolInputError as exc:
            return _error(call, str(exc))
        except Exception as exc:  # a tool's bug in checking its input: the model is told, as for run()
            return _error(call, f"The {call.name} tool failed to check its input with {type(exc).__name__}: {exc}")
        started = self.clock.monotonic()
        # the gate may add environment for this call alone (git's neutralising overrides), and
        # hands the tool where it judged the call's paths
        # ({} in the context means child_env(): the overrides go on top of that, never alone)
        changes: dict[str, Any] = {"progress": lambda done, total, message: self.emit(
            ToolProgress(call.id, call.name, done, total, message)),
            "step": lambda name, step_input: self._step(call, name, step_input)}
        if decision.env:
            changes["env"] = {**(self.ctx.env or child_env()), **decision.env}
        if decision.guard is not None:
            changes["guard"] = decision.guard
        ctx = replace(self.ctx, **changes)
        try:
            output: ToolOutput = await tool.run(args, ctx)
        except Exception as exc:  # a tool's bug must not end the loop; the model is told
            output = ToolOutput(f"The {call.name} tool failed with {type(exc).__name__}: {exc}", True)
        result = bounded_result(ToolResultBlock(call.id, output.content, output.is_error))
        ms = int((self.clock.monotonic() - started) * 1000)
        return await self._after(call, tool_input, result, batch, list(pre.additional_context), ms, output.response)

    async def _after(self, call: ToolUseBlock, tool_input: dict[str, Any], result: ToolResultBlock,
                     batch: Batch, extra: list[str], duration_ms: int, response: Any = None) -> ToolResultBlock:
        event: HookEvent = "PostToolUseFailure" if result.is_error else "PostToolUse"
        if not extra and not hooks_want(self.hooks, event):
            return result  # nothing to run and nothing to add
        fields: dict[str, Any] = {"tool_name": call.name, "tool_input": tool_input, "tool_use_id": call.id,
                                  "duration_ms": duration_ms}
        # an interrupted call never gets here (cancellation propagates), so is_interrupt is false
        fields |= ({"error": result.text, "is_interrupt": False} if result.is_error
                   else {"tool_response": result.to_api()["content"] if response is None else response})
        post = await self.hooks.run(event, self.payload(event) | fields, match=call.name)
        self._note(post, batch)
        if post.updated_output is not None and call.name.startswith("mcp__"):  # as Claude Code: MCP tools only
            shown = post.updated_output
            result = bounded_result(ToolResultBlock(result.tool_use_id, shown if isinstance(shown, str)
                                                    else json.dumps(shown, ensure_ascii=False), result.is_error))
        extra += post.additional_context
        if post.decision == "block" and post.reason:
            extra.append(post.reason)
        if not extra or not isinstance(result.content, str):
            return result
        return ToolResultBlock(result.tool_use_id, result.content + "\n\n" + "\n".join(bounded_context(extra)),
                               result.is_error)

    async def _step(self, parent: ToolUseBlock, name: str, tool_input: dict[str, Any]) -> StepOutcome:
        """A call `parent` makes as a step of itself (a skill's shell step): announced, judged, run
        and recorded as a call of the model's is, under its own id (`<parent>_step<n>`), which no
        assistant message holds, so a resume never answers or runs it again on its own."""
        n = self._steps[parent.id] = self._steps.get(parent.id, 0) + 1
        call = ToolUseBlock(f"{parent.id}_step{n}", name, tool_input)
        self.emit(ToolStarted(call.id, call.name, call.input))
        if self.settle is not None:
            await self.settle()
        began = self.clock.monotonic()
        try:
            result = await self._one(call, self._batch)
        finally:
            CURRENT_TOOL_USE_ID.set(parent.id)  # the rest of the parent call is the parent's
        self.emit(self._finished(call, result, began))
        refused = any(d.tool_use_id == call.id for d in self.denials)
        return StepOutcome(result.text, result.is_error, refused)

    def _note(self, hook: HookResult, batch: Batch) -> None:
        if hook is NO_HOOK_RESULT:
            return
        if hook.stop and batch.stop is None:
            batch.stop = hook


def _error(call: ToolUseBlock, text: str) -> ToolResultBlock:
    return ToolResultBlock(call.id, text, True)


def bounded_result(result: ToolResultBlock) -> ToolResultBlock:
    """The result as the model will get it: text capped and valid; other content untouched."""
    if not isinstance(result.content, str):
        return result
    text = valid_text(result.content)
    if len(text) > MAX_RESULT_CHARS:
        half = MAX_RESULT_CHARS // 2
        text = (f"{text[:half]}\n\n... [{len(text) - 2 * half:,} characters omitted: this result was "
                f"{len(text):,} characters, over the {MAX_RESULT_CHARS:,} a tool result may hold; ask for less, "
                f"e.g. a narrower search or a range of lines] ...\n\n{text[-half:]}")
    if text is result.content:
        return result
    return ToolResultBlock(result.tool_use_id, text, result.is_error)


def bounded_context(texts: Iterable[str]) -> list[str]:
    """Hook `additionalContext` texts as they may enter one message: each cut past
    `MAX_CONTEXT_CHARS`, and none past `MAX_CONTEXT_TOTAL` together, each cut said in the text."""
    kept: list[str] = []
    room = MAX_CONTEXT_TOTAL
    for text in texts:
        text = valid_text(str(text))
        cap = min(MAX_CONTEXT_CHARS, room)
        if len(text) > cap:
            why = (f"the {MAX_CONTEXT_CHARS:,}-character cap on one hook's context" if cap == MAX_CONTEXT_CHARS
                   else f"the {MAX_CONTEXT_TOTAL:,}-character cap on hook context in one message")
            text = f"{text[:cap]}\n[hook context cut: {len(text):,} characters, over {why}]"
        kept.append(text)
        room -= min(len(text), room)
    return kept
