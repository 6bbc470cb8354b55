"""A workflow run inside a live conversation: the interactive terminal's `/NAME args`, and a
routine item's `workflow:` (its item, goal and routine given to the script as `wf.item`,
`wf.goal`, `wf.routine`; a resumed item replays its finished steps). The
conversation is opened first if it was not (memory files, SessionStart), the workflow runs with
its agents as subagents of the session, and only the call and the final answer join the
conversation (and its transcript); the agents' own work stays in their sidechains and journal."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

from ..core.events import AssistantMessage, Event, ResultEvent, RunResult, UserMessage
from ..core.types import Message, TextBlock, Usage

if TYPE_CHECKING:
    from ..agent.run import Run
    from ..workflows.runtime import Run as WorkflowRun


class InConversation:
    """One `/NAME args`: `await it(emit, on_status)` runs it; `stop()` interrupts it (the running
    agents end as aborted, no other starts)."""

    def __init__(self, live: Run, name: str, args: list[str], *, context: dict[str, Any] | None = None,
                 resume: bool = False) -> None:
        """`live`: the conversation's run. `resume`: carry on the unfinished run of
        this workflow the session's journal holds."""
        self.live, self.name, self.args, self.context, self.resume = live, name, args, context, resume
        self.run: WorkflowRun | None = None  # the workflow's run, once started
        self.task: asyncio.Task[Any] | None = None

    def stop(self) -> None:
        if self.run is not None:
            self.run.abort()
            if self.task is not None and not self.run.running:
                self.task.cancel()

    async def __call__(self, on_event: Callable[[Event], None], on_status: Callable[[dict[str, Any]], None]) -> RunResult:
        from ..workflows.journal import Journal
        from ..workflows.runtime import Run, run_workflow
        from ..workflows.scripts import find, load, loader
        from .commands.workflow import _result, session_journal

        live = self.live
        agent, session, plugins = live.agent, live.session, list(live.agent.plugins)
        emit = live.emitter(on_event)  # the transcript first, then the screen
        script = find(self.name, Path(agent.cwd), Path.home(), plugins)
        if script is None:
            from ..core.errors import UsageError
            from ..workflows.scripts import available

            names = ", ".join(available(Path(agent.cwd), Path.home(), plugins)) or "none"
            raise UsageError(f"workflow {self.name!r} not found (workflows: {names})")
        main = load(script)  # a bad file: one error, nothing joins the conversation
        await self._open(emit)
        journal = Journal(session_journal(session))
        header = journal.header or {}
        resuming = self.resume and journal.finished is None and header.get("name") == self.name
        if resuming:
            self.args = list(header.get("args") or [])
        elif journal.header is not None:  # this session ran a workflow before: its journal is kept aside
            journal.set_aside()
        said = Message.user(" ".join(["/" + self.name, *self.args]))
        if not resuming:  # a resumed run's call is in the conversation already
            emit(UserMessage(said, synthetic=False))
        journal.start(self.name, self.args, str(script.path))
        subs = live.resources.subagents()
        subs.tool(live.hooks(emit), emit)
        limit = agent.budget.max_budget_usd  # the session's --max-budget-usd bounds its agents
        limit = limit if isinstance(limit, (int, float)) and limit != float("inf") else None
        self.run = Run(journal, subs.workflow_runner(), budget_usd=limit, on_status=on_status, load=loader(Path(agent.cwd), Path.home(),
                       plugins), stop_agents=subs.interrupt, context=self.context)
        started = time.monotonic()
        self.task = asyncio.ensure_future(run_workflow(self.run, self.name, main, self.args))
        outcome = await self.task
        result = _result(session.session_id, self.run, outcome, started, journal)
        answer = result.result or "; ".join(result.errors) or "(no answer)"
        reply = Message("assistant", (TextBlock(answer),))
        emit(AssistantMessage(reply, "workflow", "end_turn", Usage(), id="wf_" + result.session_id[:8],
                              turn=1))
        emit(ResultEvent(result))
        session.history = [*session.history, *([] if resuming else [said]), reply]
        return result

    async def _open(self, emit: Callable[[Event], None]) -> None:
        """The conversation's opening, as its first prompt would bring it, when nothing opened it yet."""
        opening = await self.live.start_session(emit)  # [] once it opened
        for message in opening:
            emit(UserMessage(message, synthetic=False))
        self.live.session.history = [*self.live.session.history, *opening]
