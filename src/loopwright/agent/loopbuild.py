"""How a `Run` builds the loop of one prompt from its agent and session: the agent's tools; the
run's capabilities (Skill, MCP servers' tools, subagents, structured output, memory, checkpoints,
the goal, then the agent's own), which add their tools and system text; the `LoopConfig`. Its
hooks are bound to the run's emitter on the way."""

from __future__ import annotations

import functools
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, cast

from ..core.events import Event
from ..core.ports import HookRunner, NoHooks
from ..engine.capability import Capability, with_contributions
from ..engine.loop import AgentLoop
from ..engine.loopconfig import LoopConfig
from ..policy.models import resolve_model
from . import sandboxing

if TYPE_CHECKING:
    from ..engine.goal import GoalJudge
    from .resources import Resources
    from .session import Session
    from .spec import AgentSpec


def build_loop(agent: AgentSpec, session: Session, parts: Resources, emit: Callable[[Event], None],
               turn: Any = None) -> AgentLoop:
    """One prompt's loop, in three steps: the agent's tools, the run's capabilities (with the
    tools and system text they add), the `LoopConfig`."""
    outfit = agent.outfitted()
    emit = sandboxing.with_notice(agent.sandbox, emit, outfit)
    rules = replace(agent.permissions, allow=agent.permissions.allow + turn.allow) if turn else agent.permissions
    emit = _set_aside_notice(agent, parts, rules, emit)
    if parts.mcp is not None:  # system/init carries the servers' status
        emit = parts.mcp.reporting(emit)
    hooks, approver = run_hooks(agent, session, parts, emit), agent.approver
    if approver is not None and hasattr(hooks, "notify"):  # Notification hooks hear about the ask
        from ..hooks import HookRunner as Runner, NotifyingApprover

        approver = NotifyingApprover(approver, cast(Runner, hooks), lambda: session.hook_payload(agent, "Notification"))
    # tools: the agent's own (or the built-in ones), then what each capability adds, in order
    capabilities = capabilities_of(agent, session, parts, hooks, emit)
    tools, system = with_contributions(parts.tools(), agent.system(), capabilities)
    # config
    config = LoopConfig(
        model=resolve_model(turn.model).id if turn and turn.model else agent.model, cwd=agent.cwd,
        session_id=session.session_id, system=system,
        tools=agent.tool_steps(list(tools)) if agent.tool_steps is not None else tools,
        limits=agent.limits, budget=agent.budget, permissions=rules,
        include_partial=agent.include_partial, stop_hooks=tuple(agent.stop_hooks), final_turn=agent.final_turn,
        capabilities=capabilities,
        hooks=hooks, approver=approver, classifier=parts.classifier(), transcript_path=session.transcript_path,
        writable_roots=tuple(Path(r) for r in agent.writable_roots()),
        background_tasks=getattr(parts.background(), "running", list), child_env=agent.environment(session.env),
        crash_log=agent.crash_log or outfit.crash_log,
        subagent=agent.subagent.fields() if agent.subagent is not None else None,
        expansion=turn.expansion if turn is not None else None,
        settle=getattr(session.recorder, "settle", None),
    )
    return AgentLoop(parts.client(), config, emit=emit, clock=agent.clock)


def capabilities_of(agent: AgentSpec, session: Session, parts: Resources, hooks: HookRunner,
                    emit: Callable[[Event], None]) -> list[Capability]:
    """The run's capabilities, from the agent's configuration and the session, then the agent's
    own (`Agent.capabilities`, e.g. `/loop`'s tools). Their tools come in this order after the
    agent's (Skill, the MCP servers', Agent and Workflow, StructuredOutput: the request's order);
    structured output comes before the goal: its nudge, as a Stop hook's block, keeps the goal
    from being judged at that stop."""
    offered = _offered(agent)
    found: list[Capability] = []
    if offered("Skill") and agent.skills is not None and any(s.model_invocable for s in agent.skills.found.values()):
        from ..capabilities.skills import Skills
        from ..context.commands import model_use

        found.append(Skills(agent.outfitted().skill_tool(functools.partial(model_use, agent.skills))))
    if parts.mcp is not None:  # a subagent's are its parent's servers, as its definition allows
        from ..capabilities.mcptools import McpTools

        found.append(McpTools(parts.mcp, agent.subagent.allows if agent.subagent is not None else None))
    if agent.agents:
        from ..capabilities.subagents import Subagents

        found.append(Subagents(parts.subagents(), _subagent_tools(agent, parts, hooks, emit, offered)))
    if agent.output_schema is not None:  # a fresh answer for every run
        from ..capabilities.structured import StructuredAnswer, StructuredOutput

        answer = StructuredAnswer(agent.output_schema)
        found.append(StructuredOutput(answer, agent.outfitted().structured_output_tool(answer)))
    if agent.memory is not None:
        from ..capabilities.memory import MemoryFiles

        found.append(MemoryFiles(agent.memory))
    if session.checkpoints is not None:
        from ..capabilities.checkpoints import FileCheckpoints

        found.append(FileCheckpoints(session.checkpoints))
    if (judge := goal_judge(agent, session, parts, emit)) is not None:
        from ..capabilities.goal import Goal

        found.append(Goal(judge))
    return [*found, *agent.capabilities]


def _offered(agent: AgentSpec) -> Callable[[str], bool]:
    """Whether `--tools` leaves a tool of loopwright's own (Skill, Agent, Workflow) offered."""
    named = agent.only_tools
    return (lambda name: True) if named is None else named.__contains__


def _subagent_tools(agent: AgentSpec, parts: Resources, hooks: Any, emit: Callable[[Event], None],
                    offered: Callable[[str], bool]) -> list[Any]:
    """The Agent and Workflow tools, as the agent's definitions and `--tools` allow."""
    workflow = offered("Workflow") and agent.depth == 0  # a workflow's agents are subagents (not offered to them)
    if not agent.agents or not (offered("Agent") or workflow) or (agent_tool := parts.subagents().tool(hooks, emit)) is None:
        return []
    tools = [agent_tool] if offered("Agent") else []
    if workflow:
        from ..workflows.tool import WorkflowTool

        tools.append(WorkflowTool(parts.subagents().workflow_runner(), agent.outfitted().python_jail, lambda: agent.budget.max_budget_usd))
    return tools


def _set_aside_notice(agent: AgentSpec, parts: Resources, rules: Any, emit: Callable[[Event], None]) -> Callable[[Event], None]:
    """`emit`, saying right after system/init which allow rules auto mode sets aside (the gate
    drops them: `permissions.automode.drop_broad`): once a session, and again only when they change."""
    from ..permissions.rules import normalise_mode

    if agent.depth != 0 or normalise_mode(rules.mode) != "auto":
        return emit
    from ..permissions.automode import drop_broad, set_aside_notice

    dropped = drop_broad(rules.allow)[1]
    if not dropped or dropped == parts.set_aside:
        return emit
    parts.set_aside = dropped
    from ..core.events import Notice, SystemInit

    def noticed(event: Event) -> None:
        emit(event)
        if isinstance(event, SystemInit):
            emit(Notice("warning", set_aside_notice(dropped), "auto_mode_rules_set_aside"))

    return noticed


def run_hooks(agent: AgentSpec, session: Session, parts: Resources, emit: Callable[[Event], None]) -> HookRunner:
    """The hooks of one prompt: reporting to its emitter, with the run's model client for
    prompt hooks and the outfit's POST for http hooks (a `loopwright.hooks.HookRunner` has `bind`)."""
    hooks = agent.hooks or NoHooks()
    bind = getattr(hooks, "bind", None)
    if bind is None:
        return hooks
    return bind(emit=emit, model=parts.client(), post_json=agent.outfitted().post_json,
                base_env=agent.environment(session.env))


def goal_judge(agent: AgentSpec, session: Session, parts: Resources,
               emit: Callable[[Event], None]) -> GoalJudge | None:
    """The session's goal (or, when it set none, the agent's), judged across its prompts."""
    if not session.goal_set and agent.goal is not None:
        session.set_goal(agent.goal)
    if session.goal is None:
        return None
    if session.judge is None:
        from ..core.clock import SystemClock
        from ..engine.goal import GoalJudge

        session.judge = GoalJudge(session.goal, agent.evaluator_client or parts.client(),
                                  agent.workspace or agent.outfitted().workspace(agent.cwd, agent.check_wrapper(),
                                                                                 agent.environment(session.env)),
                                  agent.clock or SystemClock(), priced=resolve_model(agent.model).price is not None)
    judge = session.judge
    judge.emit = emit
    if not session.goal_armed:
        judge.start(session.goal_baseline)
        session.goal_armed = True
    else:
        judge.new_run()
    return judge if judge.active else None
