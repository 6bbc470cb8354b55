"""The ports the engine depends on: `Model` (a model API), `Tool` (something the model can call),
and the small data types that cross them. Adapters implement these; the engine never imports
an adapter."""

from __future__ import annotations

from contextvars import ContextVar
from dataclasses import field
from pathlib import Path
from typing import Any, AsyncIterator, Callable, Literal, Mapping, Protocol, Sequence, runtime_checkable

from .fastclass import dataclass
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
    background shells), `other` for anything else (asked for unless a rule allows it)."""

    kind: AccessKind
    paths: tuple[str, ...] = ()
    command: str | None = None


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

    async def run(self, event: str, payload: dict[str, Any], *, match: str | None = None) -> HookResult: ...


class NoHooks:
    async def run(self, event: str, payload: dict[str, Any], *, match: str | None = None) -> HookResult:
        return NO_HOOK_RESULT

    def wants(self, event: str) -> bool:
        return False


def hooks_want(hooks: HookRunner, event: str) -> bool:
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


@dataclass(frozen=True, slots=True)
class Schedule:
    """A persisted schedule: run `prompt` in `cwd` on the five-field `cron` expression, or every
    `every_s` seconds (a clean cron step) when it has none; next at `next_at` (None: finished).
    `options["args"]` are the `-p` flags of every run."""

    id: str
    cwd: str
    prompt: str
    every_s: int
    created: float
    next_at: float | None
    paused: bool = False
    max_runs: int | None = None
    runs: int = 0
    grace_s: int = 300
    options: Mapping[str, Any] = field(default_factory=dict)
    cron: str = ""


@dataclass(frozen=True, slots=True)
class ScheduledRun:
    """One fire of a schedule, as recorded: `status` running, success, error, interrupted
    (the scheduler stopped during it; never run again) or skipped (`note` says why)."""

    id: int
    schedule_id: str
    fire_at: float
    status: str
    started: float | None = None
    ended: float | None = None
    session_id: str = ""
    cost_usd: float = 0.0
    note: str = ""


class ScheduleStore(Protocol):
    """Where schedules and their runs live, shared by every scheduler process. `claim` is the
    one write that decides who runs a fire: it moves the schedule's next fire from `due_at` to
    `next_at` only if no one else has, and records the fire (running, or skipped with a note)."""

    def add(self, schedule: Schedule) -> None: ...

    def get(self, schedule_id: str) -> Schedule | None: ...

    def schedules(self) -> list[Schedule]: ...

    def set_paused(self, schedule_id: str, paused: bool) -> bool: ...

    def remove(self, schedule_id: str) -> bool: ...

    def due(self, now: float) -> list[Schedule]: ...

    def running(self, schedule_id: str) -> bool: ...

    def claim(self, schedule: Schedule, next_at: float | None, run: ScheduledRun, owner: str) -> int | None: ...

    def finish(self, run_id: int, status: str, ended: float, session_id: str, cost_usd: float, note: str) -> None: ...

    def orphans(self) -> list[tuple[ScheduledRun, str]]: ...

    def runs(self, schedule_id: str | None = None, limit: int = 50) -> list[ScheduledRun]: ...


@dataclass(frozen=True, slots=True)
class LedgerItem:
    """One item of a routine, as its ledger records it: `status` pending, running, done, failed,
    skipped (never run: `outcome` says why) or interrupted (its process died: resumed from
    `session_id` by the next fire); `tries` counts runs, a resume not included."""

    routine: str
    item_id: str
    status: str
    tries: int = 0
    session_id: str = ""
    cost_usd: float = 0.0
    outcome: str = ""
    created: float = 0.0
    started: float | None = None
    ended: float | None = None
    owner: str = ""
    fields: str = ""  # an item POSTed to `loopwright serve`: its fields, as JSON ("" for other sources)


@dataclass(frozen=True, slots=True)
class RoutineEntry:
    """A routine the scheduler fires: its file's `key` (absolute path), `name`, project folder,
    trigger (`every_s` or `cron`) and next fire (None: not yet registered with a trigger)."""

    key: str
    name: str
    cwd: str
    every_s: int = 0
    cron: str = ""
    paused: bool = False
    next_at: float | None = None


class Ledger(Protocol):
    """Where routine items are recorded, shared by every process. `claim` is the one write that
    decides who runs an item; it answers (session id, resumed) or None when the item is not to
    be taken (done, given up, or running elsewhere)."""

    def note(self, routine: str, item_id: str, now: float) -> None: ...

    def skip(self, routine: str, item_id: str, reason: str, now: float) -> None: ...

    def get(self, routine: str, item_id: str) -> LedgerItem | None: ...

    def claim(self, routine: str, item_id: str, *, owner: str, session_id: str, now: float,
              retry_failed: int) -> tuple[str, bool] | None: ...

    def finish(self, routine: str, item_id: str, status: str, *, cost_usd: float, outcome: str,
               now: float, fire_at: float | None = None) -> None:
        """`fire_at`: the start of the fire that ran it; the run is kept per fire too."""

    def recover(self, routine: str, owner: str, alive: Any) -> list[str]: ...

    def items(self, routine: str, status: str | None = None) -> list[LedgerItem]: ...


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


class SessionLog(Protocol):
    """One session's append-only log. `append` writes one record durably enough that a killed
    process loses nothing already appended; `sync=True` also survives power loss. A log that
    has a `sidechain(agent_id)` method keeps subagents' transcripts beside the session's."""

    @property
    def location(self) -> str: ...

    def append(self, record: dict[str, Any], *, sync: bool = False) -> None: ...

    def close(self) -> None: ...


class SessionStore(Protocol):
    """Where sessions live. `load` gives a session's raw records and warnings (a torn last line),
    None for an unknown id, and raises ValueError for a damaged session. `open` gives the append
    handle: an existing session is locked against other writers at once (OSError — BlockingIOError
    when another process writes it — if it cannot be), a new one is created on its first append.
    `create` gives the handle of a new session without searching for the id (the caller knows it
    is unused). `location` names the session for people and hooks (`transcript_path`)."""

    def latest(self) -> str | None: ...

    def exists(self, session_id: str) -> bool: ...

    def load(self, session_id: str) -> tuple[list[dict[str, Any]], list[str]] | None: ...

    def open(self, session_id: str) -> SessionLog: ...

    def create(self, session_id: str) -> SessionLog: ...

    def location(self, session_id: str) -> str: ...

    def export(self, session_id: str, agent_id: str | None = None) -> bytes | None:
        """The session (or its subagent `agent_id`'s sidechain) as Claude Code's JSONL transcript:
        one compact JSON record a line; None when there is no such session."""
        ...


class Stores(Protocol):
    """Everything a URL names (`stores.open_store`): `url` as given with any password hidden,
    `files` when sessions are JSONL files on this machine (transcript paths), the sessions of one
    project (`cwd`), and new handles on the schedules and the routine ledger, each closed by its
    user. A session's checkpoints and workflow journal: `core.keeping.SessionKeeping`."""

    url: str
    files: bool

    @property
    def sessions(self) -> SessionStore: ...

    def schedules(self) -> ScheduleStore: ...

    def ledger(self) -> Ledger: ...
