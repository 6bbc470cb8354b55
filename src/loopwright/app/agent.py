"""`Agent`: a model, tools, limits and permissions wired into the loop, for library users.
`await agent.run("…")` returns a `RunResult`; `agent.stream("…")` yields events."""

from __future__ import annotations

import asyncio
import os
import time
from dataclasses import field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, AsyncIterator, Callable, Mapping, Sequence

from ..core.errors import LoopwrightError, reader_gone
from ..core.events import Event, ResultEvent, RunResult, UserMessage
from ..core.fastclass import dataclass
from ..core.hookevents import HookEvent
from ..core.ids import uuid4
from ..engine.hookcalls import StopHook
from ..engine.loop import AgentLoop
from ..policy.budget import Budget
from ..policy.models import DEFAULT_MODEL, resolve_model
from ..permissions.rules import PermissionRules, normalise_mode
from ..policy.stop import Limits
from ..core.ports import Approver, HookRunner, Model, Observer, Tool, Workspace
from ..sandbox import SandboxConfig
from ..settings import default_limits
from . import loopbuild, prompting, sandboxing, sessionstart
from ..core.types import Message

if TYPE_CHECKING:
    from ..engine.capability import Capability
    from ..engine.goal import GoalJudge, GoalSpec

DEFAULT_SYSTEM_PROMPT = """\
You are loopwright, an agent that finishes software tasks by working with tools. \
You work in {cwd}. Inspect before you change: read files and run commands to learn what is \
there, make focused edits, and check your work (run the tests or the program) before you say \
you are done. If a tool call fails, read the error and adjust instead of repeating it. \
When the task is complete, answer with a short summary of what you changed and how you checked it. \
Today's date is {today}."""


def default_system_prompt(cwd: Path) -> str:
    return DEFAULT_SYSTEM_PROMPT.format(cwd=cwd, today=time.strftime("%Y-%m-%d"))


@dataclass
class Agent:
    """An agent loop with its model, tools and limits. `model_client` defaults to the Anthropic
    Messages API configured from the environment (`ANTHROPIC_API_KEY`, `ANTHROPIC_BASE_URL`)."""

    model: str = DEFAULT_MODEL
    model_client: Model | None = None
    tools: Sequence[Tool] | None = None
    system_prompt: str | None = None
    append_system_prompt: str = ""
    cwd: Path = field(default_factory=Path.cwd)
    limits: Limits = field(default_factory=default_limits)  # honours LOOPWRIGHT_STOP_HOOK_BLOCK_CAP
    budget: Budget = field(default_factory=Budget)
    permissions: PermissionRules = field(default_factory=PermissionRules)
    stop_hooks: Sequence[StopHook] = ()
    # features of the caller's around the loop (engine.capability.Capability), after the built-in
    # ones; each is started afresh by every run (`start`): docs/capabilities.md
    capabilities: Sequence[Capability] = ()
    hooks: HookRunner | None = None  # e.g. loopwright.hooks.HookRunner.from_settings(load_settings())
    session_source: str = "startup"  # what SessionStart hooks see: startup | resume | fork
    goal: GoalSpec | None = None
    workspace: Workspace | None = None
    evaluator_client: Model | None = None
    approver: Approver | None = None
    transcript_path: str = ""
    include_partial: bool = False
    final_turn: bool = False
    session_id: str = field(default_factory=uuid4)
    clock: Any = None
    history: list[Message] = field(default_factory=list)
    recorder: Callable[[Event], None] | None = None  # a session's Recorder: sees every event first
    observer: Observer | None = None  # sees every event after the recorder (loopwright.telemetry)
    # every command the model starts runs under bwrap unless this says enabled=False (None: the
    # default SandboxConfig, on): loopwright.sandbox, docs/permissions.md
    sandbox: SandboxConfig | None = None
    output_schema: Any = None  # a JSON Schema: the run ends with a fitting `result.structured_output`
    # what processes started for tools, hooks and goal checks get; None: core.environ.child_env(),
    # this process's environment without the credentials loopwright itself uses
    child_env: Mapping[str, str] | None = None
    env_origins: Mapping[str, str] = field(default_factory=dict)  # variable -> the settings file that set it
    crash_log: Callable[[BaseException], str | None] | None = None  # default: a file in loopwright's home
    mcp_servers: Sequence[Any] = ()  # loopwright.mcp.config.ServerSpec: started on the first run
    memory: Any = None  # loopwright.context.memory.Memory: the project's instructions, given at the start
    skills: Any = None  # loopwright.context.skills.Skills: listed at the start, loaded by the Skill tool
    agents: Any = None  # loopwright.agents.definitions: name -> AgentDef; offers the Agent tool
    plugins: Sequence[Any] = ()  # loopwright.context.plugins.Plugin: their parts are in the fields above
    depth: int = 0  # subagent level: 0 for the main agent
    classifier_model: str | None = None  # auto mode's classifier (default: haiku on Anthropic, else the main model)
    subagent: Any = None  # loopwright.agents.runner.Sidechain: who this subagent is (its hooks, transcript)
    checkpoints: Any = None  # loopwright.session.checkpoints.Checkpoints: files kept before Write/Edit change them
    stores: Any = None  # core.storeports.Stores the session lives in (set by the CLI): its transcript, workflow journal
    # each run's whole tool list (built-in, MCP, Skill, Agent, Workflow, ...) passes through this;
    # a durable run (loopwright.distributed) makes every call a recorded step with it
    tool_steps: Callable[[list[Tool]], Sequence[Tool]] | None = None
    # `--tools`: the only tools of loopwright's own offered (Agent, Workflow and Skill too, when named);
    # None: all of them. MCP servers' tools and --json-schema's StructuredOutput are not among these
    only_tools: frozenset[str] | None = None

    def __post_init__(self) -> None:
        self.model = resolve_model(self.model).id
        self.cwd = Path(self.cwd).resolve()
        # a client given to the agent is the caller's, maybe shared by many agents: closing it when
        # one of them ends would break the others' calls in flight
        self._owns_client = self.model_client is None
        self._loop: AgentLoop | None = None
        self._judge: GoalJudge | None = None
        self._goal_armed = False
        self._goal_baseline: dict[str, str] | None = None
        self._session = "new"  # -> "started" (SessionStart fired) -> "ended" (SessionEnd fired)
        self._session_env: dict[str, str] = {}  # what SessionStart hooks put in CLAUDE_ENV_FILE (app.envfile)
        self._mcp: Any = None  # loopwright.mcp.servers.McpServers, once started
        self._subs: Any = None  # loopwright.agents.runner.Subagents, once the Agent tool is offered
        self._auto: Any = None  # engine.automode.AutoClassifier: one per session, its counts kept across turns
        self._set_aside: tuple[str, ...] = ()  # the allow rules auto mode sets aside, as last said
        if self.output_schema is not None:
            from ..capabilities.structured import StructuredAnswer

            StructuredAnswer(self.output_schema)  # a schema that cannot be enforced fails here, before any call
        if self.sandbox is None:
            self.sandbox = SandboxConfig()
        self.permissions = sandboxing.with_strictness(self.permissions, self.sandbox)
        self._refuse_root_bypass()
        if self.skills is not None or self.plugins:
            from ..context import reading_grants

            grants = tuple(g for g in reading_grants(self.skills, self.plugins) if g not in self.permissions.allow)
            self.permissions = replace(self.permissions, allow=self.permissions.allow + grants)

    def _client(self) -> Model:
        if self.model_client is None:
            from ..providers.routing import ModelRouter

            router = ModelRouter(os.environ, self.env_origins)
            router.client_for(self.model)  # a missing key is said now, before the run starts
            self.model_client = router
        return self.model_client

    def _subagents(self) -> Any:
        if self._subs is None:
            from ..agents.runner import Subagents

            self._subs = Subagents(self)
        return self._subs

    def _classifier(self) -> Any:
        if normalise_mode(self.permissions.mode) != "auto":
            return None
        if self._auto is None:
            from ..engine.automode import classifier_for

            self._auto = classifier_for(self._client(), self.model, self.classifier_model, self.memory, self._tools())
        return self._auto

    def _tools(self) -> Sequence[Tool]:
        if self.tools is None:
            from ..tools import builtin_tools

            self.tools = builtin_tools(sandbox=self.sandbox_config())
        return self.tools

    def sandbox_config(self) -> SandboxConfig | None:
        """The sandbox, with the permission rules' added directories writable inside it too."""
        return sandboxing.configured(self.sandbox, self.permissions, self.cwd, self.plugins)

    def _refuse_root_bypass(self) -> None:
        sandboxing.refuse_root_bypass(self.permissions.mode, self.sandbox)

    def system(self) -> str:
        base = self.system_prompt if self.system_prompt is not None else default_system_prompt(self.cwd)
        if self.output_schema is not None:
            base += "\n\nThis task ends when you call StructuredOutput with the final answer, matching its schema."
        return f"{base}\n\n{self.append_system_prompt}".strip() if self.append_system_prompt else base

    def set_goal(self, spec: GoalSpec | None, baseline: dict[str, str] | None = None) -> None:
        """Set (or with None clear) the session's goal; a new goal replaces the old one.
        `baseline`: protected-file fingerprints recorded earlier (a resumed goal)."""
        self.goal, self._judge, self._goal_armed, self._goal_baseline = spec, None, False, baseline

    def _goal_judge(self, emit: Callable[[Event], None]) -> GoalJudge | None:
        return loopbuild.goal_judge(self, emit)

    def _child_environment(self) -> dict[str, str]:
        from ..core.environ import child_env

        return (dict(self.child_env) if self.child_env is not None else child_env()) | self._session_env

    def _writable_roots(self) -> tuple[str, ...]:
        return sandboxing.writable_roots(self.cwd, self.permissions)

    def _check_wrapper(self) -> Callable[[str], list[str]] | None:
        """Goal checks run in the Bash sandbox when it is on and works here."""
        return sandboxing.check_wrapper(self.sandbox_config(), self.cwd, self._writable_roots())

    def background_tasks(self) -> list[dict[str, Any]]:
        """The session's background shells still running: `id`, `description`, `command`."""
        work = self._background() if self.tools is not None else None
        return work.running() if work is not None else []

    def _background(self) -> Any:
        from ..tools import background_work

        return background_work(self._tools())

    def _hooks(self, emit: Callable[[Event], None]) -> HookRunner:
        return loopbuild.run_hooks(self, emit)

    def _hook_payload(self, event: HookEvent) -> dict[str, Any]:
        return {"session_id": self.session_id, "transcript_path": self.transcript_path, "cwd": str(self.cwd),
                "permission_mode": self.permissions.mode, "hook_event_name": event}

    def _build(self, emit: Callable[[Event], None], turn: Any = None) -> AgentLoop:
        return loopbuild.build_loop(self, emit, turn)

    async def run(self, prompt: str, *, on_event: Callable[[Event], None] | None = None) -> RunResult:
        """Run one prompt to its result. The conversation carries over to the next `run`."""
        await self._start_mcp()
        turn = await self._typed(prompt)  # `/name args`: a command's prompt, grants and model
        loop = self._build(self._emitter(on_event), turn)
        self._loop = loop
        try:
            try:
                notices: list[Event] = []  # what the opening found, said after system/init
                opening = await self._start_session(loop.hooks, notices.append)
                loop.add_env(self._session_env)
                for message in opening:  # recorded, so a resume keeps what SessionStart added
                    loop.emit(UserMessage(message, synthetic=False))
            except Exception as exc:  # the loop's last resort, for what comes before the loop
                if isinstance(exc, LoopwrightError) or reader_gone(exc):
                    raise
                result = loop.crashed(exc)
                loop.emit(ResultEvent(result))
            else:
                if self.checkpoints is not None:
                    self.checkpoints.begin()  # the prompt's record opens its checkpoint
                result = await loop.run([*self.history, *opening, Message.user(turn.prompt)], notices)
        finally:
            self._loop = None
        self.history = list(result.messages)
        return result

    async def stream(self, prompt: str) -> AsyncIterator[Event]:
        """Yield every event of the run; the last one is a `ResultEvent`."""
        queue: asyncio.Queue[Event | None] = asyncio.Queue()
        task = asyncio.ensure_future(self.run(prompt, on_event=queue.put_nowait))
        task.add_done_callback(lambda _: queue.put_nowait(None))  # wakes us if the run raised
        try:
            while (event := await queue.get()) is not None:
                yield event
                if isinstance(event, ResultEvent):
                    break
            await task
        finally:
            if not task.done():
                task.cancel()

    async def _start_session(self, hooks: HookRunner, emit: Callable[[Event], None]) -> list[Message]:
        return await sessionstart.start_session(self, hooks, emit)

    async def _session_start_hooks(self, hooks: Any, emit: Callable[[Event], None]) -> Any:
        return await sessionstart.session_start_hooks(self, hooks, emit)

    async def end_session(self, reason: str = "other", *, on_event: Callable[[Event], None] | None = None) -> None:
        """Fire SessionEnd (`reason`: other, prompt_input_exit, clear, logout, resume), once, if
        the session started. The CLI calls it when a headless run ends."""
        await sessionstart.end_session(self, reason, on_event=on_event)

    async def compact(self, *, on_event: Callable[[Event], None] | None = None, focus: str = "") -> bool:
        """Summarise the older conversation now (like `/compact [focus]`); the last exchanges are
        kept word for word. False when there is too little to compact or the summary call failed."""
        loop = self._build(self._emitter(on_event))
        loop.messages = list(self.history)
        done = await loop.compact("manual", focus)
        if done:
            self.history = list(loop.messages)
        return done

    def _emitter(self, on_event: Callable[[Event], None] | None) -> Callable[[Event], None]:
        """The recorder first, then the caller: an event is on disk before anyone shows it."""
        recorder, observer, show = self.recorder, self.observer, on_event or (lambda e: None)
        if recorder is None and observer is None:
            return show
        if recorder is None:
            assert observer is not None

            def watched(event: Event) -> None:
                observer(event)
                show(event)

            return watched

        def emit(event: Event) -> None:
            recorder(event)
            if self.checkpoints is not None and isinstance(event, UserMessage) and not event.synthetic:
                self.checkpoints.prompt(recorder.last_uuid)
            if observer is not None:
                observer(event)
            show(event)

        return emit

    def restart_session(self) -> None:
        """After the CLI opened another session on this agent (`/clear`, `/resume`): its
        SessionStart fires with the next prompt, as for a new start."""
        self._session = "new"

    def interrupt(self) -> None:
        """Abort the running prompt: tools are cancelled and the result says `aborted`."""
        if self._loop is not None:
            self._loop.interrupt()

    def run_sync(self, prompt: str) -> RunResult:
        import anyio

        return anyio.run(self.run, prompt)

    async def aclose(self) -> None:
        """End the session's background shells and close the model client the agent made (one
        passed as `model_client` is the caller's to close)."""
        work = self._background() if self.tools is not None else None
        if work is not None:
            await work.stop_all()
        if self._mcp is not None:
            await self._mcp.aclose()
        if self.model_client is not None and self._owns_client:
            await self.model_client.aclose()

    async def _start_mcp(self) -> None:
        await prompting.start_mcp(self)

    async def _typed(self, prompt: str) -> Any:
        return await prompting.typed(self, prompt)

    async def attach_mentions(self, prompt: str) -> Any:
        """A typed prompt with the files its `@path`s name attached, under the Read rules
        (`context.mentions`); `UsageError` when one may not be read."""
        return await prompting.attach_mentions(self, prompt)

    def _shell(self, rules: PermissionRules) -> Any:
        return prompting.shell(self, rules)

    async def _mcp_prompt(self, text: str) -> str:
        return await prompting.mcp_prompt(self, text)
