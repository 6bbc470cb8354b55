"""The interactive session itself, whatever draws it: read a line (or an idle `/loop` firing),
run a command or a turn, keep the status, switch sessions for `/clear` and `/resume`. A front
end (plain lines, or prompt_toolkit and rich) reads, shows and asks."""

from __future__ import annotations

import asyncio
import signal
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from ...core.errors import LoopwrightError
from ...core.events import Event, RunResult
from ...compose.render import visible
from .commands import is_command, run_command
from .idle import Fire, IdleLoop
from .status import Status

if TYPE_CHECKING:
    from ...agent.run import Run
    from ...session.opening import OpenedSession


class Room:
    """`live`: the session's run (its agent, replaced by the commands that change
    it, and its session, switched by `/clear` and `/resume`); `session`: the opened store session."""

    def __init__(self, live: Run, opts: Any, session: OpenedSession, front: Any) -> None:
        self.live, self.opts, self.session, self.front = live, opts, session, front
        self.status = Status(live)
        self.loop = IdleLoop(self)
        self.leaving = False
        self.running: asyncio.Task[RunResult] | None = None
        self.stopping: Any = None  # how to stop what runs when it is not a turn (a workflow)
        front.attach(self)

    @property
    def agent(self) -> Any:
        """The agent the next prompt runs as (read it; change it with `live.update`)."""
        return self.live.agent

    def say(self, text: str) -> None:
        self.front.say(text)

    def show(self, event: Event) -> None:
        self.status.seen(event)
        self.front.show(event)

    async def pick(self, title: str, choices: list[str]) -> int | None:
        return await self.front.pick(title, choices)

    def interrupt(self) -> bool:
        """Stops the running turn; False when none runs."""
        if self.running is not None and not self.running.done():
            (self.stopping or self.live.interrupt)()
            return True
        return False

    async def switch(self, resume: str | None) -> None:
        """A new conversation (`/clear`) or another of this folder's sessions (`/resume`)."""
        from ..core import open_run_session

        await self.live.end_session("resume" if resume else "clear", on_event=self.show)
        opts = replace(self.opts, resume=resume, continue_session=False, fork_session=False, session_id=None)
        old = self.session
        try:
            self.session, conversation = open_run_session(opts, self.agent,
                                                          checkpoints=self.live.session.checkpoints is not None)
        except BaseException:
            self.live.session.restart()  # failed: the old session goes on, and starts again
            raise
        self.live.switch(conversation)  # a new Session: no goal, its SessionStart with the next prompt
        if self.agent.skills is not None:  # `${CLAUDE_SESSION_ID}` names the session switched to
            self.live.update(skills=self.agent.skills.for_session(conversation.session_id))
        old.close()
        if self.loop.prompt is not None:
            self.loop.stop("the session changed")
        self.status.turn, self.status.context_tokens, self.status.verdict = 0, 0, ""
        what = f"resumed {conversation.session_id} ({len(conversation.history)} messages)" if resume else \
            f"new conversation · session {conversation.session_id}"
        self.say(what)

    async def main(self, first: str | None) -> int:
        loop = asyncio.get_running_loop()
        loop.add_signal_handler(signal.SIGINT, self._on_sigint)
        try:
            if first and first.strip():
                await self.handle(first.strip())
            while not self.leaving:
                got = await self.front.read(self.loop.due_in)
                if got is None:
                    break
                if isinstance(got, Fire):
                    if (prompt := self.loop.fire()) is not None:
                        await self.turn(prompt)
                    continue
                if got.strip():
                    await self.handle(got.strip())
            await self.live.end_session("prompt_input_exit", on_event=self.show)
            return 0
        finally:
            loop.remove_signal_handler(signal.SIGINT)
            self.front.close()
            await self.live.aclose()

    async def handle(self, line: str) -> None:
        head = line.split(maxsplit=1)[0]
        if head.startswith("/") and not is_command(line):
            from ..commands.workflow import slash_workflow

            if (called := slash_workflow(line, plugins=list(self.agent.plugins))) is not None:
                await self.workflow(*called)
                return
        skills = self.agent.skills.found if self.agent.skills is not None else {}
        if (head.startswith("/") and "/" not in head[1:] and not is_command(line) and head[1:] not in skills
                and not head.startswith("/mcp__")):
            self.say(f"unknown command {head}: /help lists them")  # a path such as /usr/bin goes as a prompt
            return
        if line.startswith("/") and is_command(line):
            try:
                prompt = await run_command(self, line)
            except LoopwrightError as exc:  # e.g. /resume of a session another process holds
                self.say(visible(f"error: {exc}"))
                return
            if prompt is not None:
                await self.turn(prompt)
        elif head[1:] in skills or head.startswith("/mcp__"):
            await self.turn(line)  # a custom command: the `@file`s of its body are attached as it starts
        else:
            try:
                mentioned = await self.live.attach_mentions(line)
            except LoopwrightError as exc:
                self.say(visible(f"error: {exc}"))
                return
            for path in mentioned.attached:
                self.say(visible(f"@ attached {path}"))
            await self.turn(mentioned.prompt)

    async def turn(self, prompt: str) -> None:
        self.running = asyncio.ensure_future(self.live.prompt(prompt, on_event=self.show))
        try:
            with self.front.watching():
                result = await self.running
        finally:
            self.running = None
        if (closing := closing_line(result)) is not None:
            self.say(visible(closing))
        self.loop.ended(result)

    async def workflow(self, name: str, args: list[str]) -> None:
        """`/NAME args` naming a workflow: it runs here, its progress said as it changes, and only
        the call and its final answer join the conversation."""
        from ..commands.workflow import status_line
        from ..workflowturn import InConversation

        run = InConversation(self.live, name, args)
        last: list[tuple[Any, ...]] = [()]

        def progress(status: dict[str, Any]) -> None:
            key = (status["phase"], status["running"], status["done"], status.get("message"))
            if key != last[0]:  # said when something other than the spend changed
                last[0] = key
                self.say(visible(status_line(status)))

        self.running, self.stopping = asyncio.ensure_future(run(self.show, progress)), run.stop
        try:
            with self.front.watching():
                result = await self.running
        except LoopwrightError as exc:  # a workflow file that cannot be used
            self.say(visible(f"error: {exc}"))
            return
        finally:
            self.running, self.stopping = None, None
        if result.is_error and (closing := closing_line(result)) is not None:
            self.say(visible(closing))

    def _on_sigint(self) -> None:
        if not self.interrupt():
            self.front.ctrl_c()


def closing_line(result: RunResult) -> str | None:
    """What to print after a turn: the answer was shown as it came, so only a stop, an error or a
    structured answer needs saying."""
    if result.terminal_reason == "aborted":
        return "Interrupted by you. What should it do instead?"
    if result.is_error:
        return "Error: " + "; ".join(result.errors or [result.terminal_reason])
    if result.structured_output is not None:
        from ...compose.render import dumps

        return dumps(result.structured_output)
    return None
