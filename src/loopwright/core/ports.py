"""The ports the engine depends on: `Model` (a model API), `Tool` (something the model can call),
and the small data types that cross them. Adapters implement these; the engine never imports
an adapter."""

from __future__ import annotations

from contextvars import ContextVar
from dataclasses import field
from pathlib import Path
from typing import Any, AsyncIterator, Awaitable, Callable, Literal, Protocol, Sequence, runtime_checkable

from .fastclass import dataclass
from .hookevents import HookEvent
from .types import ModelRequest, StreamEvent


@runtime_checkable
class Model(Protocol):
    """A model API. `stream` yields normalised stream events and raises `ModelError` for every
    failure (HTTP status, SSE error event, transport failure, stream cut before its end)."""

    def stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent]: ...

    async def aclose(self) -> None: ...


@runtime_checkable
class PathGuard(Protocol):
    """The permission gate's judgement of one call, for the tool that carries it out."""

    def judged(self, path: str) -> tuple[str, ...] | None:
        """The real paths the gate judged for `path` as the call gives it (None: not judged).
        A tool that finds the path landing elsewhere when it acts must refuse."""
        ...

    def shows(self, path: str) -> bool:
        """Whether a file met while carrying out the call (a search hit) may be shown: no Read
        deny rule meets it and it lands where the call may read."""
        ...


@dataclass(frozen=True, slots=True)
class StepOutcome:
    """What a tool call made as a step of another call came to (`ToolContext.step`)."""

    text: str
    is_error: bool = False
    refused: bool = False  # it never ran: a PreToolUse hook or the permission gate stopped it


@dataclass(frozen=True, slots=True)
class ToolContext:
    """What a tool may know about where it runs. `guard`: the gate's judgement of this call
    (None when no gate judged it, e.g. a tool run directly)."""

    cwd: Path
    writable_roots: tuple[Path, ...] = ()
    env: dict[str, str] = field(default_factory=dict)  # child processes' whole environment; {}: child_env()
    session_id: str = ""
    guard: PathGuard | None = None
    progress: Callable[[float, float | None, str], None] | None = None  # a running call says how far it is
    before_write: Callable[[str], None] | None = None  # file checkpoints: told a file's real path before it changes
    # another tool call made as a step of this one (a skill's shell step), carried out as the model's
    # calls are: PreToolUse/PostToolUse hooks, the permission gate, the tool's sandbox, the records;
    # None where no dispatcher runs the call (then there is no other way to run one)
    step: Callable[[str, dict[str, Any]], Awaitable[StepOutcome]] | None = None


@dataclass(frozen=True, slots=True)
class ToolOutput:
    content: str | tuple[dict[str, Any], ...]
    is_error: bool = False
    # what PostToolUse hooks get as `tool_response`: the tool's structured result in Claude Code's
    # shape (Bash: stdout/stderr/interrupted/isImage; Write, Edit: filePath, …); None: the content
    response: Any = None


@runtime_checkable
class Tool(Protocol):
    """A tool the model can call. `validate` turns the raw input into the tool's own arguments
    or raises `ToolInputError` with a message for the model; `run` honours cancellation.
    `read_only` tools may run in parallel with each other."""

    name: str
    description: str
    read_only: bool

    @property
    def input_schema(self) -> dict[str, Any]: ...

    def validate(self, raw: dict[str, Any]) -> Any: ...

    async def run(self, args: Any, ctx: ToolContext) -> ToolOutput: ...


AccessKind = Literal["read", "write", "exec", "session", "other"]


@dataclass(frozen=True, slots=True)
class Access:
    """What one call of a tool touches, for the permission gate: `read`/`write` with the paths
    as given, `exec` with the command line, `session` for the session's own state (its
    background shells), `other` for anything else (asked for unless a rule allows it).
    `outside`: why this command would run outside the OS sandbox that is on (empty: inside, or
    no sandbox); `outside_refused`: trusted settings forbid that (`allowUnsandboxedCommands`)."""

    kind: AccessKind
    paths: tuple[str, ...] = ()
    command: str | None = None
    outside: str = ""
    outside_refused: bool = False


@runtime_checkable
class DescribesAccess(Protocol):
    """A tool that can tell the gate what a call touches, from the raw input (before
    validation, so it must cope with missing or mistyped fields). Tools without it count as
    `read` when `read_only`, else `other`."""

    def access(self, tool_input: dict[str, Any]) -> Access: ...


@runtime_checkable
class BackgroundWork(Protocol):
    """Work a session left running (background shells). `running()` lists it in the shape of
    a Stop hook's `background_tasks`; `stop_all()` ends it when the session ends."""

    def running(self) -> list[dict[str, Any]]: ...

    async def stop_all(self) -> None: ...


def tool_spec(tool: Tool) -> dict[str, Any]:
    """The tool definition sent to the model."""
    return {"name": tool.name, "description": tool.description, "input_schema": tool.input_schema}


@dataclass(frozen=True, slots=True)
class HookResult:
    """What the hooks of one event decided, merged (deny > ask > allow; contexts concatenated).
    `stop` is a hook's `continue: false`: the run ends with `hook_stopped`."""

    decision: str | None = None  # "allow" | "deny" | "ask" | "block"
    reason: str | None = None
    updated_input: dict[str, Any] | None = None
    additional_context: tuple[str, ...] = ()
    stop: bool = False
    stop_reason: str | None = None
    system_messages: tuple[str, ...] = ()
    updated_output: Any = None  # PostToolUse `updatedMCPToolOutput`, for an MCP tool's call
    retry: bool = False  # PermissionDenied `retry: true`: the model may try the call once more


NO_HOOK_RESULT = HookResult()


@runtime_checkable
class HookRunner(Protocol):
    """Runs every handler registered for `event` whose matcher fits `match` (a tool name, a
    source, a trigger), with `payload` as the event's input, and merges their answers."""

    async def run(self, event: HookEvent, payload: dict[str, Any], *, match: str | None = None) -> HookResult: ...


class NoHooks:
    async def run(self, event: HookEvent, payload: dict[str, Any], *, match: str | None = None) -> HookResult:
        return NO_HOOK_RESULT

    def wants(self, event: HookEvent) -> bool:
        return False


def hooks_want(hooks: HookRunner, event: HookEvent) -> bool:
    """Whether `hooks` may act on `event`: False only when the runner has a `wants` that says it
    has nothing registered for it, so a caller can skip building the event's payload."""
    wants = getattr(hooks, "wants", None)
    return wants is None or bool(wants(event))


@dataclass(frozen=True, slots=True)
class Approval:
    """An approver's fuller answer than a bool: run the call with `updated_input` instead of
    its own, change the session's rules with `updates`, or tell the model `message` on a denial
    (the Agent SDK's can_use_tool answers)."""

    allowed: bool
    updated_input: dict[str, Any] | None = None
    message: str | None = None
    updates: tuple[dict[str, Any], ...] = ()  # permission updates that come with an allow (for the session)


# The id of the tool call being decided, for an approver that must name it (set by dispatch).
CURRENT_TOOL_USE_ID: ContextVar[str] = ContextVar("loopwright_tool_use_id", default="")


class Observer(Protocol):
    """Watches every event of a run from outside (telemetry): called after the transcript's
    recorder, before the caller sees the event; it must never raise nor block. A subagent's run
    is watched by `child(...)`, told who the subagent is and which tool call started it."""

    def __call__(self, event: Any) -> None: ...

    def child(self, agent_id: str, agent_type: str, tool_use_id: str) -> "Observer": ...


@runtime_checkable
class Approver(Protocol):
    """Asks a person whether a tool call may run (interactive front ends). Headless runs have
    none: an `ask` becomes a denial."""

    async def approve(self, tool_name: str, tool_input: dict[str, Any], reason: str) -> bool | Approval: ...


@dataclass(frozen=True, slots=True)
class CheckResult:
    command: str
    exit_code: int | None
    output_tail: str
    timed_out: bool = False

    @property
    def passed(self) -> bool:
        return self.exit_code == 0 and not self.timed_out

    def describe(self) -> str:
        status = "timed out" if self.timed_out else f"exit {self.exit_code}"
        return f"$ {self.command}  ({status})\n{self.output_tail.rstrip()}"


@runtime_checkable
class Workspace(Protocol):
    """What the goal needs of the outside world: run a check command, fingerprint files."""

    async def run_check(self, command: str, timeout_s: float) -> CheckResult: ...

    def snapshot(self, globs: Sequence[str]) -> dict[str, str]: ...


class Wakeups(Protocol):
    """A self-paced loop's schedule, as the `ScheduleWakeup` tool sees it: one request per
    iteration (the last one counts), answered with the text the model gets back."""

    def request(self, delay_s: float, reason: str, stop: bool) -> str: ...


class OutputContract(Protocol):
    """What a run must answer with (structured output), as the `StructuredOutput` tool sees it:
    the tool's input schema, and `offer`, which keeps a fitting answer and returns [] or names
    every problem."""

    @property
    def input_schema(self) -> dict[str, Any]: ...

    def offer(self, value: dict[str, Any]) -> list[str]: ...


class Crons(Protocol):
    """A loop session's scheduled prompts, as the cron tools see them. `create` raises
    ValueError saying what is wrong with the request."""

    def create(self, cron: str, prompt: str, recurring: bool) -> str: ...

    def describe(self) -> str: ...

    def delete(self, task_id: str) -> bool: ...
