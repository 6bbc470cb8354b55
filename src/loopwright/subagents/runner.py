"""The subagents of one agent: each call of the `Agent` tool fires SubagentStart, then runs a
child agent built like its parent (its own loop, fresh context, narrowed tools, the same rules
and hooks), recorded in a sidechain transcript beside the session's; nesting is bounded, and
what every child spent is counted as the parent's (`usageByRole.subagents`, the budget)."""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path
from typing import Any, Callable

from ..core.errors import UsageError
from ..core.events import Event, HookResponse, HookStarted, ModelUsage, Notice, RunResult
from ..core.fastclass import dataclass
from ..core.types import ModelText
from ..core.ports import CURRENT_TOOL_USE_ID, HookRunner, NoHooks
from ..policy.budget import Budget
from .definitions import APPENDIX, AgentDef
from .tool import AgentTool

MAX_DEPTH = 3  # subagent levels below the main agent
START_CONTEXT = "SubagentStart hook additional context: "


@dataclass(frozen=True, slots=True)
class Sidechain:
    """Who a subagent is, for its hooks: its id and type, its own transcript (empty when the
    session is not recorded), and what its SubagentStart hooks answered."""

    agent_id: str
    agent_type: str
    transcript_path: str = ""
    context: tuple[str, ...] = ()  # SubagentStart's additionalContext, given beside the task
    allows: Callable[[str], bool] | None = None  # which of the parent's MCP tools it gets (its definition's list)

    def fields(self) -> dict[str, Any]:
        return {"agent_id": self.agent_id, "agent_type": self.agent_type,
                "agent_transcript_path": self.transcript_path, "context": self.context}


def new_agent_id() -> str:
    return "a" + os.urandom(8).hex()  # 17 characters, as Claude Code's agent ids


class Subagents:
    """`parent` is the launching agent's `loopwright.Run`; each child is a `Run` of an agent made
    from the parent's (`Agent.replace`), on a session of its own, inside the parent's run."""

    def __init__(self, parent: Any, max_depth: int = MAX_DEPTH) -> None:
        self.parent, self.max_depth = parent, max_depth
        self.usage: dict[str, ModelUsage] = {}
        self.live: dict[int, Any] = {}  # the children running now, by id()
        self.hooks: HookRunner = NoHooks()
        self.emit: Callable[[Event], None] = lambda event: None

    def tool(self, hooks: HookRunner, emit: Callable[[Event], None]) -> AgentTool | None:
        """The `Agent` tool of one run (`hooks`: the run's, for SubagentStart; `emit`: where the
        subagents' hook events and warnings are said), unless this agent is at the deepest level
        allowed."""
        self.hooks, self.emit = hooks, emit
        agent = self.parent.agent
        return AgentTool(agent.agents, self.spawn) if agent.depth < self.max_depth else None

    async def spawn(self, agent: AgentDef, prompt: str, model: str | None,
                    isolation: str | None = None) -> tuple[str, bool]:
        """The `Agent` tool's call: the subagent's answer (and whether it failed); with
        `isolation: worktree`, run in a worktree of its own whose branch the answer names."""
        place, agent_id = None, new_agent_id()
        if isolation == "worktree":
            from ..workflows.worktrees import GitError  # git only for an isolated subagent

            try:
                place = Isolated.make(Path(self.parent.agent.cwd), agent_id)
            except (GitError, UsageError, OSError) as exc:
                return f"The subagent could not get a worktree of its own: {exc}", True
        try:
            result = await self.run(agent, prompt, model, cwd=place.cwd if place is not None else None,
                                    agent_id=agent_id)
        finally:
            kept = place.finish() if place is not None else ""  # a git failure here is the tool's error
        if result.is_error:
            why = "; ".join(result.errors) or result.terminal_reason
            return f"The subagent stopped before it finished ({why}). What it said last:\n\n{result.result}{kept}", True
        return (result.result or "(the subagent gave no answer)") + kept, False

    async def run(self, agent: AgentDef, prompt: str, model: str | None, *, output_schema: Any = None,
                  budget: Budget | None = None, cwd: Path | None = None, agent_id: str | None = None) -> RunResult:
        """One subagent run to its result (SubagentStart, its own loop and sidechain transcript);
        `output_schema`: its answer is structured output; `budget`: its own spending bound; `cwd`:
        where it works, if not where its parent does; `agent_id`: the id its worktree is named by, if
        it has one. What it spent is added to the parent's."""
        agent_id = agent_id or new_agent_id()
        session = self.parent.session
        sidechain = getattr(session.recorder, "sidechain", None)
        recorder = sidechain(agent_id) if sidechain is not None else None
        child = None
        try:
            where = recorder.log.location if recorder is not None else ""
            started = await self.hooks.run("SubagentStart", {
                "session_id": session.session_id, "transcript_path": session.transcript_path,
                "cwd": str(self.parent.agent.cwd), "hook_event_name": "SubagentStart", "agent_id": agent_id,
                "agent_type": agent.name}, match=agent.name)
            context = tuple(START_CONTEXT + c for c in started.additional_context)
            extra = {"output_schema": output_schema, **({"budget": budget} if budget is not None else {})}
            child = self._child(agent, model, Sidechain(agent_id, agent.name, where, context, agent.allows), recorder,
                                cwd, **extra)
            self.live[id(child)] = child
            result = await child.prompt(ModelText(prompt), on_event=self._forward)  # a task, never a /command
        finally:
            self.live.pop(id(child), None)
            if recorder is not None:
                recorder.close()
        for name, mu in result.model_usage.items():
            self.usage[name] = self.usage.get(name, ModelUsage()) + mu
        return result

    def workflow_runner(self) -> Any:
        """A workflow's `wf.agent(…)`: a general-purpose subagent (narrowed to the tools the call names),
        its structured answer with a schema, bounded by what is left of the workflow's budget."""
        from ..workflows.runtime import AgentCall, AgentOutcome
        from .definitions import builtins

        general = (self.parent.agent.agents or builtins()).get("general-purpose") or builtins()["general-purpose"]
        known = [t.name for t in self.parent.tools()]

        async def run_agent(call: AgentCall) -> AgentOutcome:
            unknown = [t for t in call.tools or () if t not in known]
            if unknown:
                return AgentOutcome("", is_error=True, why=f"unknown tool(s) {', '.join(unknown)}; expected names "
                                    f"from {', '.join(known)}")
            kind = general if call.tools is None else dataclasses.replace(general, tools=call.tools)
            bound = Budget(call.budget_usd) if call.budget_usd is not None else None
            try:
                result = await self.run(kind, call.prompt, call.model, output_schema=call.schema, budget=bound)
            except ValueError as exc:  # a schema that cannot be enforced, a model that does not exist
                return AgentOutcome("", is_error=True, why=str(exc))
            why = "; ".join(result.errors) or result.terminal_reason
            return AgentOutcome(result.result, result.structured_output, result.is_error, why,
                                result.terminal_reason == "budget_exhausted", result.total_cost_usd,
                                dict(result.model_usage))

        return run_agent

    def interrupt(self) -> None:
        """Every running child ends as aborted, with its result (and what it spent)."""
        for child in list(self.live.values()):
            child.interrupt()

    def _child(self, agent: AgentDef, model: str | None, who: Sidechain, recorder: Any, cwd: Path | None = None,
               **extra: Any) -> Any:
        """A subagent: a fresh context, the tools its definition names (of the parent's), the
        same client, rules, hooks, sandbox and environment; its own model if it or the call
        names one; the session's id and transcript path, its own recorder; the parent's MCP
        servers' tools as far as its definition allows."""
        run, p = self.parent, self.parent.agent  # their classes make the child's (agent/ sits above subagents/)
        tools = [t for t in run.tools() if agent.allows(t.name)]
        # telemetry follows the subagent as a child of the Agent tool call that started it
        watch = p.observer.child(who.agent_id, who.agent_type, CURRENT_TOOL_USE_ID.get()) if p.observer else None
        child = type(p)(model=model or agent.model or p.model, model_client=run.client(), tools=tools,
                        system_prompt=agent.prompt + APPENDIX, cwd=cwd or p.cwd, limits=p.limits,
                        permissions=p.permissions, sandbox=p.sandbox, child_env=p.child_env, clock=p.clock,
                        approver=p.approver, depth=p.depth + 1,
                        agents=agent.may_start(p.agents) if agent.allows("Agent") else None, crash_log=p.crash_log,
                        memory=p.memory.fork() if p.memory else None, hooks=p.hooks, subagent=who, observer=watch,
                        **extra)
        session = type(run.session)(session_id=run.session.session_id,
                                    transcript_path=run.session.transcript_path, recorder=recorder)
        return type(run)(child, session, parent=run)  # the parent's MCP servers, already running (the parent closes them)

    def _forward(self, event: Event) -> None:
        """A subagent's hook events and warnings reach the launching agent's output (the rest of
        what it does is in its sidechain transcript)."""
        if isinstance(event, (HookStarted, HookResponse)) or (isinstance(event, Notice) and event.level == "warning"):
            self.emit(event)

    def elsewhere(self) -> list[tuple[str, str, ModelUsage]]:
        """What the subagents spent, for the parent's result and budget."""
        return [("subagents", name, mu) for name, mu in self.usage.items()]


@dataclass
class Isolated:
    """A subagent's own worktree (`isolation: worktree`): started from the parent's working tree as
    it is, removed when the subagent changed nothing; otherwise kept, its work committed on its
    branch and named in the answer, never applied to the parent's files."""

    repo: Path
    path: Path
    branch: str
    base: str
    cwd: Path

    @classmethod
    def make(cls, cwd: Path, agent_id: str) -> "Isolated":
        from ..workflows import worktrees

        repo = worktrees.repo_root(cwd, "isolation: worktree")
        base = worktrees.snapshot(repo)
        path, branch = worktrees.private_root() / f"agent-{agent_id}", f"loopwright/agent-{agent_id}"
        worktrees.add(repo, path, branch, base)
        return cls(repo, path, branch, base, path / cwd.resolve().relative_to(repo.resolve()))

    def finish(self) -> str:
        from ..workflows import worktrees

        head = worktrees.commit_all(self.path, "loopwright subagent work")
        if head == self.base:
            worktrees.remove(self.repo, self.path)
            worktrees.delete_branch(self.repo, self.branch)
            return ""
        return (f"\n\n(The subagent worked in its own worktree: its changes are committed on branch {self.branch} "
                f"and are in {self.path}; they were not applied to your files.)")
