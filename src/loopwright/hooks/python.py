"""Python hooks for library users: each event's input as a typed, read-only object (also readable
as a mapping, like the JSON a command hook gets) and `HookOutput`, the typed answer."""

from __future__ import annotations

import inspect
from dataclasses import fields
from typing import Any, Literal, Mapping

from ..core.fastclass import dataclass
from ..core.hookevents import HookInput, facts_of
from .output import PLAIN_CONTEXT, Answer, cap, from_json, no_answer


def typed_input(event: str, payload: Mapping[str, Any]) -> HookInput:
    facts = facts_of(event)
    cls = facts.input if facts is not None else HookInput
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
