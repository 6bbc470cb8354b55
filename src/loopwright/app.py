"""Composition for library users: `Agent` wires a model, tools, limits and permissions into
the loop. `await agent.run("…")` returns a `RunResult`; `agent.stream("…")` yields events."""

from __future__ import annotations

import asyncio
import os
import uuid
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path
from typing import Any, AsyncIterator, Callable, Sequence

from .events import Event, ResultEvent, RunResult
from .loop import AgentLoop, LoopConfig, StopHook
from .policy.budget import Budget
from .policy.models import DEFAULT_MODEL, resolve_model
from .policy.permissions import PermissionRules
from .policy.stop import Limits
from .goal import GoalJudge, GoalSpec
from .ports import Approver, HookRunner, Model, NoHooks, Tool, Workspace
from .types import Message

DEFAULT_SYSTEM_PROMPT = """\
You are loopwright, an agent that finishes software tasks by working with tools. \
You work in {cwd}. Inspect before you change: read files and run commands to learn what is \
there, make focused edits, and check your work (run the tests or the program) before you say \
you are done. If a tool call fails, read the error and adjust instead of repeating it. \
When the task is complete, answer with a short summary of what you changed and how you checked it. \
Today's date is {today}."""


def default_system_prompt(cwd: Path) -> str:
    return DEFAULT_SYSTEM_PROMPT.format(cwd=cwd, today=date.today().isoformat())


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
    limits: Limits = field(default_factory=Limits)
    budget: Budget = field(default_factory=Budget)
    permissions: PermissionRules = field(default_factory=PermissionRules)
    stop_hooks: Sequence[StopHook] = ()
    hooks: HookRunner | None = None
    goal: GoalSpec | None = None
    workspace: Workspace | None = None
    evaluator_client: Model | None = None
    approver: Approver | None = None
    transcript_path: str = ""
    include_partial: bool = False
    final_turn: bool = False
    session_id: str = field(default_factory=lambda: str(uuid.uuid4()))
    clock: Any = None
    history: list[Message] = field(default_factory=list)
    recorder: Callable[[Event], None] | None = None  # a session's Recorder: sees every event first

    def __post_init__(self) -> None:
        self.model = resolve_model(self.model).id
        self.cwd = Path(self.cwd).resolve()
        self._loop: AgentLoop | None = None
        self._judge: GoalJudge | None = None
        self._goal_armed = False

    def _client(self) -> Model:
        if self.model_client is None:
            from .providers.anthropic import AnthropicModel

            self.model_client = AnthropicModel.from_env(os.environ)
        return self.model_client

    def _tools(self) -> Sequence[Tool]:
        if self.tools is None:
            from .tools import builtin_tools

            self.tools = builtin_tools()
        return self.tools

    def system(self) -> str:
        base = self.system_prompt if self.system_prompt is not None else default_system_prompt(self.cwd)
        return f"{base}\n\n{self.append_system_prompt}".strip() if self.append_system_prompt else base

    def set_goal(self, spec: GoalSpec | None) -> None:
        """Set (or with None clear) the session's goal; a new goal replaces the old one."""
        self.goal, self._judge, self._goal_armed = spec, None, False

    def _goal_judge(self, emit: Callable[[Event], None]) -> GoalJudge | None:
        if self.goal is None:
            return None
        if self._judge is None:
            from .clock import SystemClock
            from .tools.workspace import LocalWorkspace

            self._judge = GoalJudge(self.goal, self.evaluator_client or self._client(),
                                    self.workspace or LocalWorkspace(self.cwd), self.clock or SystemClock())
        self._judge.emit = emit
        if not self._goal_armed:
            self._judge.start()
            self._goal_armed = True
        else:
            self._judge.new_run()
        return self._judge if self._judge.active else None

    def _build(self, emit: Callable[[Event], None]) -> AgentLoop:
        config = LoopConfig(
            model=self.model, cwd=self.cwd, session_id=self.session_id, system=self.system(),
            tools=self._tools(), limits=self.limits, budget=self.budget, permissions=self.permissions,
            include_partial=self.include_partial, stop_hooks=self.stop_hooks, final_turn=self.final_turn,
            hooks=self.hooks or NoHooks(), approver=self.approver, transcript_path=self.transcript_path,
            goal=self._goal_judge(emit),
        )
        return AgentLoop(self._client(), config, emit=emit, clock=self.clock)

    async def run(self, prompt: str, *, on_event: Callable[[Event], None] | None = None) -> RunResult:
        """Run one prompt to its result. The conversation carries over to the next `run`."""
        loop = self._build(self._emitter(on_event))
        self._loop = loop
        try:
            result = await loop.run([*self.history, Message.user(prompt)])
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

    async def compact(self, *, on_event: Callable[[Event], None] | None = None) -> bool:
        """Summarise the older conversation now (like `/compact`); the last exchanges are kept
        word for word. False when there is too little to compact or the summary call failed."""
        loop = self._build(self._emitter(on_event))
        loop.messages = list(self.history)
        done = await loop.compact("manual")
        if done:
            self.history = list(loop.messages)
        return done

    def _emitter(self, on_event: Callable[[Event], None] | None) -> Callable[[Event], None]:
        """The recorder first, then the caller: an event is on disk before anyone shows it."""
        recorder, show = self.recorder, on_event or (lambda e: None)
        if recorder is None:
            return show

        def emit(event: Event) -> None:
            recorder(event)
            show(event)

        return emit

    def interrupt(self) -> None:
        """Abort the running prompt: tools are cancelled and the result says `aborted`."""
        if self._loop is not None:
            self._loop.interrupt()

    def run_sync(self, prompt: str) -> RunResult:
        import anyio

        return anyio.run(self.run, prompt)

    async def aclose(self) -> None:
        if self.model_client is not None:
            await self.model_client.aclose()
