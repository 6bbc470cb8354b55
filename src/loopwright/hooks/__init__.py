"""The hook engine: Claude Code's hook protocol (command, prompt and http handlers, matchers,
exit codes, JSON answers) plus typed Python hooks. `HookRunner` is what `Agent(hooks=…)` takes."""

from __future__ import annotations

from .http import PostJson
from .python import (
    HookInput, HookOutput, NotificationInput, PostCompactInput, PostToolBatchInput, PostToolUseFailureInput,
    PostToolUseInput, PreCompactInput, PreToolUseInput, SessionEndInput, SessionStartInput, StopFailureInput,
    StopInput, SubagentStartInput, SubagentStopInput, UserPromptSubmitInput,
)
from .runner import HookRunner, NotifyingApprover, base_payload
from .spec import EVENTS, Matcher

__all__ = [
    "EVENTS", "HookInput", "HookOutput", "HookRunner", "Matcher", "NotificationInput", "NotifyingApprover",
    "PostCompactInput", "PostJson", "PostToolBatchInput", "PostToolUseFailureInput", "PostToolUseInput",
    "PreCompactInput", "PreToolUseInput", "SessionEndInput", "SessionStartInput", "StopFailureInput", "StopInput",
    "SubagentStartInput", "SubagentStopInput", "UserPromptSubmitInput", "base_payload",
]
