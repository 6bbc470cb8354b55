"""The ports the engine depends on: `Model` (a model API), `Tool` (something the model can call),
and the small data types that cross them. Adapters implement these; the engine never imports
an adapter."""

from __future__ import annotations

from contextvars import ContextVar
from dataclasses import field
from pathlib import Path
from typing import TYPE_CHECKING, Any, AsyncIterator, Awaitable, Callable, Literal, Mapping, Protocol, Sequence, TypeGuard, runtime_checkable

from .fastclass import dataclass
from .hookevents import HookEvent
from .types import ModelRequest, StreamEvent

if TYPE_CHECKING:
    from .sandboxconfig import SandboxConfig


@runtime_checkable
class Model(Protocol):
    """A model API. `stream` yields normalised stream events and raises `ModelError` for every
    failure (HTTP status, SSE error event, transport failure, stream cut before its end).

    A minimal one, a model that echoes the last prompt (`Agent(model_client=Echo())` runs on it;
    `loopwright.providers.register("echo", lambda name, env, origins: Echo())` serves `echo:…` names):

    ```python
    import asyncio

    from loopwright.core.ports import Model
    from loopwright.core.types import (
        BlockDelta, BlockStart, BlockStop, Message, ModelRequest, StreamDelta, StreamStart, StreamStop, Usage,
    )


    class Echo:
        async def stream(self, request):
            said = request.messages[-1].content[0].text
            yield StreamStart("msg-1", request.model, Usage(input_tokens=1))
            yield BlockStart(0, {"type": "text", "text": ""})
            yield BlockDelta(0, {"type": "text_delta", "text": f"echo: {said}"})
            yield BlockStop(0)
            yield StreamDelta("end_turn", {"output_tokens": 2})
            yield StreamStop()

        async def aclose(self):
            pass


    async def main():
        request = ModelRequest("echo", (Message.user("hi"),), max_tokens=100)
        return [event.type async for event in Echo().stream(request)]

    assert isinstance(Echo(), Model)
    assert asyncio.run(main())[-1] == "stream_stop"
    ```
    """

    def stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent]: ...

    async def aclose(self) -> None: ...


@runtime_checkable
class PathGuard(Protocol):
    """The permission gate's judgement of one call, for the tool that carries it out.

    A minimal one, judging every path by where it really lands:

    ```python
    import os
    import tempfile

    from loopwright.core.ports import PathGuard


    class Under:
        def __init__(self, root):
            self.root = os.path.realpath(root)

        def judged(self, path):
            real = os.path.realpath(os.path.join(self.root, path))
            return (real,) if real == self.root or real.startswith(self.root + os.sep) else None

        def shows(self, path):
            return self.judged(path) is not None


    with tempfile.TemporaryDirectory() as root:
        guard = Under(root)
        assert isinstance(guard, PathGuard)
        assert guard.judged("notes.txt") == (os.path.join(guard.root, "notes.txt"),)
        assert guard.judged("../elsewhere") is None and not guard.shows("/etc/passwd")
    ```
    """

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
    `read_only` tools may run in parallel with each other.

    A minimal one (`loopwright.tools.base.tool` makes one from a function):

    ```python
    import asyncio
    from pathlib import Path

    from loopwright.core.errors import ToolInputError
    from loopwright.core.ports import Tool, ToolContext, ToolOutput


    class Shout:
        name = "Shout"
        description = "Upper-cases a text."
        read_only = True

        @property
        def input_schema(self):
            return {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}

        def validate(self, raw):
            if not isinstance(raw.get("text"), str):
                raise ToolInputError("text: expected a string")
            return raw["text"]

        async def run(self, args, ctx):
            return ToolOutput(args.upper())


    shout = Shout()
    assert isinstance(shout, Tool)
    assert asyncio.run(shout.run(shout.validate({"text": "hi"}), ToolContext(cwd=Path.cwd()))).content == "HI"
    ```
    """

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
    `read` when `read_only`, else `other`.

    A minimal one, a tool that reads the file its input names:

    ```python
    from loopwright.core.ports import Access, DescribesAccess


    class ReadsOneFile:
        def access(self, tool_input):
            path = tool_input.get("path")
            if not isinstance(path, str):  # a malformed call: nothing known, so it is asked about
                return Access("other")
            return Access("read", paths=(path,))


    assert isinstance(ReadsOneFile(), DescribesAccess)
    assert ReadsOneFile().access({"path": "a.txt"}).paths == ("a.txt",)
    assert ReadsOneFile().access({}).kind == "other"
    ```
    """

    def access(self, tool_input: dict[str, Any]) -> Access: ...


@runtime_checkable
class BackgroundWork(Protocol):
    """Work a session left running (background shells). `running()` lists it in the shape of
    a Stop hook's `background_tasks`; `stop_all()` ends it when the session ends.

    A minimal one, background tasks of asyncio:

    ```python
    import asyncio

    from loopwright.core.ports import BackgroundWork


    class Tasks:
        def __init__(self):
            self.tasks = {}

        def start(self, task_id, coroutine, description):
            self.tasks[task_id] = (asyncio.ensure_future(coroutine), description)

        def running(self):
            return [{"id": task_id, "type": "task", "status": "running", "description": description}
                    for task_id, (task, description) in self.tasks.items() if not task.done()]

        async def stop_all(self):
            for task, _ in self.tasks.values():
                task.cancel()
            await asyncio.gather(*(task for task, _ in self.tasks.values()), return_exceptions=True)


    async def main():
        work = Tasks()
        work.start("t1", asyncio.sleep(3600), "a long wait")
        assert [t["id"] for t in work.running()] == ["t1"]
        await work.stop_all()
        assert work.running() == []

    assert isinstance(Tasks(), BackgroundWork)
    asyncio.run(main())
    ```
    """

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
    source, a trigger), with `payload` as the event's input, and merges their answers.

    A minimal one, a policy in code: no Bash, ever:

    ```python
    import asyncio

    from loopwright.core.ports import NO_HOOK_RESULT, HookResult, HookRunner


    class NoShell:
        async def run(self, event, payload, *, match=None):
            if event == "PreToolUse" and match == "Bash":
                return HookResult(decision="deny", reason="no shell in this project")
            return NO_HOOK_RESULT


    assert isinstance(NoShell(), HookRunner)
    said = asyncio.run(NoShell().run("PreToolUse", {"tool_input": {"command": "ls"}}, match="Bash"))
    assert said.decision == "deny"
    ```
    """

    async def run(self, event: HookEvent, payload: dict[str, Any], *, match: str | None = None) -> HookResult: ...


@runtime_checkable
class SaysWhatItWants(Protocol):
    """A hook runner that can tell, before an event's payload is built, whether it has anything
    registered for the event (`hooks_want`).

    A minimal one, that acts on Stop only:

    ```python
    from loopwright.core.ports import NO_HOOK_RESULT, hooks_want


    class StopOnly:
        async def run(self, event, payload, *, match=None):
            return NO_HOOK_RESULT  # a real runner runs its Stop handlers here

        def wants(self, event):
            return event == "Stop"


    assert hooks_want(StopOnly(), "Stop") and not hooks_want(StopOnly(), "PreToolUse")
    ```
    """

    def wants(self, event: HookEvent) -> bool: ...


class NoHooks:
    async def run(self, event: HookEvent, payload: dict[str, Any], *, match: str | None = None) -> HookResult:
        return NO_HOOK_RESULT

    def wants(self, event: HookEvent) -> bool:
        return False


def hooks_want(hooks: HookRunner, event: HookEvent) -> bool:
    """Whether `hooks` may act on `event`: False only when the runner has a `wants` that says it
    has nothing registered for it, so a caller can skip building the event's payload."""
    return not _says_what_it_wants(hooks) or bool(hooks.wants(event))


_SAYS_WHAT_IT_WANTS: dict[type, bool] = {}


def _says_what_it_wants(hooks: object) -> TypeGuard[SaysWhatItWants]:
    # decided once per class: a runtime Protocol check costs tens of microseconds on Python 3.11,
    # and this is asked several times a tool call (docs/speed.md); `wants` is a method, so the
    # class decides
    kind = type(hooks)
    says = _SAYS_WHAT_IT_WANTS.get(kind)
    if says is None:
        says = _SAYS_WHAT_IT_WANTS[kind] = issubclass(kind, SaysWhatItWants)
    return says


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
class EventRecorder(Protocol):
    """A session's recorder as an agent holds it: called with every event before anyone else
    sees it, it writes the transcript; `last_uuid` is the id of the record it wrote last (after
    a prompt, that prompt's: its checkpoint's and its replay's id). A plain callable recorder
    has no ids to give.

    A minimal one, that keeps the events and numbers them:

    ```python
    from loopwright.core.ports import EventRecorder


    class Numbered:
        def __init__(self):
            self.events, self.last_uuid = [], None

        def __call__(self, event):
            self.events.append(event)
            self.last_uuid = f"record-{len(self.events)}"


    recorder = Numbered()
    recorder("an event")
    assert isinstance(recorder, EventRecorder) and recorder.last_uuid == "record-1"
    ```
    """

    last_uuid: str | None

    def __call__(self, event: Any) -> None: ...


class Observer(Protocol):
    """Watches every event of a run from outside (telemetry): called after the transcript's
    recorder, before the caller sees the event; it must never raise nor block. A subagent's run
    is watched by `child(...)`, told who the subagent is and which tool call started it.

    A minimal one, counting each kind of event, a subagent's with its parent's:

    ```python
    from collections import Counter


    class Counts:
        def __init__(self, counts=None):
            self.counts = Counter() if counts is None else counts

        def __call__(self, event):
            self.counts[type(event).__name__] += 1  # cheap, and it cannot raise

        def child(self, agent_id, agent_type, tool_use_id):
            return Counts(self.counts)


    watch = Counts()
    watch("an event")
    watch.child("agent-1", "general-purpose", "toolu_1")("another")
    assert watch.counts["str"] == 2
    ```
    """

    def __call__(self, event: Any) -> None: ...

    def child(self, agent_id: str, agent_type: str, tool_use_id: str) -> "Observer": ...


@runtime_checkable
class Approver(Protocol):
    """Asks a person whether a tool call may run (interactive front ends). Headless runs have
    none: an `ask` becomes a denial.

    A minimal one, which lets reads through and refuses the rest with a word for the model:

    ```python
    import asyncio

    from loopwright.core.ports import Approval, Approver


    class ReadsOnly:
        async def approve(self, tool_name, tool_input, reason):
            if tool_name in ("Read", "Glob", "Grep"):
                return True
            return Approval(False, message=f"{tool_name} needs a person here ({reason})")


    assert isinstance(ReadsOnly(), Approver)
    assert asyncio.run(ReadsOnly().approve("Read", {"file_path": "a"}, "not allowed by a rule")) is True
    assert asyncio.run(ReadsOnly().approve("Bash", {"command": "ls"}, "ask")).allowed is False
    ```
    """

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
    """What the goal needs of the outside world: run a check command, fingerprint files.

    A minimal one, a folder on this machine (without the sandbox `tools.workspace` gives):

    ```python
    import asyncio
    import hashlib
    import tempfile
    from pathlib import Path

    from loopwright.core.environ import child_env
    from loopwright.core.ports import CheckResult, Workspace


    class Folder:
        def __init__(self, root):
            self.root = Path(root)

        async def run_check(self, command, timeout_s):
            pipe, merged = asyncio.subprocess.PIPE, asyncio.subprocess.STDOUT
            proc = await asyncio.create_subprocess_shell(command, cwd=self.root, env=child_env(),
                                                         stdout=pipe, stderr=merged)
            try:
                out, _ = await asyncio.wait_for(proc.communicate(), timeout_s)
            except asyncio.TimeoutError:
                proc.kill()
                await proc.wait()
                return CheckResult(command, None, "", timed_out=True)
            return CheckResult(command, proc.returncode, out.decode(errors="replace")[-4000:])

        def snapshot(self, globs):
            return {str(p.relative_to(self.root)): hashlib.sha256(p.read_bytes()).hexdigest()
                    for glob in globs for p in sorted(self.root.glob(glob)) if p.is_file()}


    with tempfile.TemporaryDirectory() as root:
        folder = Folder(root)
        (folder.root / "a.py").write_text("x = 1")
        assert isinstance(folder, Workspace)
        assert asyncio.run(folder.run_check("test -f a.py", 30)).passed
        assert list(folder.snapshot(["*.py"])) == ["a.py"]
    ```
    """

    async def run_check(self, command: str, timeout_s: float) -> CheckResult: ...

    def snapshot(self, globs: Sequence[str]) -> dict[str, str]: ...


class Wakeups(Protocol):
    """A self-paced loop's schedule, as the `ScheduleWakeup` tool sees it: one request per
    iteration (the last one counts), answered with the text the model gets back.

    A minimal one, keeping the last request:

    ```python
    class LastWish:
        def __init__(self):
            self.next = None  # (seconds, reason), or None: stop

        def request(self, delay_s, reason, stop):
            self.next = None if stop else (min(max(delay_s, 60.0), 3600.0), reason)
            return "the loop ends after this iteration" if stop else f"woken again in {self.next[0]:.0f} s"


    wakeups = LastWish()
    assert wakeups.request(5, "the build runs", False) == "woken again in 60 s"
    assert wakeups.request(0, "done", True) and wakeups.next is None
    ```
    """

    def request(self, delay_s: float, reason: str, stop: bool) -> str: ...


class OutputContract(Protocol):
    """What a run must answer with (structured output), as the `StructuredOutput` tool sees it:
    the tool's input schema, and `offer`, which keeps a fitting answer and returns [] or names
    every problem.

    A minimal one, a verdict of pass or fail:

    ```python
    class Verdict:
        answer = None

        @property
        def input_schema(self):
            return {"type": "object", "properties": {"verdict": {"enum": ["pass", "fail"]}}, "required": ["verdict"]}

        def offer(self, value):
            if value.get("verdict") not in ("pass", "fail"):
                return [f"verdict: expected 'pass' or 'fail', got {value.get('verdict')!r}"]
            self.answer = value
            return []


    contract = Verdict()
    assert contract.offer({"verdict": "maybe"}) and contract.answer is None
    assert contract.offer({"verdict": "pass"}) == [] and contract.answer == {"verdict": "pass"}
    ```
    """

    @property
    def input_schema(self) -> dict[str, Any]: ...

    def offer(self, value: dict[str, Any]) -> list[str]: ...


class Crons(Protocol):
    """A loop session's scheduled prompts, as the cron tools see them. `create` raises
    ValueError saying what is wrong with the request.

    A minimal one, in memory:

    ```python
    class Crons:
        def __init__(self):
            self.jobs = {}

        def create(self, cron, prompt, recurring):
            if len(cron.split()) != 5:
                raise ValueError(f"{cron!r}: expected five fields (minute hour day-of-month month day-of-week)")
            task_id = f"cron-{len(self.jobs) + 1}"
            self.jobs[task_id] = (cron, prompt, recurring)
            return task_id

        def describe(self):
            lines = [f"{task_id}: {cron} {prompt!r}{' (recurring)' if recurring else ''}"
                     for task_id, (cron, prompt, recurring) in self.jobs.items()]
            return "; ".join(lines) or "no scheduled prompts"

        def delete(self, task_id):
            return self.jobs.pop(task_id, None) is not None


    crons = Crons()
    task = crons.create("*/5 * * * *", "check the build", recurring=True)
    assert "check the build" in crons.describe() and crons.delete(task) and not crons.delete(task)
    ```
    """

    def create(self, cron: str, prompt: str, recurring: bool) -> str: ...

    def describe(self) -> str: ...

    def delete(self, task_id: str) -> bool: ...


class Outfit(Protocol):
    """What an agent's run takes from the outside world, in one place, so the agent layer never
    imports an adapter: the model client for a model name, the built-in tools and their
    background shells, MCP servers, the OS sandbox (whether it runs here, its warning, a goal
    check wrapped in it, Python for workflows), the Skill and StructuredOutput tools, the folder a
    goal checks, the crash log and the http hooks' POST. An `Agent` uses its `outfit` field, else
    `default_outfit()`: the composition root's (`compose.outfit.Outfit`). A test or an embedder
    changes a part by subclassing that one:

    ```python
    from loopwright.compose.outfit import Outfit as Standard


    class OneClient(Standard):
        \"\"\"Every model name goes to one client of ours; the rest is the standard outfit.\"\"\"

        def __init__(self, client):
            self.client = client

        def model_client(self, model, env, env_origins):
            return self.client


    sentinel = object()
    assert OneClient(sentinel).model_client("claude-sonnet-4-5", {}, {}) is sentinel
    ```
    """

    def model_client(self, model: str, env: Mapping[str, str], env_origins: Mapping[str, str]) -> Model:
        """A client (closed by the run) for `model`; a missing credential is said here, before any call."""
        ...

    def builtin_tools(self, sandbox: SandboxConfig | None) -> Sequence[Tool]: ...

    def background_work(self, tools: Sequence[Tool]) -> Any:
        """The background shells of `tools` (`running()`, `await stop_all()`), or None."""
        ...

    def on_host(self, tool: Tool) -> Tool:
        """`tool`, but running its commands outside the sandbox (the built-in Bash); others as they are."""
        ...

    def mcp_servers(self, specs: Sequence[Any], cwd: str, env: Mapping[str, str]) -> Any:
        """Not yet started MCP servers (`await start()`, `aclose()`) for `specs`."""
        ...

    def sandbox_unavailable(self) -> str | None:
        """None when the sandbox runs here; otherwise why not, in one line."""
        ...

    def sandbox_active(self, sandbox: SandboxConfig | None) -> bool: ...

    def sandbox_warning(self, sandbox: SandboxConfig | None) -> str | None: ...

    def check_wrapper(self, sandbox: SandboxConfig | None, cwd: Path, roots: tuple[str, ...]) -> Callable[[str], list[str]] | None:
        """How a goal check's command line runs inside the sandbox; None when it is off or cannot run."""
        ...

    def python_jail(self) -> list[str] | str:
        """The argv that starts a sandboxed Python (add `-c CODE`), or why there is none here."""
        ...

    def skill_tool(self, use: Callable[[str, str, Any], Any]) -> Tool: ...

    def structured_output_tool(self, answer: Any) -> Tool: ...

    def workspace(self, cwd: Path, wrap: Callable[[str], list[str]] | None, env: Mapping[str, str]) -> Workspace: ...

    def crash_log(self, exc: BaseException) -> str | None: ...

    async def post_json(self, url: str, headers: Mapping[str, str], body: bytes, timeout: float) -> tuple[int, bytes]:
        """The http hooks' transport: (status, body)."""
        ...


def default_outfit() -> Outfit:
    """The outfit of an agent given none. The package root names it (`loopwright._default_outfit`,
    importing the composition root only on first use), so this layer imports no adapter."""
    import loopwright

    outfit: Outfit = loopwright._default_outfit()
    return outfit
