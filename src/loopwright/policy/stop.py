"""What happens after every model call: a pure function of the outcome (a response or a
`ModelError`), the loop's counters and the limits. LOOP.md is the contract; each branch below
names the row it implements. `loop.py` carries out the returned `Next`."""

from __future__ import annotations

import json
import sys
from dataclasses import replace
from typing import Any, Mapping, Sequence, Union

from ..core.errors import ModelError, UsageError
from ..core.events import Subtype, TerminalReason
from ..core.fastclass import dataclass
from ..core.types import Message, Response, TextBlock, ToolResultBlock, ToolUseBlock
from .retry import backoff_delay, quick_delay, retry_category
from .unrun import CUT_TOOL_NOTE, calls_as_notes, malformed_answers, sanitize

CONTINUE_AFTER_CUT = (
    "Your last response was cut off by the output token limit. Pick up exactly where the text "
    "stopped, without repeating or summarising what you already wrote. If a lot remains, "
    "finish it in smaller pieces."
)
TOOL_CALL_CUT = (
    "Your call to the `{name}` tool was cut off by the output token limit before its input was "
    "complete, so it did not run. Split the work into smaller steps (for example, write a large "
    "file in several parts, or edit it piece by piece) and call the tool again."
)
EMPTY_NUDGE = "Please continue with the task."


@dataclass(frozen=True, slots=True)
class Limits:
    max_turns: int | None = None
    max_retries: int = 10
    overloaded_before_fallback: int = 3
    max_continuations: int = 3
    max_pause_turns: int = 5
    max_empty_retries: int = 2
    stop_block_cap: int = 8
    compactions_per_turn: int = 1
    fallback_models: tuple[str, ...] = ()
    max_malformed_responses: int = 3  # in a row, every call of each one malformed
    max_unreachable_retries: int = 2  # refused / no such host before the API ever answered


# Environment variables (ours, then Claude Code's name) that set `Limits.stop_block_cap`.
CAP_VARIABLES = ("LOOPWRIGHT_STOP_HOOK_BLOCK_CAP", "CLAUDE_CODE_STOP_HOOK_BLOCK_CAP")


def stop_block_cap(env: Mapping[str, str]) -> int | None:
    """`LOOPWRIGHT_STOP_HOOK_BLOCK_CAP` (or Claude Code's name) in `env`: consecutive Stop-hook
    blocks honoured before the run ends anyway; 0 turns the cap off. None: not set."""
    for name in CAP_VARIABLES:
        raw = (env.get(name) or "").strip()
        if not raw:
            continue
        if not raw.isdigit():
            raise UsageError(f"{name}: expected a whole number (0 turns the cap off), got {raw!r}")
        return int(raw) or sys.maxsize
    return None


def limits_from(env: Mapping[str, str], **overrides: Any) -> Limits:
    """`Limits` with `overrides` and `env`'s block cap (an override of it wins)."""
    cap = stop_block_cap(env)
    if cap is not None:
        overrides = {"stop_block_cap": cap, **overrides}
    return Limits(**overrides)


@dataclass(frozen=True, slots=True)
class Caps:
    """Output-token facts of the model the call went to."""

    default_output: int
    max_output: int


@dataclass(frozen=True, slots=True)
class LoopState:
    turns: int = 0
    max_tokens: int = 0
    continuations: int = 0
    partial_text: str = ""
    pause_turns: int = 0
    empty_retries: int = 0
    stop_blocks: int = 0
    attempt: int = 0
    overloaded_streak: int = 0
    model_index: int = 0
    refusal_fallback_used: bool = False
    compactions_this_turn: int = 0
    malformed_streak: int = 0


# ---------------------------------------------------------------- the Next union


@dataclass(frozen=True, slots=True)
class RunTools:
    """Append `assistant`, run `calls` (all complete), append their results; `note` is text
    added after the results in the same user message. `answered` holds the results of calls
    that must not run (malformed input); all results go in tool_use order."""

    assistant: Message
    calls: tuple[ToolUseBlock, ...]
    note: str | None = None
    answered: tuple[ToolResultBlock, ...] = ()

    def in_order(self, ran: Sequence[ToolResultBlock]) -> list[ToolResultBlock]:
        """The results of the calls that ran and of those answered without running, in tool_use order."""
        by_id = {r.tool_use_id: r for r in (*self.answered, *ran)}
        return [by_id[b.id] for b in self.assistant.tool_uses if b.id in by_id]


@dataclass(frozen=True, slots=True)
class Retry:
    """Send the same request again after `delay` seconds; nothing of the failed call ran."""

    delay: float
    category: str
    error: ModelError
    limit: int = 10  # how many retries this kind of error gets


@dataclass(frozen=True, slots=True)
class Escalate:
    """Discard the response; re-issue the same request with `max_tokens` raised."""

    max_tokens: int


@dataclass(frozen=True, slots=True)
class Continue:
    """Append `append` to the conversation and call the model again."""

    append: tuple[Message, ...]
    reason: str


@dataclass(frozen=True, slots=True)
class Resend:
    """Send the conversation again with nothing added (empty response); drop any text that
    follows tool results in the last user message first."""

    strip_text_after_results: bool = True


@dataclass(frozen=True, slots=True)
class Compact:
    """Summarise older context, then call again; `partial` is kept and continued after."""

    reason: str
    partial: Message | None = None
    status: int | None = None  # the HTTP status of the error that asked for it (prompt too long)


@dataclass(frozen=True, slots=True)
class SwitchModel:
    """Re-send the same conversation on another model for the rest of this prompt run."""

    model: str
    reason: str


@dataclass(frozen=True, slots=True)
class CandidateStop:
    """The model stopped without calling a tool: Stop hooks decide whether the run ends."""

    assistant: Message


@dataclass(frozen=True, slots=True)
class Finish:
    subtype: Subtype
    terminal_reason: TerminalReason
    is_error: bool
    errors: tuple[str, ...] = ()
    result: str | None = None  # None: the last assistant text
    warning: str | None = None
    append: Message | None = None  # the final assistant message, if it joins the conversation
    answer: Message | None = None  # the user message answering `append`'s tool calls
    api_error_status: int | None = None  # the HTTP status of the API error that ended the run


Next = Union[RunTools, Retry, Escalate, Continue, Resend, Compact, SwitchModel, CandidateStop, Finish]


# ---------------------------------------------------------------- decisions


def decide(
    outcome: Response | ModelError,
    state: LoopState,
    limits: Limits,
    caps: Caps,
    *,
    jitter: float = 0.0,
) -> tuple[Next, LoopState]:
    if isinstance(outcome, ModelError):
        return _on_error(outcome, state, limits, jitter)
    if state.attempt or state.overloaded_streak:  # (a replace only when something changes: every turn)
        state = replace(state, attempt=0, overloaded_streak=0)
    return _on_response(outcome, state, limits, caps)


def _on_error(error: ModelError, state: LoopState, limits: Limits, jitter: float) -> tuple[Next, LoopState]:
    if error.kind == "prompt_too_long":
        if state.compactions_this_turn < limits.compactions_per_turn:
            return Compact("prompt_too_long", status=error.status), replace(
                state, compactions_this_turn=state.compactions_this_turn + 1)
        return _fail("prompt_too_long", error), state
    if error.kind in ("authentication", "permission"):
        return _fail("authentication_failed", error), state
    if error.kind == "unreachable":  # row: refused / no such host before the URL ever answered
        if state.attempt >= limits.max_unreachable_retries:
            tries = state.attempt + 1
            return Finish("error_during_execution", "api_unreachable", True,
                          (f"After {tries} attempt{'s' if tries > 1 else ''}: {error.message}",)), state
        return (Retry(quick_delay(state.attempt), "network", error, limits.max_unreachable_retries),
                replace(state, attempt=state.attempt + 1))
    category = retry_category(error)
    if category is None:
        return _fail("api_error", error), state
    if error.kind == "overloaded":
        streak = state.overloaded_streak + 1
        if streak >= limits.overloaded_before_fallback and state.model_index < len(limits.fallback_models):
            model = limits.fallback_models[state.model_index]
            switched = replace(state, model_index=state.model_index + 1, overloaded_streak=0, attempt=0)
            return SwitchModel(model, f"{streak} consecutive overloaded errors"), switched
        state = replace(state, overloaded_streak=streak)
    if state.attempt >= limits.max_retries:
        return _fail("api_error", error, retries=state.attempt), state
    delay = backoff_delay(state.attempt, jitter, error.retry_after)
    return Retry(delay, category, error, limits.max_retries), replace(state, attempt=state.attempt + 1)


def _fail(reason: TerminalReason, error: ModelError, retries: int = 0) -> Finish:
    suffix = f" (after {retries} retries)" if retries else ""
    return Finish("error_during_execution", reason, True, (error.describe() + suffix,), api_error_status=error.status)


def _on_response(r: Response, state: LoopState, limits: Limits, caps: Caps) -> tuple[Next, LoopState]:
    message = r.message
    uses = message.tool_uses
    if state.malformed_streak and (not uses or any(b.complete for b in uses)):
        state = replace(state, malformed_streak=0)  # the streak counts responses of malformed calls only
    if r.stop_reason == "refusal":  # row: refusal — its tool calls never run
        return _on_refusal(state, limits)
    if r.stop_reason in ("max_tokens", "model_context_window_exceeded"):
        return _on_cut(r, state, limits, caps)
    if r.stop_reason == "pause_turn" and not uses:  # row: pause_turn — resend as it is
        if state.pause_turns >= limits.max_pause_turns:
            return Finish("error_during_execution", "pause_turn_limit", True,
                          (f"The model paused its turn {state.pause_turns} times in a row",),
                          append=message), _counted(state)
        # an empty pause has nothing to send back: the same request goes again
        resend = (message,) if message.content else ()
        return Continue(resend, "pause_turn"), _counted(replace(state, pause_turns=state.pause_turns + 1))
    if state.pause_turns:
        state = replace(state, pause_turns=0)
    calls = tuple(b for b in uses if b.complete)
    malformed = tuple(b for b in uses if not b.complete) if len(calls) < len(uses) else ()
    if malformed:  # row: input that is not a JSON object
        return _on_malformed(message, calls, malformed, state, limits)
    if calls:  # dispatch by content: complete tool_use blocks run, whatever the label says
        return RunTools(message, calls), _counted(state)
    if _is_empty(message):  # row: empty end_turn
        return _on_empty(state, limits)
    return CandidateStop(message), _counted(replace(state, empty_retries=0))


def _on_malformed(message: Message, calls: tuple[ToolUseBlock, ...], malformed: tuple[ToolUseBlock, ...],
                  state: LoopState, limits: Limits) -> tuple[Next, LoopState]:
    """Never run a call whose input is not a JSON object, never end on one: answer it with an
    error the model can act on. Only a run of responses with nothing else in them ends the run."""
    answers = malformed_answers(malformed)
    if calls:
        return RunTools(message, calls, answered=answers), _counted(state)
    streak = state.malformed_streak + 1
    if streak >= limits.max_malformed_responses:
        last = malformed[-1]
        # escaped as JSON: this line reaches terminals, and the model chose every character of it
        error = (f"The model sent only tool calls whose input is not a JSON object, {streak} responses in a row; "
                 f"the last, to {json.dumps(last.name)}: {last.problem}; it sent: "
                 f"{json.dumps(_excerpt(last.raw_input or '', 500))}")
        return Finish("error_during_execution", "malformed_tool_input", True, (error,), append=message,
                      answer=Message("user", answers)), _counted(state)
    return RunTools(message, (), answered=answers), _counted(replace(state, malformed_streak=streak))


def _excerpt(text: str, limit: int) -> str:
    return text if len(text) <= limit else f"{text[:limit]}… ({len(text) - limit} more characters)"


def stop_reason_warning(r: Response, times_seen: int) -> str | None:
    """The warning for a stop (or finish) reason loopwright does not know, the first time a run
    sees it (`times_seen` counts this response); the response is dispatched by its content."""
    raw = r.raw_stop_reason
    if r.stop_reason is not None or raw is None or times_seen != 1:
        return None
    return (f"the model API ended a response with stop reason {str(raw)[:100]!r}, which loopwright does not "
            "know; it went on by the response's content (tool calls run, text is a candidate stop)")


def _counted(state: LoopState) -> LoopState:
    return replace(state, turns=state.turns + 1, compactions_this_turn=0)


def _on_refusal(state: LoopState, limits: Limits) -> tuple[Next, LoopState]:
    if not state.refusal_fallback_used and state.model_index < len(limits.fallback_models):
        model = limits.fallback_models[state.model_index]
        return SwitchModel(model, "refusal"), replace(state, refusal_fallback_used=True, model_index=state.model_index + 1)
    return Finish("error_during_execution", "refusal", True, ("The model refused to continue (stop_reason: refusal)",)), _counted(state)


def _on_cut(r: Response, state: LoopState, limits: Limits, caps: Caps) -> tuple[Next, LoopState]:
    message = r.message
    last = message.content[-1] if message.content else None
    truncated = isinstance(last, ToolUseBlock) and not last.complete
    if truncated:  # the cut call becomes a note at once; other unusable calls are malformed
        assert isinstance(last, ToolUseBlock)
        message = Message(message.role, (*message.content[:-1], TextBlock(CUT_TOOL_NOTE.format(name=last.name))))
    complete_calls = tuple(b for b in message.tool_uses if b.complete)
    answers = malformed_answers(b for b in message.tool_uses if not b.complete)
    if r.stop_reason == "model_context_window_exceeded":  # row: context window full
        if state.compactions_this_turn < limits.compactions_per_turn:
            partial = calls_as_notes(message) if message.content else None
            return Compact("context_window", partial), replace(state, compactions_this_turn=state.compactions_this_turn + 1)
        return Finish("error_during_execution", "prompt_too_long", True,
                      ("The context window is full and compaction did not free enough room",)), _counted(state)
    if complete_calls and not truncated:  # row: complete tool calls before the cut run
        return RunTools(message, complete_calls, answered=answers), _counted(state)
    if state.max_tokens < caps.max_output:  # escalation, once per turn, nothing appended
        return Escalate(caps.max_output), replace(state, max_tokens=caps.max_output)
    if state.continuations >= limits.max_continuations:
        text = state.partial_text + message.text
        return Finish("error_during_execution", "max_output_tokens", True,
                      (f"The response hit the output token limit ({state.max_tokens}) "
                       f"{state.continuations + 1} times in a row",), result=text, append=sanitize(message)), _counted(state)
    if truncated:
        assert isinstance(last, ToolUseBlock)
        nudge = Message.user(TOOL_CALL_CUT.format(name=last.name))
        if complete_calls:
            return RunTools(message, complete_calls, note=nudge.text, answered=answers), _counted(
                replace(state, continuations=state.continuations + 1))
        appended: tuple[Message, ...] = (sanitize(message), nudge)
    else:
        appended = (sanitize(message), Message.user(CONTINUE_AFTER_CUT)) if message.content else (Message.user(CONTINUE_AFTER_CUT),)
    state = replace(state, continuations=state.continuations + 1, partial_text=state.partial_text + message.text)
    return Continue(appended, "max_tokens"), _counted(state)


def _on_empty(state: LoopState, limits: Limits) -> tuple[Next, LoopState]:
    if state.empty_retries >= limits.max_empty_retries:
        return Finish("error_during_execution", "empty_response", True,
                      (f"The model returned an empty response {state.empty_retries + 1} times in a row",)), _counted(state)
    state = replace(state, empty_retries=state.empty_retries + 1)
    if state.empty_retries == 1:
        return Resend(), state
    return Continue((Message.user(EMPTY_NUDGE),), "empty_response"), state


def _is_empty(message: Message) -> bool:
    """Nothing a person can read and no call to run: no text but whitespace (thinking, or only
    blocks of types loopwright does not know). A success on it would be a silent stop."""
    return not message.text.strip() and not message.tool_uses


def after_tools(state: LoopState, caps: Caps) -> LoopState:
    """A tool run ends the chain of stop-hook blocks and output cuts."""
    if (not state.stop_blocks and not state.continuations and not state.partial_text and not state.empty_retries
            and state.max_tokens == caps.default_output):
        return state  # nothing to reset (most turns)
    return replace(state, stop_blocks=0, continuations=0, partial_text="", empty_retries=0,
                   max_tokens=caps.default_output)


def on_stop_hooks(block_reason: str | None, assistant: Message, state: LoopState, limits: Limits) -> tuple[Next, LoopState]:
    """After a candidate stop (the assistant message is already in the conversation): a Stop
    hook's block continues with its reason as the next user message, at most `stop_block_cap`
    times in a row without a tool run."""
    text = state.partial_text + assistant.text
    if block_reason is None:
        return Finish("success", "completed", False, result=text), state
    if state.stop_blocks >= limits.stop_block_cap:
        warning = (f"Stop hooks blocked {state.stop_blocks} times in a row without any tool run; "
                   "ending the run with the last answer")
        return Finish("success", "stop_hook_cap", False, result=text, warning=warning), state
    next_state = replace(state, stop_blocks=state.stop_blocks + 1, partial_text="", continuations=0)
    return Continue((Message.user(block_reason),), "stop_hook"), next_state
