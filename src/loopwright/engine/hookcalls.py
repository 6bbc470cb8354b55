"""The hook calls the loop itself makes (UserPromptSubmit, PostToolBatch, Stop, StopFailure):
their payloads are built and their answers merged here; what follows from an answer stays in
the loop's state machine. Dispatch and the compactor build their payloads with `payload` too."""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Awaitable, Callable, Sequence

from ..core.ports import HookResult, HookRunner
from ..core.types import ToolResultBlock

StopHook = Callable[[dict[str, Any]], Awaitable[str | None]]  # a reason to go on, or None


class LoopHooks:
    def __init__(self, hooks: HookRunner, common: Callable[[], dict[str, Any]], stop_hooks: Sequence[StopHook],
                 background: Callable[[], list[dict[str, Any]]]) -> None:
        self.hooks, self.common, self.stop_hooks, self.background = hooks, common, stop_hooks, background

    def payload(self, event: str) -> dict[str, Any]:
        return self.common() | {"hook_event_name": event}

    async def prompt(self, text: str) -> HookResult:
        return await self.hooks.run("UserPromptSubmit", self.payload("UserPromptSubmit") | {"prompt": text})

    async def batch(self, calls: Sequence[Any], results: Sequence[ToolResultBlock]) -> HookResult:
        tool_calls = [{"tool_name": c.name, "tool_input": c.input, "tool_use_id": c.id,
                       "tool_response": r.to_api()["content"]} for c, r in zip(calls, results)]
        return await self.hooks.run("PostToolBatch", self.payload("PostToolBatch") | {"tool_calls": tool_calls})

    async def stop(self, last_text: str, active: bool) -> HookResult:
        """Registered Stop hooks and Python stop hooks, merged: a block's reason (or extra
        context) becomes `reason`, the next user message."""
        payload = self.payload("Stop") | {"stop_hook_active": active, "last_assistant_message": last_text,
                                          "background_tasks": self.background()}
        hooked = await self.hooks.run("Stop", payload)
        reasons = [r for r in [await hook(payload) for hook in self.stop_hooks] if r]
        if hooked.decision == "block":
            reasons.insert(0, hooked.reason or "A Stop hook asked to continue.")
        reasons += hooked.additional_context
        return replace(hooked, reason="\n".join(reasons) if reasons else None)

    async def failure(self, kind: str, errors: Sequence[str], last_text: str) -> None:
        await self.hooks.run("StopFailure", self.payload("StopFailure") | {
            "error": kind, "error_details": "; ".join(errors), "last_assistant_message": last_text}, match=kind)
