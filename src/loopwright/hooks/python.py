"""Python hooks for library users: each event's input as a typed, read-only object (also readable
as a mapping, like the JSON a command hook gets) and `HookOutput`, the typed answer."""

from __future__ import annotations

import inspect
from dataclasses import field, fields
from typing import Any, Iterator, Literal, Mapping

from ..core.fastclass import dataclass
from .output import PLAIN_CONTEXT, Answer, cap, from_json, no_answer


@dataclass(frozen=True, kw_only=True)
class HookInput(Mapping[str, Any]):
    """The fields every event has. `raw` is the whole input, as command hooks receive it;
    `hook["tool_name"]` reads it like a dict."""

    hook_event_name: str
    session_id: str = ""
    transcript_path: str = ""
    cwd: str = ""
    permission_mode: str = ""
    raw: Mapping[str, Any] = field(default_factory=dict, repr=False, compare=False)

    def __getitem__(self, key: str) -> Any:
        return self.raw[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self.raw)

    def __len__(self) -> int:
        return len(self.raw)


@dataclass(frozen=True, kw_only=True)
class PreToolUseInput(HookInput):
    tool_name: str = ""
    tool_input: dict[str, Any] = field(default_factory=dict)
    tool_use_id: str = ""


@dataclass(frozen=True, kw_only=True)
class PostToolUseInput(PreToolUseInput):
    tool_response: Any = None


@dataclass(frozen=True, kw_only=True)
class PostToolUseFailureInput(PreToolUseInput):
    error: str = ""
    is_interrupt: bool = False


@dataclass(frozen=True, kw_only=True)
class PostToolBatchInput(HookInput):
    tool_calls: list[dict[str, Any]] = field(default_factory=list)


@dataclass(frozen=True, kw_only=True)
class UserPromptSubmitInput(HookInput):
    prompt: str = ""


@dataclass(frozen=True, kw_only=True)
class StopInput(HookInput):
    stop_hook_active: bool = False
    last_assistant_message: str = ""
    background_tasks: list[dict[str, Any]] = field(default_factory=list)


@dataclass(frozen=True, kw_only=True)
class SubagentStartInput(HookInput):
    agent_id: str = ""
    agent_type: str = ""


@dataclass(frozen=True, kw_only=True)
class SubagentStopInput(StopInput):
    agent_id: str = ""
    agent_type: str = ""
    agent_transcript_path: str = ""


@dataclass(frozen=True, kw_only=True)
class StopFailureInput(HookInput):
    error: str = ""
    error_details: str = ""
    last_assistant_message: str = ""


@dataclass(frozen=True, kw_only=True)
class PreCompactInput(HookInput):
    trigger: str = ""
    custom_instructions: str = ""


@dataclass(frozen=True, kw_only=True)
class PostCompactInput(HookInput):
    trigger: str = ""
    compact_summary: str = ""


@dataclass(frozen=True, kw_only=True)
class SessionStartInput(HookInput):
    source: str = ""
    model: str = ""


@dataclass(frozen=True, kw_only=True)
class SessionEndInput(HookInput):
    reason: str = ""


@dataclass(frozen=True, kw_only=True)
class UserPromptExpansionInput(HookInput):
    expansion_type: str = "slash_command"
    command_name: str = ""
    command_args: str = ""
    command_source: str = ""
    prompt: str = ""


@dataclass(frozen=True, kw_only=True)
class NotificationInput(HookInput):
    message: str = ""
    title: str = ""
    notification_type: str = ""


INPUT_TYPES: dict[str, type[HookInput]] = {
    "PreToolUse": PreToolUseInput, "PostToolUse": PostToolUseInput, "PostToolUseFailure": PostToolUseFailureInput,
    "PostToolBatch": PostToolBatchInput, "UserPromptSubmit": UserPromptSubmitInput, "Stop": StopInput,
    "SubagentStart": SubagentStartInput, "SubagentStop": SubagentStopInput, "StopFailure": StopFailureInput,
    "PreCompact": PreCompactInput, "PostCompact": PostCompactInput, "SessionStart": SessionStartInput,
    "SessionEnd": SessionEndInput, "Notification": NotificationInput, "UserPromptExpansion": UserPromptExpansionInput,
}


def typed_input(event: str, payload: Mapping[str, Any]) -> HookInput:
    cls = INPUT_TYPES.get(event, HookInput)
    known = {f.name for f in fields(cls)} - {"raw"}
    values = {k: v for k, v in payload.items() if k in known and v is not None}
    values.setdefault("hook_event_name", event)
    return cls(**values, raw=dict(payload))


@dataclass(frozen=True, slots=True)
class HookOutput:
    """A Python hook's answer. `decision`: "allow" | "deny" | "ask" on PreToolUse, "block" on
    events that can block; `stop=True` is `continue: false` and ends the run."""

    decision: Literal["allow", "deny", "ask", "block"] | None = None
    reason: str | None = None
    updated_input: dict[str, Any] | None = None
    additional_context: str | None = None
    stop: bool = False
    stop_reason: str | None = None
    system_message: str | None = None

    @classmethod
    def allow(cls, reason: str | None = None, *, updated_input: dict[str, Any] | None = None) -> "HookOutput":
        return cls("allow", reason, updated_input)

    @classmethod
    def deny(cls, reason: str) -> "HookOutput":
        return cls("deny", reason)

    @classmethod
    def ask(cls, reason: str | None = None) -> "HookOutput":
        return cls("ask", reason)

    @classmethod
    def block(cls, reason: str) -> "HookOutput":
        return cls("block", reason)

    @classmethod
    def context(cls, text: str) -> "HookOutput":
        return cls(additional_context=text)

    @classmethod
    def halt(cls, stop_reason: str) -> "HookOutput":
        return cls(stop=True, stop_reason=stop_reason)


async def call(fn: Any, event: str, payload: Mapping[str, Any]) -> tuple[Answer, Any]:
    """Run a Python hook (async or plain) and read what it returned: None, a `HookOutput`, a
    dict shaped like a command hook's JSON, or text (context where plain stdout would be)."""
    returned = fn(typed_input(event, payload))
    if inspect.isawaitable(returned):
        returned = await returned
    return to_answer(event, returned), returned


def to_answer(event: str, returned: Any) -> Answer:
    match returned:
        case None:
            return Answer()
        case HookOutput():
            return _from_output(event, returned)
        case dict():
            return from_json(event, returned)
        case str():
            return Answer(context=(cap(returned),)) if returned.strip() and event in PLAIN_CONTEXT else Answer()
        case _:
            return no_answer(f"a Python hook returned {type(returned).__name__}; expected HookOutput, dict or None")


def _from_output(event: str, out: HookOutput) -> Answer:
    """Through the JSON a command hook would print, so both kinds obey the same per-event rules."""
    data: dict[str, Any] = {}
    specific: dict[str, Any] = {}
    if out.stop:
        data.update({"continue": False, "stopReason": out.stop_reason})
    if out.system_message:
        data["systemMessage"] = out.system_message
    if event == "PreToolUse":
        decision = "deny" if out.decision == "block" else out.decision
        specific.update({"permissionDecision": decision, "permissionDecisionReason": out.reason,
                         "updatedInput": out.updated_input})
    elif out.decision in ("block", "deny"):
        data.update({"decision": "block", "reason": out.reason})
    if out.additional_context:
        specific["additionalContext"] = out.additional_context
    specific = {k: v for k, v in specific.items() if v is not None}
    if specific:
        data["hookSpecificOutput"] = specific
    return from_json(event, data)
