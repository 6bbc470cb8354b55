"""`Run`: an `Agent` at work on a `Session`. It builds each prompt's loop from the two, holds what
it opens for them (`Resources`: the model client it made, MCP servers, subagents, the auto-mode
classifier, the built-in tools' background shells) and closes it when it ends
(`async with agent.open(session) as run:`)."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any, AsyncIterator, Callable, Sequence

from ..core.errors import LoopwrightError, reader_gone
from ..core.events import Event, ResultEvent, RunResult, UserMessage
from ..core.ports import HookRunner, Model, Tool
from ..core.types import Message
from ..permissions.rules import PermissionRules
from . import loopbuild, prompting, sessionstart
from .resources import Resources

if TYPE_CHECKING:
    from ..engine.loop import AgentLoop
    from .session import Session
    from .spec import AgentSpec


class Run:
    """Prompts of one agent on one `Session`, sharing the run's resources between them.
    `prompt`/`stream` run one prompt (the session's history carries over), `interrupt` aborts
    the running one, `compact` summarises the history, `end_session` fires SessionEnd. Between
    prompts, `reconfigure`/`update` change the agent (`Agent.replace`) and `switch` the session."""

    def __init__(self, agent: AgentSpec, session: Session, *, parent: Run | None = None) -> None:
        """`parent`: the run a subagent's run works inside (its MCP servers and background shells
        are the parent's, theirs to close)."""
        self.session, self.parent = session, parent
        self.resources: Resources = Resources(agent, self, parent.resources if parent is not None else None)
        self._loop: AgentLoop | None = None

    @property
    def agent(self) -> AgentSpec:
        """The agent the next prompt runs as."""
        return self.resources.agent

    async def __aenter__(self) -> Run:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def start(self) -> None:
        """Connect the agent's MCP servers, once (each bounded by MCP_TIMEOUT, 30 s)."""
        await self.resources.start_mcp(self.child_environment())

    def reconfigure(self, agent: AgentSpec) -> None:
        """Run the next prompts as `agent` (another description of the same agent, from
        `agent.replace(…)`) on the same session and resources."""
        self.resources.reconfigure(agent)

    def update(self, **changes: Any) -> AgentSpec:
        """`reconfigure(self.agent.replace(**changes))`; the new description."""
        self.reconfigure(self.agent.replace(**changes))
        return self.agent

    def switch(self, session: Session) -> None:
        """Continue on another session (`/clear`, `/resume`): its SessionStart fires with the next prompt."""
        self.session = session

    def client(self) -> Model:
        return self.resources.client()

    def tools(self) -> Sequence[Tool]:
        return self.resources.tools()

    def background_tasks(self) -> list[dict[str, Any]]:
        """The session's background shells still running: `id`, `description`, `command`."""
        work = self.resources.background()
        return work.running() if work is not None else []

    def child_environment(self) -> dict[str, str]:
        return self.agent.environment(self.session.env)

    def hooks(self, emit: Callable[[Event], None]) -> HookRunner:
        return loopbuild.run_hooks(self.agent, self.session, self.resources, emit)

    def shell(self, rules: PermissionRules) -> Any:
        """Where the shell steps of a typed command run (`app.prompting.shell`)."""
        return prompting.shell(self.agent, self.session, self.resources, rules)

    # -- prompts ----------------------------------------------------------------------------

    async def prompt(self, prompt: str, *, on_event: Callable[[Event], None] | None = None) -> RunResult:
        """Run one prompt to its result; the session's history then holds it."""
        await self.start()
        agent, session, parts = self.agent, self.session, self.resources
        turn = await prompting.typed(agent, session, parts, prompt)  # `/name args`: a command's prompt, grants and model
        loop = loopbuild.build_loop(agent, session, parts, self.emitter(on_event), turn)
        self._loop = loop
        try:
            try:
                notices: list[Event] = []  # what the opening found, said after system/init
                opening = await sessionstart.start_session(agent, session, loop.hooks, notices.append)
                loop.add_env(session.env)
                for message in opening:  # recorded, so a resume keeps what SessionStart added
                    loop.emit(UserMessage(message, synthetic=False))
            except Exception as exc:  # the loop's last resort, for what comes before the loop
                if isinstance(exc, LoopwrightError) or reader_gone(exc):
                    raise
                result = loop.crashed(exc)
                loop.emit(ResultEvent(result))
            else:
                if session.checkpoints is not None:
                    session.checkpoints.begin()  # the prompt's record opens its checkpoint
                result = await loop.run([*session.history, *opening, Message.user(turn.prompt)], notices)
        finally:
            self._loop = None
        session.history = list(result.messages)
        return result

    async def stream(self, prompt: str) -> AsyncIterator[Event]:
        """Yield every event of one prompt; the last one is a `ResultEvent`."""
        queue: asyncio.Queue[Event | None] = asyncio.Queue()
        task = asyncio.ensure_future(self.prompt(prompt, on_event=queue.put_nowait))
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

    def interrupt(self) -> None:
        """Abort the running prompt: tools are cancelled and the result says `aborted`."""
        if self._loop is not None:
            self._loop.interrupt()

    async def compact(self, *, on_event: Callable[[Event], None] | None = None, focus: str = "") -> bool:
        """Summarise the older conversation now (like `/compact [focus]`); the last exchanges are
        kept word for word. False when there is too little to compact or the summary call failed."""
        loop = loopbuild.build_loop(self.agent, self.session, self.resources, self.emitter(on_event))
        loop.messages = list(self.session.history)
        done = await loop.compact("manual", focus)
        if done:
            self.session.history = list(loop.messages)
        return done

    async def attach_mentions(self, prompt: str) -> Any:
        """A typed prompt with the files its `@path`s name attached, under the Read rules
        (`context.mentions`); `UsageError` when one may not be read."""
        return await prompting.attach_mentions(self.shell(self.agent.permissions), prompt)

    async def start_session(self, emit: Callable[[Event], None]) -> list[Message]:
        """The session's opening (memory files, skills, what SessionStart hooks add), once: what
        the first prompt would bring; [] when it opened already. A workflow run in the
        conversation opens it this way (`cli.workflowturn`)."""
        return await sessionstart.start_session(self.agent, self.session, self.hooks(emit), emit)

    async def end_session(self, reason: str = "other", *, on_event: Callable[[Event], None] | None = None) -> None:
        """Fire SessionEnd (`reason`: other, prompt_input_exit, clear, logout, resume), once, if
        the session started."""
        await sessionstart.end_session(self.session, self.hooks(self.emitter(on_event)), self.agent, reason)

    def emitter(self, on_event: Callable[[Event], None] | None) -> Callable[[Event], None]:
        """The session's recorder first, then the agent's observer, then the caller: an event is
        on disk before anyone shows it."""
        session = self.session
        recorder, observer, show = session.recorder, self.agent.observer, on_event or (lambda e: None)
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
            if session.checkpoints is not None and isinstance(event, UserMessage) and not event.synthetic:
                session.checkpoints.prompt(recorder.last_uuid)  # type: ignore[attr-defined]
            if observer is not None:
                observer(event)
            show(event)

        return emit

    async def aclose(self) -> None:
        """Close what the run opened (`Resources.aclose`); a client given to the agent is the
        caller's to close."""
        await self.resources.aclose()
