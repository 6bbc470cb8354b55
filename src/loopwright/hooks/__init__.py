"""The hook engine: Claude Code's hook protocol (command, prompt and http handlers, matchers,
exit codes, JSON answers) plus typed Python hooks. `HookRunner` is what `Agent(hooks=…)` takes."""

from __future__ import annotations

from ..core.hookevents import (
    HookEvent, HookInput, NotificationInput, PermissionDeniedInput, PostCompactInput, PostToolBatchInput,
    PostToolUseFailureInput, PostToolUseInput, PreCompactInput, PreToolUseInput, SessionEndInput, SessionStartInput,
    StopFailureInput, StopInput, SubagentStartInput, SubagentStopInput, UserPromptExpansionInput,
    UserPromptSubmitInput,
)
from .http import PostJson
from .python import HookOutput
from .runner import HookRunner, NotifyingApprover, base_payload
from .spec import EVENTS, Matcher

__all__ = [
    "EVENTS", "HookEvent", "HookInput", "HookOutput", "HookRunner", "Matcher", "NotificationInput", "NotifyingApprover",
    "PermissionDeniedInput", "PostCompactInput", "PostJson", "PostToolBatchInput", "PostToolUseFailureInput", "PostToolUseInput",
    "PreCompactInput", "PreToolUseInput", "SessionEndInput", "SessionStartInput", "StopFailureInput", "StopInput",
    "SubagentStartInput", "SubagentStopInput", "UserPromptExpansionInput", "UserPromptSubmitInput", "base_payload",
]
