"""loopwright: loop engineering for AI agents. An agent loop that never stops silently, never
runs away, and proves it is done.

The public API is what this module exports (`__all__`, pinned by tests/test_public_api.py);
everything else is private and may change. Names are imported on first use, so `import
loopwright` and `loopwright --version` stay instant. The per-event hook inputs are in
`loopwright.hooks`; the simulator and its script types in `loopwright.testing`.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

# Public name -> the module that defines it, imported on first access.
_LAZY: dict[str, str] = {
    # running an agent
    "Agent": "loopwright.agent.agent",
    "Session": "loopwright.agent.session",
    "Run": "loopwright.agent.run",
    "Limits": "loopwright.policy.stop",
    "Budget": "loopwright.policy.budget",
    "RunResult": "loopwright.core.events",
    "Subtype": "loopwright.core.events",
    "TerminalReason": "loopwright.core.events",
    # a run as data (versioned JSON), as `loopwright -p`, schedules and queued jobs describe one
    "RunSpec": "loopwright.compose.runspec",
    "build": "loopwright.compose.build",
    "Built": "loopwright.compose.build",
    "run_spec": "loopwright.compose.run",
    # tools
    "tool": "loopwright.tools.base",
    "Tool": "loopwright.core.ports",
    "ToolContext": "loopwright.core.ports",
    "ToolOutput": "loopwright.core.ports",
    # the events a run yields
    "Event": "loopwright.core.events",
    "SystemInit": "loopwright.core.events",
    "AssistantMessage": "loopwright.core.events",
    "UserMessage": "loopwright.core.events",
    "PartialEvent": "loopwright.core.events",
    "ToolStarted": "loopwright.core.events",
    "ToolProgress": "loopwright.core.events",
    "ToolFinished": "loopwright.core.events",
    "ApiRetry": "loopwright.core.events",
    "Notice": "loopwright.core.events",
    "CompactBoundary": "loopwright.core.events",
    "GoalStatus": "loopwright.core.events",
    "HookStarted": "loopwright.core.events",
    "HookResponse": "loopwright.core.events",
    "LoopStatus": "loopwright.core.events",
    "ResultEvent": "loopwright.core.events",
    "ModelUsage": "loopwright.core.events",
    "PermissionDenial": "loopwright.core.events",
    # the error tree
    "LoopwrightError": "loopwright.core.errors",
    "UsageError": "loopwright.core.errors",
    "SessionError": "loopwright.core.errors",
    "ToolInputError": "loopwright.core.errors",
    "ModelError": "loopwright.core.errors",
    "ErrorKind": "loopwright.core.errors",
    # hooks
    "HookEvent": "loopwright.core.hookevents",
    "HookInput": "loopwright.core.hookevents",
    "HookOutput": "loopwright.hooks.python",
    "HookResult": "loopwright.core.ports",
    "HookRunner": "loopwright.hooks.runner",
    # permissions
    "PermissionMode": "loopwright.permissions.rules",
    "PermissionRules": "loopwright.permissions.rules",
    "Approver": "loopwright.core.ports",
    "Approval": "loopwright.core.ports",
    # features around the loop (docs/capabilities.md)
    "Capability": "loopwright.engine.capability",
    "LiveTools": "loopwright.engine.capability",
    "RequireTests": "loopwright.capabilities.testgate",
    # model clients: one may be shared by many agents (an agent closes only a client it made)
    "AnthropicModel": "loopwright.providers.anthropic",
    "OpenAIChatModel": "loopwright.providers.openai",
    # ports a library user may implement
    "Model": "loopwright.core.ports",
    "SessionStore": "loopwright.core.storeports",
    "SessionLog": "loopwright.core.storeports",
}

__all__ = [
    "Agent", "AnthropicModel", "ApiRetry", "Approval", "Approver", "AssistantMessage", "Budget", "Built", "Capability",
    "CompactBoundary", "ErrorKind",
    "Event", "GoalStatus", "HookEvent", "HookInput", "HookOutput", "HookResponse", "HookResult", "HookRunner",
    "HookStarted", "Limits", "LiveTools", "LoopStatus", "LoopwrightError", "Model", "ModelError", "ModelUsage",
    "Notice",
    "OpenAIChatModel", "PartialEvent", "PermissionDenial", "PermissionMode", "PermissionRules", "RequireTests",
    "ResultEvent", "Run",
    "RunResult", "RunSpec", "Session", "SessionError", "SessionLog", "SessionStore", "Subtype", "SystemInit", "TerminalReason",
    "Tool", "ToolContext",
    "ToolFinished", "ToolInputError", "ToolOutput", "ToolProgress", "ToolStarted", "UsageError", "UserMessage",
    "__version__", "build", "run_spec", "tool",
]

if TYPE_CHECKING:
    from .agent.agent import Agent
    from .agent.run import Run
    from .agent.session import Session
    from .capabilities.testgate import RequireTests
    from .compose.build import Built, build
    from .compose.run import run_spec
    from .compose.runspec import RunSpec
    from .providers.anthropic import AnthropicModel
    from .providers.openai import OpenAIChatModel
    from .core.errors import ErrorKind, LoopwrightError, ModelError, SessionError, ToolInputError, UsageError
    from .core.events import (
        ApiRetry, AssistantMessage, CompactBoundary, Event, GoalStatus, HookResponse, HookStarted, LoopStatus,
        ModelUsage, Notice, PartialEvent, PermissionDenial, ResultEvent, RunResult, Subtype, SystemInit,
        TerminalReason, ToolFinished, ToolProgress, ToolStarted, UserMessage,
    )
    from .core.hookevents import HookEvent, HookInput
    from .core.ports import Approval, Approver, HookResult, Model, Tool, ToolContext, ToolOutput
    from .core.storeports import SessionLog, SessionStore
    from .engine.capability import Capability, LiveTools
    from .hooks.python import HookOutput
    from .hooks.runner import HookRunner
    from .policy.budget import Budget
    from .permissions.rules import PermissionMode, PermissionRules
    from .policy.stop import Limits
    from .tools.base import tool


def _default_outfit() -> Any:
    """The outfit (`core.ports.Outfit`) of an agent given none: the composition root's, imported
    on first use so that `import loopwright` stays instant (`core.ports.default_outfit` asks here)."""
    from .compose.outfit import STANDARD

    return STANDARD


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'loopwright' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # cache: later lookups skip __getattr__
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
