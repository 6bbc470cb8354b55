"""Typed events the engine yields, and the result of a run. Frozen dataclasses with a `type`
literal; consumers match on the `Event` union and end in `assert_never`. Event names are
public API. `RunResult.to_json()` is Claude Code's headless result shape plus our additions."""

from __future__ import annotations

from dataclasses import field
from typing import Any, Literal, Protocol, Union

from .fastclass import dataclass
from .types import Message, ModelRequest, Response, StreamEvent, ToolResultBlock, Usage

Subtype = Literal[
    "success",
    "error_max_turns",
    "error_during_execution",
    "error_max_budget_usd",
    "error_max_budget_tokens",
    "error_max_duration",
    "error_max_structured_output_retries",
]

TerminalReason = Literal[
    "completed",
    "max_turns",
    "budget_exhausted",
    "max_duration",
    "max_output_tokens",
    "refusal",
    "pause_turn_limit",
    "empty_response",
    "prompt_too_long",
    "compaction_thrashing",
    "api_error",
    "api_unreachable",
    "authentication_failed",
    "aborted",
    "hook_stopped",
    "stop_hook_cap",
    "goal_met",
    "goal_impossible",
    "goal_no_progress",
    "goal_max_turns",
    "goal_max_duration",
    "goal_max_budget",
    "structured_output_retry_exhausted",
    "malformed_tool_input",
    "internal_error",
    "startup_error",  # the command ended before its run began (CLI: a usage or session error)
    "no_winner",  # parallel attempts: none was eligible, or the judge chose none
    "workflow_failed",  # a workflow script raised, or an agent of it failed
    "not_deterministic",  # a resumed workflow made another call than the one recorded
]


@dataclass(frozen=True, slots=True)
class ModelUsage:
    """Usage and cost of one model within a run; `role` says what the calls were for."""

    usage: Usage = field(default_factory=Usage)
    cost_usd: float = 0.0
    calls: int = 0

    def add(self, usage: Usage, cost: float) -> "ModelUsage":
        return ModelUsage(self.usage + usage, self.cost_usd + cost, self.calls + 1)

    def __add__(self, other: "ModelUsage") -> "ModelUsage":
        return ModelUsage(self.usage + other.usage, self.cost_usd + other.cost_usd, self.calls + other.calls)

    def to_json(self) -> dict[str, Any]:
        return {
            "inputTokens": self.usage.input_tokens,
            "outputTokens": self.usage.output_tokens,
            "cacheReadInputTokens": self.usage.cache_read_input_tokens,
            "cacheCreationInputTokens": self.usage.cache_creation_input_tokens,
            "costUSD": round(self.cost_usd, 8),
        }


@dataclass(frozen=True, slots=True)
class PermissionDenial:
    tool_name: str
    tool_use_id: str
    tool_input: dict[str, Any]
    reason: str = ""  # for the person (not in the JSON, which keeps Claude Code's three keys)
    hint: str = ""  # the flag or rule that would allow it

    def to_json(self) -> dict[str, Any]:
        return {"tool_name": self.tool_name, "tool_use_id": self.tool_use_id, "tool_input": self.tool_input}


class CapabilityReport(Protocol):
    """A capability's part of a run's result (`RunResult.reports`, by the capability's name):
    a typed object of its own, shown in the JSON result under that name."""

    def to_json(self) -> dict[str, Any]: ...


# what a capability may not be named: the result's own keys, which its report would shadow
RESULT_KEYS = frozenset({
    "type", "subtype", "is_error", "result", "session_id", "num_turns", "duration_ms", "duration_api_ms",
    "total_cost_usd", "usage", "modelUsage", "stop_reason", "stop_details", "terminal_reason", "api_error_status",
    "errors", "permission_denials", "stop_reason_counts", "retries", "usageByRole", "warnings", "loop",
    "structured_output", "attempts", "workflow", "reports"})


@dataclass(frozen=True, slots=True)
class RunResult:
    subtype: Subtype
    is_error: bool
    result: str
    session_id: str
    num_turns: int
    duration_ms: int
    duration_api_ms: int
    total_cost_usd: float
    usage: Usage
    model_usage: dict[str, ModelUsage]
    stop_reason: str | None
    terminal_reason: TerminalReason
    stop_details: dict[str, Any] | None = None
    errors: tuple[str, ...] = ()
    permission_denials: tuple[PermissionDenial, ...] = ()
    stop_reason_counts: dict[str, int] = field(default_factory=dict)
    retries: dict[str, int] = field(default_factory=dict)
    messages: tuple[Message, ...] = ()
    warnings: tuple[str, ...] = ()
    role_usage: dict[str, ModelUsage] = field(default_factory=dict)
    reports: dict[str, CapabilityReport] = field(default_factory=dict)  # each capability's, by its name
    loop: dict[str, Any] | None = None  # a time-based loop's summary, on its last iteration's result
    structured_output: Any = None  # with an output schema: the validated answer
    api_error_status: int | None = None  # the HTTP status of the API error the run ended on
    attempts: dict[str, Any] | None = None  # parallel attempts: each one, the judge's ruling, the choice
    workflow: dict[str, Any] | None = None  # a workflow run: its name, agents run and replayed, its journal

    @property
    def goal(self) -> dict[str, Any] | None:
        """The goal's report as JSON (`reports["goal"]`, a `capabilities.goal.GoalReport`)."""
        report = self.reports.get("goal")
        return report.to_json() if report is not None else None

    @property
    def exit_code(self) -> int:
        if self.terminal_reason == "aborted":
            return 130
        return 1 if self.is_error else 0

    def to_json(self) -> dict[str, Any]:
        return {
            "type": "result",
            "subtype": self.subtype,
            "is_error": self.is_error,
            "result": self.result,
            "session_id": self.session_id,
            "num_turns": self.num_turns,
            "duration_ms": self.duration_ms,
            "duration_api_ms": self.duration_api_ms,
            "total_cost_usd": round(self.total_cost_usd, 8),
            "usage": self.usage.to_api(),
            "modelUsage": {m: mu.to_json() for m, mu in self.model_usage.items()},
            "stop_reason": self.stop_reason,
            "stop_details": self.stop_details,
            "terminal_reason": self.terminal_reason,
            "api_error_status": self.api_error_status,
            "errors": list(self.errors),
            "permission_denials": [d.to_json() for d in self.permission_denials],
            "stop_reason_counts": dict(self.stop_reason_counts),
            "retries": dict(self.retries),
            "usageByRole": {role: mu.to_json() for role, mu in self.role_usage.items()},
            "warnings": list(self.warnings),
            **{name: report.to_json() for name, report in self.reports.items()},
            **({"loop": self.loop} if self.loop is not None else {}),
            **({"structured_output": self.structured_output} if self.structured_output is not None else {}),
            **({"attempts": self.attempts} if self.attempts is not None else {}),
            **({"workflow": self.workflow} if self.workflow is not None else {}),
        }


# ---------------------------------------------------------------- events


@dataclass(frozen=True, slots=True)
class SystemInit:
    session_id: str
    cwd: str
    model: str
    tools: tuple[str, ...]
    permission_mode: str
    mcp_servers: tuple[dict[str, str], ...] = ()  # each MCP server's name and status
    type: Literal["system_init"] = "system_init"


@dataclass(frozen=True, slots=True)
class AssistantMessage:
    """A finished model response, as it goes into the conversation."""

    message: Message
    model: str
    stop_reason: str | None
    usage: Usage
    id: str = ""
    turn: int = 0
    duration_ms: int = 0  # how long the model call that gave it took (telemetry's span)
    type: Literal["assistant"] = "assistant"


@dataclass(frozen=True, slots=True)
class UserMessage:
    """A user-role message the loop appended: tool results, continuation or hook feedback."""

    message: Message
    synthetic: bool = True
    type: Literal["user"] = "user"


@dataclass(frozen=True, slots=True)
class PartialEvent:
    """A raw stream event of the response in progress (`--include-partial-messages`)."""

    event: StreamEvent
    type: Literal["partial"] = "partial"


@dataclass(frozen=True, slots=True)
class ToolStarted:
    tool_use_id: str
    name: str
    input: dict[str, Any]
    type: Literal["tool_started"] = "tool_started"


@dataclass(frozen=True, slots=True)
class ToolProgress:
    """A running tool says how far it is (an MCP server's progress notification)."""

    tool_use_id: str
    name: str
    progress: float
    total: float | None = None
    message: str = ""
    type: Literal["tool_progress"] = "tool_progress"

    def to_json(self) -> dict[str, Any]:
        return {"tool_use_id": self.tool_use_id, "tool_name": self.name, "progress": self.progress,
                "total": self.total, "message": self.message}


@dataclass(frozen=True, slots=True)
class ToolFinished:
    tool_use_id: str
    name: str
    is_error: bool
    output: str
    result: ToolResultBlock | None = None
    duration_ms: int = 0  # from the PreToolUse hooks to the PostToolUse ones, the gate and the run between
    # the permission decision: "allow" or "deny" ("" when the call never reached it: an unknown tool),
    # who made it ("rules", "hook", "user", "classifier") and, for a denial, why
    decision: str = ""
    decision_source: str = ""
    decision_reason: str = ""
    decision_calls: tuple[dict[str, Any], ...] = ()  # the auto-mode classifier's model calls on it (telemetry)
    type: Literal["tool_finished"] = "tool_finished"


@dataclass(frozen=True, slots=True)
class ApiRetry:
    attempt: int
    max_retries: int
    delay_s: float
    error_kind: str
    status: int | None
    message: str
    type: Literal["api_retry"] = "api_retry"


RESENT_RESULTS_ONLY = "resent_results_only"  # Notice subtype: replay drops the text after the results too


@dataclass(frozen=True, slots=True)
class Notice:
    """Something the user should know that did not stop the run (a recovery, a fallback)."""

    level: Literal["info", "warning"]
    text: str
    subtype: str = "informational"  # the transcript's and stream-json's `system` subtype
    data: dict[str, Any] = field(default_factory=dict)  # the subtype's own fields, kept in the transcript
    type: Literal["notice"] = "notice"


@dataclass(frozen=True, slots=True)
class CompactBoundary:
    """The conversation before this point was replaced by a summary."""

    trigger: Literal["manual", "auto", "reactive"]
    pre_tokens: int
    post_tokens: int
    summary: str
    messages: tuple[Message, ...] = ()  # the whole conversation after compaction
    # the summary's model call (model, stop_reason, usage as the API gives it, duration_ms): telemetry's
    summary_call: dict[str, Any] | None = None
    type: Literal["compact_boundary"] = "compact_boundary"


@dataclass(frozen=True, slots=True)
class GoalStatus:
    """A goal was set or judged; the transcript keeps it as a `goal_status` attachment in
    Claude Code's shape."""

    condition: str
    met: bool = False
    sentinel: bool = False
    failed: bool = False
    reason: str = ""
    iterations: int = 0
    duration_ms: int = 0
    tokens: int = 0
    saved: dict[str, Any] | None = None  # what a resume needs to restore the goal (set records)
    cost_usd: float = 0.0  # the run's spend so far, evaluator included (for the live line)
    # an evaluation's outcome (met, not_met, impossible, check_failed, protected_changed; "" when the
    # goal was only set), the evidence the evaluator was shown and how long the evaluation took
    verdict: str = ""
    evidence_chars: int = 0
    evaluation_ms: int = 0
    evaluator_calls: tuple[dict[str, Any], ...] = ()  # since the last status: evidence and answer each
    type: Literal["goal_status"] = "goal_status"

    def attachment(self) -> dict[str, Any]:
        out: dict[str, Any] = {"type": "goal_status", "met": self.met, "condition": self.condition}
        if self.sentinel:
            out["sentinel"] = True
        if self.failed:
            out["failed"] = True
        if self.reason:
            out["reason"] = self.reason
        out.update(iterations=self.iterations, durationMs=self.duration_ms, tokens=self.tokens)
        if self.saved is not None:
            out["loopwright"] = self.saved
        if self.evaluator_calls:
            out["evaluatorCalls"] = list(self.evaluator_calls)
        return out


@dataclass(frozen=True, slots=True)
class HookStarted:
    """A hook handler began (stream-json `system/hook_started` with `--include-hook-events`)."""

    hook_id: str
    hook_name: str  # the event, and what it matched: "PreToolUse:Bash"
    hook_event: str
    type: Literal["hook_started"] = "hook_started"


@dataclass(frozen=True, slots=True)
class HookResponse:
    """A hook handler finished: what it printed and how it ended (`cancelled`: it timed out)."""

    hook_id: str
    hook_name: str
    hook_event: str
    outcome: Literal["success", "error", "cancelled"]
    output: str = ""
    stdout: str = ""
    stderr: str = ""
    exit_code: int | None = None
    type: Literal["hook_response"] = "hook_response"


@dataclass(frozen=True, slots=True)
class LoopStatus:
    """A time-based loop between iterations: waiting until `next_at` (epoch seconds) for `reason`
    (schedule, missed, wakeup, fallback, expiry), or over (`next_at` None) for `reason` (stopped,
    max_iterations, until, expired, no_reschedule, failing, interrupted)."""

    iterations: int
    reason: str
    next_at: float | None = None
    note: str | None = None
    type: Literal["loop_status"] = "loop_status"

    @property
    def ended(self) -> bool:
        return self.next_at is None

    def to_json(self) -> dict[str, Any]:
        return {"iterations": self.iterations, "reason": self.reason, "ended": self.ended,
                "next_at": self.next_at, **({"note": self.note} if self.note else {})}


@dataclass(frozen=True, slots=True)
class ModelCall:
    """A model call beside the conversation (a prompt hook's, the auto-mode classifier's); the
    transcript keeps it (`system/model_call`) so `loopwright replay` can answer it as it was answered."""

    purpose: Literal["prompt_hook", "classifier"]
    system: str  # the call's system prompt
    request: str  # its one user message
    answer: dict[str, Any]  # the response as the Messages API gives it (content, model, stop_reason, usage)
    type: Literal["model_call"] = "model_call"

    @classmethod
    def of(cls, purpose: Literal["prompt_hook", "classifier"], request: ModelRequest, response: Response) -> "ModelCall":
        answer = response.message.to_api() | {"id": response.id, "model": response.model,
                                              "stop_reason": response.raw_stop_reason, "usage": response.usage.to_api()}
        return cls(purpose, request.system, request.messages[0].text if request.messages else "", answer)


@dataclass(frozen=True, slots=True)
class ResultEvent:
    result: RunResult
    type: Literal["result"] = "result"


Event = Union[
    SystemInit,
    AssistantMessage,
    UserMessage,
    PartialEvent,
    ToolStarted,
    ToolProgress,
    ToolFinished,
    ApiRetry,
    Notice,
    CompactBoundary,
    GoalStatus,
    HookStarted,
    HookResponse,
    LoopStatus,
    ModelCall,
    ResultEvent,
]
