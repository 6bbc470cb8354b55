"""The hook events: the one definition every other table of them is derived from.

`HookEvent` names the events loopwright fires, spelt exactly as Claude Code spells them on the
wire; `EVENTS` says, per event, what a Python hook receives, which input field a matcher is
compared with, and what the event's answer can do. `ForeignHookEvent` names the events Claude
Code fires that loopwright does not (yet), so settings can warn instead of calling them typos.
To add an event: add its name to `HookEvent` and its row to `EVENTS` (and an input class if its
fields are new). A name in `EVENTS` that is not in `HookEvent` fails the type check; a name in
`HookEvent` without a row fails at import.
"""

from __future__ import annotations

from dataclasses import field
from typing import Any, Final, Iterator, Literal, Mapping, get_args

from .fastclass import dataclass

HookEvent = Literal[
    "SessionStart", "SessionEnd", "UserPromptSubmit", "UserPromptExpansion", "PreToolUse", "PermissionDenied",
    "PostToolUse", "PostToolUseFailure", "PostToolBatch", "Stop", "SubagentStart", "SubagentStop", "StopFailure",
    "PreCompact", "PostCompact", "Notification",
]
ForeignHookEvent = Literal[
    "Setup", "InstructionsLoaded", "MessageDisplay", "PermissionRequest", "TaskCreated", "TaskCompleted",
    "TeammateIdle", "ConfigChange", "CwdChanged", "DirectoryAdded", "FileChanged", "WorktreeCreate",
    "WorktreeRemove", "Elicitation", "ElicitationResult",
]


# ---------------------------------------------------------------- what a Python hook receives


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
class PermissionDeniedInput(PreToolUseInput):
    reason: str = ""


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


# ---------------------------------------------------------------- what each event is


@dataclass(frozen=True, slots=True)
class EventFacts:
    """One event. `matcher`: the input field a group's matcher is compared with (None: the event
    takes no matcher); `matcher_values`: what that field can hold, where it is a closed set.
    `blocks`: a top-level `decision: "block"` or exit code 2 blocks (PreToolUse denies instead,
    through `permissionDecision`). `context`: `additionalContext` reaches the model.
    `plain_context`: plain (non-JSON) stdout becomes context. `stops`: `continue: false` ends
    the run (for PreCompact, Claude Code documents that it is discarded)."""

    input: type[HookInput]
    matcher: str | None
    blocks: bool = False
    context: bool = False
    plain_context: bool = False
    stops: bool = True
    matcher_values: frozenset[str] | None = None

    @property
    def tool(self) -> bool:
        """A tool event: its matcher sees tool names and a handler's `if` rule applies."""
        return self.matcher == "tool_name"


_TRIGGERS = frozenset({"manual", "auto"})

EVENTS: Final[Mapping[HookEvent, EventFacts]] = {
    "SessionStart": EventFacts(SessionStartInput, "source", context=True, plain_context=True, stops=False,
                               matcher_values=frozenset({"startup", "resume", "clear", "compact", "fork"})),
    "SessionEnd": EventFacts(SessionEndInput, "reason", stops=False, matcher_values=frozenset({
        "clear", "resume", "logout", "prompt_input_exit", "other", "bypass_permissions_disabled"})),
    "UserPromptSubmit": EventFacts(UserPromptSubmitInput, None, blocks=True, context=True, plain_context=True),
    "UserPromptExpansion": EventFacts(UserPromptExpansionInput, "command_name", blocks=True, context=True,
                                      plain_context=True),
    "PreToolUse": EventFacts(PreToolUseInput, "tool_name", context=True),
    "PermissionDenied": EventFacts(PermissionDeniedInput, "tool_name"),
    "PostToolUse": EventFacts(PostToolUseInput, "tool_name", blocks=True, context=True),
    "PostToolUseFailure": EventFacts(PostToolUseFailureInput, "tool_name", blocks=True, context=True),
    "PostToolBatch": EventFacts(PostToolBatchInput, None, blocks=True, context=True),
    "Stop": EventFacts(StopInput, None, blocks=True, context=True),
    "SubagentStart": EventFacts(SubagentStartInput, "agent_type", context=True, stops=False),
    "SubagentStop": EventFacts(SubagentStopInput, "agent_type", blocks=True, context=True),
    "StopFailure": EventFacts(StopFailureInput, "error", stops=False, matcher_values=frozenset({
        "rate_limit", "overloaded", "authentication_failed", "oauth_org_not_allowed", "billing_error",
        "invalid_request", "model_not_found", "server_error", "max_output_tokens", "unknown"})),
    "PreCompact": EventFacts(PreCompactInput, "trigger", blocks=True, stops=False, matcher_values=_TRIGGERS),
    "PostCompact": EventFacts(PostCompactInput, "trigger", stops=False, matcher_values=_TRIGGERS),
    "Notification": EventFacts(NotificationInput, "notification_type", stops=False),
}

# Claude Code's events that loopwright does not fire: the input field each one's matcher sees.
FOREIGN_EVENTS: Final[Mapping[ForeignHookEvent, str | None]] = {
    "Setup": "trigger", "InstructionsLoaded": "load_reason", "MessageDisplay": None,
    "PermissionRequest": "tool_name", "TaskCreated": None, "TaskCompleted": None, "TeammateIdle": None,
    "ConfigChange": "source", "CwdChanged": None, "DirectoryAdded": "source", "FileChanged": "file_path",
    "WorktreeCreate": None, "WorktreeRemove": None, "Elicitation": "mcp_server_name",
    "ElicitationResult": "mcp_server_name",
}

if set(EVENTS) != set(get_args(HookEvent)) or set(FOREIGN_EVENTS) != set(get_args(ForeignHookEvent)):
    raise AssertionError("core.hookevents: every HookEvent needs its row in EVENTS (and every "
                         "ForeignHookEvent its row in FOREIGN_EVENTS)")

EVENT_NAMES: Final[tuple[HookEvent, ...]] = tuple(EVENTS)
TOOL_EVENTS: Final = frozenset(e for e, facts in EVENTS.items() if facts.tool)


_BY_NAME: Final[dict[str, EventFacts]] = {name: facts for name, facts in EVENTS.items()}


def facts_of(name: str) -> EventFacts | None:
    """The facts of the event named `name` (a settings file's key, say), None when loopwright
    does not fire it."""
    return _BY_NAME.get(name)
