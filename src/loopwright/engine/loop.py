"""The one state machine: call the model, let `policy.stop.decide` choose what happens next,
carry it out. The only place that awaits the model and the tools. It yields typed events
through `emit` and never prints. The hook events of the run itself (UserPromptSubmit,
PostToolBatch, Stop, StopFailure) are called from here too (`LoopHooks`); the tools' own hooks
are dispatch's, compaction's are the compactor's."""

from __future__ import annotations

import random
from contextlib import nullcontext
from dataclasses import replace
from typing import TYPE_CHECKING, Any, Awaitable, Callable, Mapping, Sequence, assert_never

import anyio

from .accumulate import stream_response, unreadable_calls
from ..core.clock import Clock, SystemClock
from ..core.errors import LoopwrightError, ModelError, crash_report, reader_gone
from ..core.events import (
    ApiRetry,
    AssistantMessage,
    Event,
    ModelUsage,
    RESENT_RESULTS_ONLY,
    Subtype,
    TerminalReason,
    Notice,
    ResultEvent,
    RunResult,
    SystemInit,
    UserMessage,
)
from ..policy.budget import Spent, check_limits, duration_limit, spend_limit, time_left
from ..policy.retry import stop_failure
from ..policy.stop import (
    CONTINUE_AFTER_CUT, CandidateStop, Compact, Continue, Escalate, Finish, LoopState, Next, Resend,
    Retry, RunTools, SwitchModel, after_tools, decide, on_stop_hooks, stop_reason_warning,
)
from .capability import RunView, Seams, StopView
from .dispatch import (
    CRASH_RUNNING, CRASH_WAITING, DEADLINE_RUNNING, DEADLINE_WAITING, INTERRUPTED, SPENT_WAITING, Batch,
    ToolDispatcher, bounded_context,
)
from ..core.hookevents import HookEvent
from ..core.ports import NO_HOOK_RESULT, HookResult, Model, Tool, ToolContext, hooks_want, tool_spec
from .compaction import CompactionLimits, Compactor
from .loopconfig import FINAL_TURN, LoopConfig, caps_for
from .tally import Tally
from ..core.types import Message, ModelRequest, Response, TextBlock, ToolResultBlock
from ..permissions.rules import name_hits

if TYPE_CHECKING:
    from .gate import ToolGate

# What Claude Code writes into the conversation when the user interrupts (and says in the result)
USER_INTERRUPTED = "[Request interrupted by user]"
USER_INTERRUPTED_TOOLS = "[Request interrupted by user for tool use]"


class AgentLoop:
    """One prompt run. `run()` returns a `RunResult` whatever ends it; `interrupt()` aborts it
    (running tools are cancelled and answered as interrupted)."""

    def __init__(self, model: Model, config: LoopConfig, *, emit: Callable[[Event], None] = lambda e: None,
                 clock: Clock | None = None, rng: random.Random | None = None) -> None:
        self.client, self.cfg, self.emit = model, config, emit
        self.clock = clock or SystemClock()
        # retry jitter: without a generator of its own, the random module's (seeding one per run costs
        # ~10 us; the module's is seeded afresh in a forked child, so workers do not retry in step)
        self.rng: Any = rng or random
        self.model = config.model
        self.hooks = config.hooks
        self.caps = Seams(config.capabilities)
        self.calls = LoopHooks(config)
        roots = tuple(dict.fromkeys((config.cwd, *config.writable_roots)))
        ctx = ToolContext(cwd=config.cwd, writable_roots=roots, env=dict(config.child_env), session_id=config.session_id,
                          before_write=self.caps.write_hook())
        self.dispatch = ToolDispatcher(self._visible_tools(), self._gate, config.hooks, ctx, self._emit,
                                       self.calls.payload, config.parallel_tools, self.clock, config.settle)
        self.messages: list[Message] = []
        self.tally = Tally()
        self._scope: anyio.CancelScope | None = None
        self._last_error: ModelError | None = None
        self.compactor = Compactor(
            CompactionLimits(config.compact_threshold, config.max_failed_compactions, config.max_compaction_refills),
            self._stream, config.hooks, self.calls.payload, self._emit, getattr(model, "count_tokens", None),
            self.caps.compacted if self.caps.after_compact else None)
        if config.classifier is not None:
            config.classifier.bind(lambda: self.messages, self._emit)
        self._started = 0.0

    def _gate(self) -> "ToolGate":
        from .gate import ToolGate  # the rule engine loads with the first tool call, after start-up

        return ToolGate(self.cfg.permissions, self.cfg.cwd, self.cfg.approver, self.cfg.child_env, self.cfg.classifier)

    def _emit(self, event: Event) -> None:  # collaborators emit through whatever `emit` is now
        self.emit(event)

    def interrupt(self) -> None:
        if self._scope is not None:
            self._scope.cancel()

    # ------------------------------------------------------------ the run

    async def run(self, messages: Sequence[Message], after_init: Sequence[Event] = ()) -> RunResult:
        """`after_init`: events of what came before the run (what the opening loaded), said right
        after system/init, which is always the first line."""
        self.messages = list(messages)
        self._started = self.clock.monotonic()
        view = RunView(self._emit, lambda: self.messages, self.cfg.cwd, self.cfg.session_id)
        for capability in self.caps.all:
            capability.start(view)
        self.emit(SystemInit(self.cfg.session_id, str(self.cfg.cwd), self.model,
                             tuple(t.name for t in self._visible_tools()), self.cfg.permissions.mode))
        for event in after_init:
            self.emit(event)
        state = LoopState(max_tokens=caps_for(self.model).default_output)
        try:
            result = await self._run(state)
        finally:
            if self.caps.aclose:  # shielded: an interrupted run still lets go of what its capabilities hold
                with anyio.CancelScope(shield=True):
                    for capability in self.caps.aclose:
                        await capability.aclose()
        self.emit(ResultEvent(result))
        return result

    async def _run(self, state: LoopState) -> RunResult:
        result: RunResult | None = None
        with anyio.CancelScope() as scope:
            self._scope = scope
            try:
                result = await self._prompt_hook(state) or await self._loop(state)
            except LoopwrightError:
                raise  # deliberate errors (an unwritable transcript, bad settings) keep their own message
            except Exception as exc:  # the last resort: a bug ends the run with a result, never a traceback
                if reader_gone(exc):
                    raise  # the events' reader closed its end: the command's entry point ends quietly
                result = self.crashed(exc)
        if result is None:  # interrupted
            result = self._aborted()
        elif (kind := stop_failure(result.terminal_reason, self._last_error)) is not None:
            await self.calls.failure(kind, result.errors, result.result)
        return result

    async def _loop(self, state: LoopState) -> RunResult:
        while True:
            spent = self._spent(state)  # one reading a turn, for the limits, the goal's bounds and the deadline
            limit = check_limits(spent, self.cfg.limits, self.cfg.budget)
            if limit is not None:
                if limit.terminal_reason == "max_turns" and self.cfg.final_turn:
                    limit = replace(limit, result=await self._final_turn(state))
                return self._finish(limit, state)
            for capability in self.caps.before_turn:  # e.g. the goal's own turn, time and money bounds
                if (bound := capability.before_turn(spent)) is not None:
                    return self._finish(bound, state)
            # The time left bounds everything the turn waits for: the model, its tools, the hooks.
            left = time_left(spent, self.cfg.budget)  # without a limit no cancel scope: it costs more than the turn's books
            with anyio.move_on_after(left) if left is not None else nullcontext() as deadline:
                if self.compactor.over(self.messages, self.model) and await self.compactor.confirm(self._request(state)):
                    if self.compactor.thrashing:
                        return self._finish(Finish("error_during_execution", "compaction_thrashing", True, (
                            "The context filled the window again right after compacting, "
                            f"{self.compactor.refills} times in a row",)), state)
                    await self.compact("auto")
                outcome = await self._call(state)
                nxt, state = decide(outcome, state, self.cfg.limits, caps_for(self.model), jitter=self.rng.random())
                done, state = await self._apply(nxt, state)
            if deadline is not None and deadline.cancelled_caught:
                self._answer_unfinished(DEADLINE_RUNNING, DEADLINE_WAITING)
                return self._finish(duration_limit(self.cfg.budget), state)
            if done is not None:
                return done

    async def _apply(self, nxt: Next, state: LoopState) -> tuple[RunResult | None, LoopState]:
        match nxt:
            case RunTools(assistant=assistant, calls=calls, note=note):
                self._append_assistant(assistant, state)
                if (spent := spend_limit(self._spent(state), self.cfg.budget)) is not None:  # nothing more starts
                    self._answer_unfinished("", SPENT_WAITING.format(what=spent.errors[0]))
                    return self._finish(spent, state), state
                batch = await self.dispatch.run(calls) if calls else Batch([])
                after = NO_HOOK_RESULT if batch.stop or not calls else await self.calls.batch(calls, batch.results)
                extra = [*bounded_context(after.additional_context), *([note] if note else [])]
                for capability in self.caps.after_batch if calls else ():
                    extra += await capability.after_batch(calls, batch.results)
                results = nxt.in_order(batch.results)
                self._append_user(Message("user", (*results, *(TextBlock(t) for t in extra))))
                stop = batch.stop or (after if after.stop or after.decision == "block" else None)
                if stop is not None:
                    return self._hook_stopped(stop, state), state
                return None, after_tools(state, caps_for(self.model)) if calls else state
            case Retry(delay=delay, category=category, error=error, limit=limit):
                self.tally.retries[category] += 1
                self.emit(ApiRetry(state.attempt, limit, delay, error.kind, error.status, error.message))
                await self.clock.sleep(delay)
            case Escalate(max_tokens=max_tokens):
                self.emit(Notice("info", f"output hit max_tokens; re-issuing with max_tokens={max_tokens}"))
            case Continue(append=append, reason=reason):
                for message in append:
                    if message.role == "assistant":
                        self._append_assistant(message, state)
                    else:
                        self._append_user(message)
                if reason == "stop_hook":  # the person sees why the run did not end (--verbose)
                    self.emit(Notice("info", f"a Stop hook kept the run going: {_one_line(append[-1].text)}",
                                     "stop_hook_block"))
                elif reason != "goal":  # a goal speaks through its own status events
                    self.emit(Notice("info", f"continuing after {reason}"))
            case Resend():
                self._resend()
            case Compact(reason=reason, partial=partial, status=status):
                if not await self.compact("reactive"):
                    return self._finish(Finish("error_during_execution", "prompt_too_long", True, (
                        f"The conversation does not fit the context window ({reason}) and could not be compacted",),
                        api_error_status=status), state), state
                if partial is not None:
                    self._append_assistant(partial, state)
                    self._append_user(Message.user(CONTINUE_AFTER_CUT))
            case SwitchModel(model=model, reason=reason):
                self.emit(Notice("warning", f"switching to fallback model {model} ({reason})"))
                self.model = model
                state = replace(state, max_tokens=caps_for(model).default_output)
            case CandidateStop(assistant=assistant):
                self._append_assistant(assistant, state)
                verdict = await self.calls.stop(assistant.text, state.stop_blocks > 0)
                if verdict.stop:
                    return self._hook_stopped(verdict, state), state
                held_by, own = await self._ask_capabilities(assistant, state, verdict.reason)
                if own is not None:  # a capability's own verdict (the goal's)
                    return await self._apply(own, state)
                then, state = on_stop_hooks(held_by, assistant, state, self.cfg.limits)
                return await self._apply(then, state)
            case Finish():
                return self._finish(nxt, state), state
            case _:
                assert_never(nxt)
        return None, state

    # ------------------------------------------------------------ the model

    async def _call(self, state: LoopState) -> Response | ModelError:
        outcome = await self._stream(self._request(state), "main", partial=self.cfg.include_partial)
        if isinstance(outcome, ModelError):
            self._last_error = outcome
            return outcome
        self.compactor.observe(outcome, self.messages, self.model)
        if warning := stop_reason_warning(outcome, self.tally.stop_counts[outcome.raw_stop_reason or "none"]):
            self._warn(warning, "unknown_stop_reason")
        return outcome

    def _request(self, state: LoopState, messages: Sequence[Message] | None = None,
                 extra: dict[str, Any] | None = None) -> ModelRequest:
        visible = self._visible_tools()
        self.dispatch.offer(visible)  # what the model may call is what this request shows it
        return ModelRequest(model=self.model, messages=tuple(self.messages if messages is None else messages),
                            max_tokens=state.max_tokens, system=self.cfg.system,
                            tools=tuple(tool_spec(t) for t in visible), extra=extra or {})

    async def _final_turn(self, state: LoopState) -> str | None:
        """One wrap-up call with tools disabled, after the turn limit: its text is the result. The
        request goes after the last message's tool results, where there are some."""
        extra = {"tool_choice": {"type": "none"}} if self._visible_tools() else {}
        *before, last = self.messages
        asked = ([*before, Message("user", last.content + (TextBlock(FINAL_TURN),))] if last.role == "user"
                 else [*self.messages, Message.user(FINAL_TURN)])
        outcome = await self._stream(self._request(state, asked, extra), "final_turn")
        if isinstance(outcome, ModelError) or not outcome.message.text.strip():
            return None
        self._append_user(Message.user(FINAL_TURN))  # recorded as sent (the API merges the two)
        self._append_assistant(outcome.message, state)
        return outcome.message.text

    async def _stream(self, request: ModelRequest, role: str, partial: bool = False) -> Response | ModelError:
        return await stream_response(self.client, request, role, tally=self.tally, clock=self.clock,
                                     emit=self._emit, partial=partial)

    # ------------------------------------------------------------ compaction

    async def compact(self, trigger: str, focus: str = "") -> bool:
        """Replace the older conversation by a summary (see `Compactor.compact`)."""
        rebuilt = await self.compactor.compact(self.messages, self.model, self.cfg.system,
                                               caps_for(self.model).default_output, trigger, focus)
        if rebuilt is not None:
            self.messages = rebuilt
        return rebuilt is not None

    def _visible_tools(self) -> list[Tool]:
        """The tools the model may see: those the permission rules do not remove."""
        removed = self.cfg.permissions.removed_tools()
        if not removed:  # (every turn: the common case without the scan)
            return list(self.cfg.tools)
        if "*" in removed:
            return []
        return [t for t in self.cfg.tools if not any(name_hits(r, t.name) for r in removed)]

    # ------------------------------------------------------------ stops and hooks

    async def _ask_capabilities(self, assistant: Message, state: LoopState,
                                reason: str | None) -> tuple[str | None, Continue | Finish | None]:
        """A candidate stop, put to the capabilities in order: their reasons to go on joined to
        the Stop hooks' `reason`, or the first verdict of their own."""
        if not self.caps.at_stop:
            return reason, None
        text = state.partial_text + assistant.text
        background = self.cfg.background_tasks()
        own_cost = self.tally.spent([])[0]
        for capability in self.caps.at_stop:
            stop = StopView(text, self.messages, background, own_cost, reason is not None)
            answer = await capability.at_stop(stop)
            if isinstance(answer, str):
                reason = f"{reason}\n{answer}" if reason else answer
            elif answer is not None:
                return reason, answer
        return reason, None

    async def _prompt_hook(self, state: LoopState) -> RunResult | None:
        """UserPromptSubmit: a block ends the run before any model call; extra context goes
        beside the prompt."""
        last = self.messages[-1] if self.messages else None
        if last is None or last.role != "user" or not last.text:
            return None
        steps: list[Callable[[], Awaitable[HookResult]]] = []
        if expansion := self.cfg.expansion:  # a typed command: UserPromptExpansion first, then UserPromptSubmit
            steps.append(lambda: self.calls.expansion(expansion))
        steps.append(lambda: self.calls.prompt(last.text))
        for step in steps:
            hook = await step()
            if hook.decision == "block" or hook.stop:
                return self._hook_stopped(hook, state)
            if hook.additional_context:
                context = bounded_context(hook.additional_context)
                self.messages[-1] = Message("user", self.messages[-1].content + tuple(TextBlock(c) for c in context))
        self.emit(UserMessage(self.messages[-1], synthetic=False))
        return None

    def _hook_stopped(self, hook: HookResult, state: LoopState) -> RunResult:
        why = hook.stop_reason or hook.reason or "a hook stopped the run"
        return self._finish(Finish("error_during_execution", "hook_stopped", True, (f"Stopped by a hook: {why}",)), state)

    # ------------------------------------------------------------ conversation

    def _append_assistant(self, message: Message, state: LoopState) -> None:
        self.messages.append(message)
        r = self.tally.last_response
        self.emit(AssistantMessage(message, self.model, r.raw_stop_reason if r else None,
                                   r.usage if r else ModelUsage().usage, r.id if r else "", state.turns,
                                   self.tally.last_call_ms if r else 0))
        for notice in unreadable_calls(message):  # the history sends `{}`; what arrived is kept here
            self.emit(notice)

    def _append_user(self, message: Message) -> None:
        self.messages.append(message)
        self.emit(UserMessage(message))

    def _resend(self) -> None:
        """After an empty answer: text after the tool results goes (the transcript says so, for
        resume), then the same conversation is sent again."""
        last = self.messages[-1] if self.messages else None
        trimmed = last.results_only() if last is not None and last.role == "user" else None
        if trimmed is None:
            self.emit(Notice("warning", "empty response; sending the request again"))
            return
        self.messages[-1] = trimmed
        self.emit(Notice("warning", "empty response; sending the tool results again without the text after them",
                         subtype=RESENT_RESULTS_ONLY))

    # ------------------------------------------------------------ results

    def _elsewhere(self) -> list[tuple[str, str, ModelUsage]]:
        """Model calls made outside this loop that the run pays for: the goal's evaluator, prompt
        hooks and subagents."""
        extra = self.caps.spent() if self.caps.spend else []
        extra += [("hooks", model, mu) for model, mu in getattr(self.hooks, "prompt_usage", {}).items()]
        return extra + (self.cfg.classifier.elsewhere() if self.cfg.classifier is not None else [])

    def _spent(self, state: LoopState) -> Spent:
        cost, tokens = self.tally.spent(self._elsewhere())
        return Spent(state.turns, cost, tokens, self.clock.monotonic() - self._started)

    def _warn(self, text: str, subtype: str = "informational") -> None:
        self.tally.warnings.append(text)
        self.emit(Notice("warning", text, subtype))

    def _finish(self, fin: Finish, state: LoopState) -> RunResult:
        if fin.append is not None:
            self._append_assistant(fin.append, state)
        if fin.answer is not None:
            self._append_user(fin.answer)
        if fin.warning:
            self._warn(fin.warning)
        text = fin.result if fin.result else last_text(self.messages)
        result = self._result(fin.subtype, fin.terminal_reason, fin.is_error, text, fin.errors, state.turns)
        return replace(result, api_error_status=fin.api_error_status) if fin.api_error_status else result

    def _aborted(self) -> RunResult:
        """The user interrupted: the calls cut short answered, then Claude Code's note that the
        user interrupted (recorded and sent on, so the next turn knows), which the result says too."""
        answer = self.dispatch.answer_unfinished(self.messages, INTERRUPTED, INTERRUPTED)
        said = USER_INTERRUPTED_TOOLS if answer else USER_INTERRUPTED
        self._append_user(Message("user", (*(answer.content if answer else ()), TextBlock(said))))
        turns = sum(1 for m in self.messages if m.role == "assistant")
        return self._result("error_during_execution", "aborted", True, last_text(self.messages), (said,), turns)

    def add_env(self, env: dict[str, str]) -> None:
        """More environment for the tools' processes from here on (what SessionStart hooks set)."""
        from ..core.environ import child_env

        for held in (self.cfg.child_env, self.dispatch.ctx.env) if env else ():
            if held is not None:
                held.update({**(held or child_env()), **env})  # {} stood for child_env(): keep its meaning

    def crashed(self, exc: Exception) -> RunResult:
        """The result of a run an unexpected exception ended (its traceback to the crash log); from
        here on a failure to record or show an event does not hide the result."""
        emit = self.emit

        def guarded(event: Event) -> None:  # a second failure while recording or showing is dropped
            try:
                emit(event)
            except Exception:  # noqa: BLE001, S110 - the run is already failing; its result must still return
                pass

        self.emit = guarded
        self._answer_unfinished(CRASH_RUNNING, CRASH_WAITING)
        turns = sum(1 for m in self.messages if m.role == "assistant")
        return self._result("error_during_execution", "internal_error", True, last_text(self.messages),
                            (crash_report(exc, self.cfg.crash_log),), turns)

    def _answer_unfinished(self, running: str, waiting: str) -> None:
        """Results for the calls of the last assistant message a cut left without any."""
        if answer := self.dispatch.answer_unfinished(self.messages, running, waiting):
            self._append_user(answer)

    def _result(self, subtype: Subtype, reason: TerminalReason, is_error: bool, text: str, errors: tuple[str, ...], turns: int) -> RunResult:
        result = self.tally.result(
            subtype=subtype, reason=reason, is_error=is_error, text=text, errors=errors, turns=turns,
            session_id=self.cfg.session_id, duration_ms=int((self.clock.monotonic() - self._started) * 1000),
            messages=self.messages, denials=self.dispatch.denials, extra=self._elsewhere(), reports=self.caps.reports())
        for capability in self.caps.shape:  # e.g. structured output: the answer, or why there is none
            result = capability.shape(result)
        return result


class LoopHooks:
    """The hook calls the loop itself makes: their payloads are built and their answers merged
    here; what follows from an answer stays in the state machine. Dispatch and the compactor build
    their payloads with `payload` too. A subagent's loop (`cfg.subagent`: agent_id, agent_type,
    agent_transcript_path, `context`) adds its id and type to every payload, fires SubagentStop
    where the main loop fires Stop, and instead of UserPromptSubmit gives its task the `context`
    SubagentStart's hooks added."""

    def __init__(self, cfg: LoopConfig) -> None:
        self.cfg, self.hooks, self.stop_hooks, self.subagent = cfg, cfg.hooks, cfg.stop_hooks, cfg.subagent
        self.who = {k: cfg.subagent[k] for k in ("agent_id", "agent_type")} if cfg.subagent else {}

    def payload(self, event: HookEvent) -> dict[str, Any]:
        """The fields every hook's input has (the permission mode as it is now)."""
        cfg = self.cfg
        return {"session_id": cfg.session_id, "transcript_path": cfg.transcript_path, "cwd": str(cfg.cwd),
                "permission_mode": cfg.permissions.mode, "hook_event_name": event} | self.who

    async def prompt(self, text: str) -> HookResult:
        if self.subagent is not None:  # its task is the launching agent's, not a person's prompt
            return HookResult(additional_context=tuple(self.subagent.get("context", ())))
        if not hooks_want(self.hooks, "UserPromptSubmit"):
            return NO_HOOK_RESULT
        return await self.hooks.run("UserPromptSubmit", self.payload("UserPromptSubmit") | {"prompt": text})

    async def expansion(self, fields: Mapping[str, str]) -> HookResult:
        """UserPromptExpansion: a typed `/command` expanded (its name is what matchers see)."""
        return await self.hooks.run("UserPromptExpansion", self.payload("UserPromptExpansion") | dict(fields),
                                    match=fields.get("command_name"))

    async def batch(self, calls: Sequence[Any], results: Sequence[ToolResultBlock]) -> HookResult:
        if not hooks_want(self.hooks, "PostToolBatch"):
            return NO_HOOK_RESULT
        tool_calls = [{"tool_name": c.name, "tool_input": c.input, "tool_use_id": c.id,
                       "tool_response": r.to_api()["content"]} for c, r in zip(calls, results)]
        return await self.hooks.run("PostToolBatch", self.payload("PostToolBatch") | {"tool_calls": tool_calls})

    async def stop(self, last_text: str, active: bool) -> HookResult:
        """Registered Stop hooks and Python stop hooks, merged: a block's reason (or extra
        context) becomes `reason`, the next user message."""
        event: HookEvent = "Stop" if self.subagent is None else "SubagentStop"
        hooked_too = hooks_want(self.hooks, event)
        if not hooked_too and not self.stop_hooks:
            return NO_HOOK_RESULT
        payload = self.payload(event) | {"stop_hook_active": active, "last_assistant_message": last_text,
                                         "background_tasks": self.cfg.background_tasks()}
        if self.subagent is not None:
            payload |= self.who | {"agent_transcript_path": self.subagent.get("agent_transcript_path", "")}
        hooked = await self.hooks.run(event, payload, match=self.who.get("agent_type")) if hooked_too else NO_HOOK_RESULT
        reasons = [r for r in [await hook(payload) for hook in self.stop_hooks] if r]
        if hooked.decision == "block":
            reasons.insert(0, hooked.reason or "A Stop hook asked to continue.")
        reasons += hooked.additional_context
        return replace(hooked, reason="\n".join(reasons) if reasons else None)

    async def failure(self, kind: str, errors: Sequence[str], last_text: str) -> None:
        if not hooks_want(self.hooks, "StopFailure"):
            return
        await self.hooks.run("StopFailure", self.payload("StopFailure") | {
            "error": kind, "error_details": "; ".join(errors), "last_assistant_message": last_text}, match=kind)


def last_text(messages: Sequence[Message]) -> str:
    """The text of the model's last answer that has any ("" when none has)."""
    for message in reversed(messages):
        if message.role == "assistant" and message.text.strip():
            return message.text
    return ""


def _one_line(text: str, limit: int = 200) -> str:
    line = " ".join(text.split())
    return line if len(line) <= limit else line[:limit - 1] + "…"
