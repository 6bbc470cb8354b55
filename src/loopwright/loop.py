"""The one state machine: call the model, let `policy.stop.decide` choose what happens next,
carry it out. The only place that awaits the model and the tools. It yields typed events
through `emit` and never prints."""

from __future__ import annotations

import random
from collections import Counter
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Awaitable, Callable, Sequence, assert_never

import anyio

from . import compaction
from .accumulate import Accumulator
from .clock import Clock, SystemClock
from .errors import ModelError, ToolInputError
from .events import (
    ApiRetry,
    AssistantMessage,
    CompactBoundary,
    Event,
    ModelUsage,
    Notice,
    PartialEvent,
    PermissionDenial,
    ResultEvent,
    RunResult,
    SystemInit,
    ToolFinished,
    ToolStarted,
    UserMessage,
)
from .policy import permissions
from .policy.budget import Budget, Spent, check_limits
from .policy.models import resolve_model
from .policy.pricing import cost_usd
from .policy.stop import (
    CONTINUE_AFTER_CUT, CandidateStop, Caps, Compact, Continue, Escalate, Finish, Limits, LoopState, Next, Resend,
    Retry, RunTools, SwitchModel, after_tools, decide, on_stop_hooks,
)
from .ports import Model, Tool, ToolContext, ToolOutput, tool_spec
from .compaction import estimate_tokens
from .types import Message, ModelRequest, Response, TextBlock, ToolResultBlock, ToolUseBlock

StopHook = Callable[[dict[str, Any]], Awaitable[str | None]]
INTERRUPTED = "Interrupted: the run was stopped before this tool call finished."
FINAL_TURN = ("The turn limit for this run is reached, so no more tools can run. Reply now with a "
              "summary: what you did, what is verified, and what remains to be done.")


@dataclass
class LoopConfig:
    model: str
    cwd: Path
    session_id: str
    system: str = ""
    tools: Sequence[Tool] = ()
    limits: Limits = field(default_factory=Limits)
    budget: Budget = field(default_factory=Budget)
    permissions: permissions.PermissionRules = field(default_factory=permissions.PermissionRules)
    parallel_tools: int = 10
    include_partial: bool = False
    stop_hooks: Sequence[StopHook] = ()
    final_turn: bool = False
    compact_threshold: float = 0.8  # of the model's context window
    max_failed_compactions: int = 3
    max_compaction_refills: int = 3


def caps_for(model: str) -> Caps:
    info = resolve_model(model)
    return Caps(info.default_output, info.max_output)


class AgentLoop:
    """One prompt run. `run()` returns a `RunResult` whatever ends it; `interrupt()` aborts it
    (running tools are cancelled and answered as interrupted)."""

    def __init__(self, model: Model, config: LoopConfig, *, emit: Callable[[Event], None] = lambda e: None,
                 clock: Clock | None = None, rng: random.Random | None = None) -> None:
        self.client, self.cfg, self.emit = model, config, emit
        self.clock = clock or SystemClock()
        self.rng = rng or random.Random()
        self.model = config.model
        self.tools = {t.name: t for t in config.tools}
        self.messages: list[Message] = []
        self.model_usage: dict[str, ModelUsage] = {}
        self.stop_counts: Counter[str] = Counter()
        self.retries: Counter[str] = Counter()
        self.denials: list[PermissionDenial] = []
        self.warnings: list[str] = []
        self.last_response: Response | None = None
        self.api_seconds = 0.0
        self._scope: anyio.CancelScope | None = None
        self._inflight: dict[str, ToolResultBlock] = {}
        self.role_usage: dict[str, ModelUsage] = {}
        self._context_base = 0  # tokens the API counted for the conversation up to _counted_upto
        self._counted_upto = 0
        self._failed_compactions = 0
        self._refills = 0
        self._just_compacted = False
        self._started = 0.0

    def interrupt(self) -> None:
        if self._scope is not None:
            self._scope.cancel()

    # ------------------------------------------------------------ the run

    async def run(self, messages: Sequence[Message]) -> RunResult:
        self.messages = list(messages)
        self._started = self.clock.monotonic()
        self.emit(SystemInit(self.cfg.session_id, str(self.cfg.cwd), self.model,
                             tuple(t.name for t in self._visible_tools()), self.cfg.permissions.mode))
        state = LoopState(max_tokens=caps_for(self.model).default_output)
        result: RunResult | None = None
        with anyio.CancelScope() as scope:
            self._scope = scope
            result = await self._loop(state)
        if result is None:  # interrupted
            result = self._aborted()
        self.emit(ResultEvent(result))
        return result

    async def _loop(self, state: LoopState) -> RunResult:
        while True:
            limit = check_limits(self._spent(state), self.cfg.limits, self.cfg.budget)
            if limit is not None:
                if limit.terminal_reason == "max_turns" and self.cfg.final_turn:
                    limit = replace(limit, result=await self._final_turn(state))
                return self._finish(limit, state)
            if self._over_threshold():
                if self._refills >= self.cfg.max_compaction_refills:
                    return self._finish(Finish("error_during_execution", "compaction_thrashing", True, (
                        "The context filled the window again right after compacting, "
                        f"{self._refills} times in a row",)), state)
                await self.compact("auto")
            outcome = await self._call(state)
            nxt, state = decide(outcome, state, self.cfg.limits, caps_for(self.model), jitter=self.rng.random())
            done, state = await self._apply(nxt, state)
            if done is not None:
                return done

    async def _apply(self, nxt: Next, state: LoopState) -> tuple[RunResult | None, LoopState]:
        match nxt:
            case RunTools(assistant=assistant, calls=calls, note=note):
                self._append_assistant(assistant, state)
                results = await self._run_tools(calls)
                content: tuple[Any, ...] = tuple(results) + ((TextBlock(note),) if note else ())
                self._append_user(Message("user", content))
                return None, after_tools(state, caps_for(self.model))
            case Retry(delay=delay, category=category, error=error):
                self.retries[category] += 1
                self.emit(ApiRetry(state.attempt, self.cfg.limits.max_retries, delay, error.kind, error.status, error.message))
                await self.clock.sleep(delay)
            case Escalate(max_tokens=max_tokens):
                self.emit(Notice("info", f"output hit max_tokens; re-issuing with max_tokens={max_tokens}"))
            case Continue(append=append, reason=reason):
                for message in append:
                    if message.role == "assistant":
                        self._append_assistant(message, state)
                    else:
                        self._append_user(message)
                if reason != "stop_hook":
                    self.emit(Notice("info", f"continuing after {reason}"))
            case Resend():
                self._strip_text_after_results()
                self.emit(Notice("warning", "empty response; sending the request again"))
            case Compact(reason=reason, partial=partial):
                if not await self.compact("reactive"):
                    return self._finish(Finish("error_during_execution", "prompt_too_long", True, (
                        f"The conversation does not fit the context window ({reason}) and could not be compacted",)),
                        state), state
                if partial is not None:
                    self._append_assistant(partial, state)
                    self._append_user(Message.user(CONTINUE_AFTER_CUT))
            case SwitchModel(model=model, reason=reason):
                self.emit(Notice("warning", f"switching to fallback model {model} ({reason})"))
                self.model = model
                state = replace(state, max_tokens=caps_for(model).default_output)
            case CandidateStop(assistant=assistant):
                block = await self._stop_hooks(assistant, state)
                after, state = on_stop_hooks(block, assistant, state, self.cfg.limits)
                return await self._apply(after, state)
            case Finish():
                return self._finish(nxt, state), state
            case _:
                assert_never(nxt)
        return None, state

    # ------------------------------------------------------------ the model

    async def _call(self, state: LoopState) -> Response | ModelError:
        request = ModelRequest(
            model=self.model, messages=tuple(self.messages), max_tokens=state.max_tokens,
            system=self.cfg.system, tools=tuple(tool_spec(t) for t in self._visible_tools()),
        )
        outcome = await self._stream(request, "main", partial=self.cfg.include_partial)
        if isinstance(outcome, Response):
            self.last_response = outcome
            self.stop_counts[outcome.raw_stop_reason or "none"] += 1
            self._context_base = outcome.usage.context_tokens + outcome.usage.output_tokens
            self._counted_upto = len(self.messages)
            if self._just_compacted:  # did the context refill the window at once?
                self._refills = self._refills + 1 if self._over_threshold() else 0
                self._just_compacted = False
        return outcome

    async def _final_turn(self, state: LoopState) -> str | None:
        """One wrap-up call with tools disabled, after the turn limit: its text is the result."""
        last = self.messages[-1]
        if last.role == "user":  # usually tool results: the request goes after them
            messages = (*self.messages[:-1], Message("user", last.content + (TextBlock(FINAL_TURN),)))
        else:
            messages = (*self.messages, Message.user(FINAL_TURN))
        request = ModelRequest(model=self.model, messages=messages, max_tokens=state.max_tokens,
                               system=self.cfg.system, tools=tuple(tool_spec(t) for t in self._visible_tools()),
                               extra={"tool_choice": {"type": "none"}} if self._visible_tools() else {})
        outcome = await self._stream(request, "final_turn")
        if isinstance(outcome, ModelError) or not outcome.message.text.strip():
            return None
        self.messages = list(messages)
        self._append_assistant(outcome.message, state)
        return outcome.message.text

    async def _stream(self, request: ModelRequest, role: str, partial: bool = False) -> Response | ModelError:
        acc = Accumulator()
        started = self.clock.monotonic()
        try:
            async for event in self.client.stream(request):
                acc.add(event)
                if partial:
                    self.emit(PartialEvent(event))
            if not acc.finished or acc.stop_reason is None:
                raise ModelError("stream_incomplete", "the response stream ended before its end event")
        except ModelError as error:
            return error
        finally:
            self.api_seconds += self.clock.monotonic() - started
        response = acc.response(fallback_model=request.model)
        self._account(response, role)
        return response

    def _account(self, response: Response, role: str) -> None:
        cost = cost_usd(response.usage, resolve_model(response.model))
        self.model_usage[response.model] = self.model_usage.get(response.model, ModelUsage()).add(response.usage, cost)
        self.role_usage[role] = self.role_usage.get(role, ModelUsage()).add(response.usage, cost)

    # ------------------------------------------------------------ compaction

    def context_estimate(self) -> int:
        return self._context_base + estimate_tokens(self.messages[self._counted_upto:])

    def _over_threshold(self) -> bool:
        if self._failed_compactions >= self.cfg.max_failed_compactions:
            return False
        window = resolve_model(self.model).context_window
        return self.context_estimate() >= window * self.cfg.compact_threshold

    async def compact(self, trigger: str) -> bool:
        """Summarise the older conversation with the model (no tools) and keep the last
        exchanges word for word. False when nothing could be compacted or the call failed."""
        cut = compaction.plan(self.messages)
        if cut is None or self._failed_compactions >= self.cfg.max_failed_compactions:
            return False
        before = self.context_estimate()
        request = compaction.summary_request(cut, self.model, self.cfg.system, caps_for(self.model).default_output)
        outcome = await self._stream(request, "compaction")
        summary = compaction.extract_summary(outcome.message.text) if isinstance(outcome, Response) else ""
        if not summary:
            self._failed_compactions += 1
            why = outcome.describe() if isinstance(outcome, ModelError) else "the summary was empty"
            self.emit(Notice("warning", f"compaction failed: {why}"))
            return False
        self.messages = compaction.rebuild(summary, cut)
        self._context_base, self._counted_upto = 0, 0
        self._just_compacted = True
        self.emit(CompactBoundary(trigger, before, self.context_estimate(), summary))
        return True

    def _visible_tools(self) -> list[Tool]:
        removed = self.cfg.permissions.removed_tools()
        return [t for t in self.cfg.tools if t.name not in removed and "*" not in removed]

    # ------------------------------------------------------------ tools

    async def _run_tools(self, calls: Sequence[ToolUseBlock]) -> list[ToolResultBlock]:
        """Consecutive read-only calls run in parallel, others one at a time; results come back
        in tool_use order whatever the completion order."""
        results: dict[str, ToolResultBlock] = {}
        self._inflight = results
        for group in self._groups(calls):
            for call in group:
                self.emit(ToolStarted(call.id, call.name, call.input))
            if len(group) == 1:
                results[group[0].id] = await self._run_one(group[0])
            else:
                limiter = anyio.CapacityLimiter(self.cfg.parallel_tools)

                async def one(call: ToolUseBlock) -> None:
                    async with limiter:
                        results[call.id] = await self._run_one(call)

                async with anyio.create_task_group() as tg:
                    for call in group:
                        tg.start_soon(one, call)
            for call in group:
                r = results[call.id]
                self.emit(ToolFinished(call.id, call.name, r.is_error, r.text))
        return [results[c.id] for c in calls]

    def _groups(self, calls: Sequence[ToolUseBlock]) -> list[list[ToolUseBlock]]:
        groups: list[list[ToolUseBlock]] = []
        for call in calls:
            tool = self.tools.get(call.name)
            if tool is not None and tool.read_only and groups and self._parallel(groups[-1][-1]):
                groups[-1].append(call)
            else:
                groups.append([call])
        return groups

    def _parallel(self, call: ToolUseBlock) -> bool:
        tool = self.tools.get(call.name)
        return tool is not None and tool.read_only

    async def _run_one(self, call: ToolUseBlock) -> ToolResultBlock:
        tool = self.tools.get(call.name)
        if tool is None or call.name not in {t.name for t in self._visible_tools()}:
            names = ", ".join(t.name for t in self._visible_tools()) or "none"
            return _error(call, f"No such tool: {call.name}. Available tools: {names}. Use one of those.")
        if permissions.check(call.name, tool.read_only, self.cfg.permissions) == "deny":
            self.denials.append(PermissionDenial(call.name, call.id, call.input))
            return _error(call, f"Permission to use {call.name} was denied (permission mode "
                                f"'{self.cfg.permissions.mode}'). Do not retry this call; choose another way "
                                "or tell the user what permission is needed (e.g. --allowedTools "
                                f"{call.name}).")
        try:
            args = tool.validate(call.input)
        except ToolInputError as exc:
            return _error(call, str(exc))
        ctx = ToolContext(cwd=self.cfg.cwd, writable_roots=(self.cfg.cwd,), session_id=self.cfg.session_id)
        try:
            output: ToolOutput = await tool.run(args, ctx)
        except Exception as exc:  # a tool's bug must not end the loop; the model is told
            return _error(call, f"The {call.name} tool failed with {type(exc).__name__}: {exc}")
        return ToolResultBlock(call.id, output.content, output.is_error)

    # ------------------------------------------------------------ stop hooks

    async def _stop_hooks(self, assistant: Message, state: LoopState) -> str | None:
        payload = {"hook_event_name": "Stop", "session_id": self.cfg.session_id, "cwd": str(self.cfg.cwd),
                   "stop_hook_active": state.stop_blocks > 0, "last_assistant_message": assistant.text,
                   "background_tasks": []}
        reasons = [r for r in [await hook(payload) for hook in self.cfg.stop_hooks] if r]
        return "\n".join(reasons) if reasons else None

    # ------------------------------------------------------------ conversation

    def _append_assistant(self, message: Message, state: LoopState) -> None:
        self.messages.append(message)
        r = self.last_response
        self.emit(AssistantMessage(message, self.model, r.raw_stop_reason if r else None,
                                   r.usage if r else ModelUsage().usage, r.id if r else "", state.turns))

    def _append_user(self, message: Message) -> None:
        self.messages.append(message)
        self.emit(UserMessage(message))

    def _strip_text_after_results(self) -> None:
        last = self.messages[-1] if self.messages else None
        if last is None or last.role != "user":
            return
        if any(isinstance(b, ToolResultBlock) for b in last.content):
            kept = tuple(b for b in last.content if isinstance(b, ToolResultBlock))
            self.messages[-1] = Message("user", kept)

    # ------------------------------------------------------------ results

    def _spent(self, state: LoopState) -> Spent:
        usage = sum((m.usage.total for m in self.model_usage.values()), 0)
        cost = sum(m.cost_usd for m in self.model_usage.values())
        return Spent(state.turns, cost, usage, self.clock.monotonic() - self._started)

    def _last_text(self) -> str:
        for message in reversed(self.messages):
            if message.role == "assistant" and message.text.strip():
                return message.text
        return ""

    def _finish(self, fin: Finish, state: LoopState) -> RunResult:
        if fin.append is not None:
            self._append_assistant(fin.append, state)
        if fin.warning:
            self.warnings.append(fin.warning)
            self.emit(Notice("warning", fin.warning))
        text = fin.result if fin.result else self._last_text()
        return self._result(fin.subtype, fin.terminal_reason, fin.is_error, text, fin.errors, state.turns)

    def _aborted(self) -> RunResult:
        last = self.messages[-1] if self.messages else None
        if last is not None and last.role == "assistant" and last.tool_uses:
            done = self._inflight
            self._append_user(Message("user", tuple(
                done.get(c.id) or ToolResultBlock(c.id, INTERRUPTED, True) for c in last.tool_uses)))
        turns = sum(1 for m in self.messages if m.role == "assistant")
        return self._result("error_during_execution", "aborted", True, self._last_text(),
                            ("Interrupted by the user",), turns)

    def _result(self, subtype: str, reason: str, is_error: bool, text: str, errors: tuple[str, ...], turns: int) -> RunResult:
        usage = self.role_usage.get("main", ModelUsage()).usage
        r = self.last_response
        return RunResult(
            subtype=subtype, is_error=is_error, result=text, session_id=self.cfg.session_id,  # type: ignore[arg-type]
            num_turns=turns, duration_ms=int((self.clock.monotonic() - self._started) * 1000),
            duration_api_ms=int(self.api_seconds * 1000), total_cost_usd=sum(m.cost_usd for m in self.model_usage.values()),
            usage=usage, model_usage=dict(self.model_usage), stop_reason=r.raw_stop_reason if r else None,
            terminal_reason=reason, stop_details=r.stop_details if r else None, errors=errors,  # type: ignore[arg-type]
            permission_denials=tuple(self.denials), stop_reason_counts=dict(self.stop_counts),
            retries={k: self.retries.get(k, 0) for k in ("rate_limit", "overloaded", "server", "network")},
            messages=tuple(self.messages), warnings=tuple(self.warnings), role_usage=dict(self.role_usage),
        )


def _error(call: ToolUseBlock, text: str) -> ToolResultBlock:
    return ToolResultBlock(call.id, text, True)
