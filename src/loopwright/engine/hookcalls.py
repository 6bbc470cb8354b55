"""The hook calls the loop itself makes (UserPromptSubmit, PostToolBatch, Stop, StopFailure):
their payloads are built and their answers merged here; what follows from an answer stays in
the loop's state machine. Dispatch and the compactor build their payloads with `payload` too.
A subagent's loop (`subagent`: agent_id, agent_type, agent_transcript_path, `context`) adds its
id and type to every payload, fires SubagentStop where the main loop fires Stop, and instead of
UserPromptSubmit gives its task the `context` SubagentStart's hooks added."""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Awaitable, Callable, Mapping, Sequence

from ..core.hookevents import HookEvent
from ..core.ports import NO_HOOK_RESULT, HookResult, HookRunner, hooks_want
from ..core.types import ToolResultBlock

StopHook = Callable[[dict[str, Any]], Awaitable[str | None]]  # a reason to go on, or None


class LoopHooks:
    def __init__(self, hooks: HookRunner, common: Callable[[], dict[str, Any]], stop_hooks: Sequence[StopHook],
                 background: Callable[[], list[dict[str, Any]]], subagent: Mapping[str, Any] | None = None) -> None:
        self.hooks, self.common, self.stop_hooks, self.background = hooks, common, stop_hooks, background
        self.subagent = subagent
        self.who = {k: subagent[k] for k in ("agent_id", "agent_type")} if subagent else {}

    def payload(self, event: HookEvent) -> dict[str, Any]:
        return self.common() | {"hook_event_name": event} | self.who

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
                                         "background_tasks": self.background()}
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
