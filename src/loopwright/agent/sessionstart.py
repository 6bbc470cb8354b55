"""A session's start and end in a `Run`: the opening of the conversation (memory, skills, what
SessionStart hooks add and the environment they set) once before the first prompt, and SessionEnd."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable

from ..core.events import Event, Notice
from ..core.ports import HookRunner, hooks_want
from ..core.types import Message, TextBlock
from ..engine.dispatch import bounded_context

if TYPE_CHECKING:
    from .session import Session
    from .spec import AgentSpec


async def start_session(agent: AgentSpec, session: Session, hooks: HookRunner,
                        emit: Callable[[Event], None]) -> list[Message]:
    """Once per session before its first prompt: the memory files, then what SessionStart
    hooks add (their additionalContext or plain stdout), open the conversation."""
    if session.state != "new":
        return []
    session.state = "started"
    # A resumed conversation already holds the memory it was given: it is not read again.
    if session.history or (agent.memory is None and agent.skills is None and not agent.plugins):
        opening = []
        if agent.memory is not None:
            agent.memory.remember(session.history)
    else:
        from ..context import opening_messages

        opening = opening_messages(agent.memory, agent.skills, emit, agent.agents if agent.depth == 0 else None,
                                   len(agent.plugins))
    if agent.subagent is not None:  # a subagent's SubagentStart fired as it was spawned (agents.runner)
        return opening
    if not hooks_want(hooks, "SessionStart"):
        return opening  # no handler: no payload, no env file
    started = await session_start_hooks(agent, session, hooks, emit)
    if started.additional_context:
        opening.append(Message("user", tuple(TextBlock(t) for t in bounded_context(started.additional_context))))
    return opening


async def session_start_hooks(agent: AgentSpec, session: Session, hooks: Any, emit: Callable[[Event], None]) -> Any:
    """SessionStart, its command hooks given a `CLAUDE_ENV_FILE`; what they write there holds
    for the session's tools (agent.envfile)."""
    from .envfile import session_start

    source = session.source
    payload = session.hook_payload(agent, "SessionStart") | {"source": source, "model": agent.model}
    started, found, problem = await session_start(hooks, payload, source, str(agent.cwd),
                                                  agent.environment(session.env))
    session.env |= found
    if problem:
        emit(Notice("warning", problem))
    return started


async def end_session(session: Session, hooks: HookRunner, agent: AgentSpec, reason: str = "other") -> None:
    """`Run.end_session`: SessionEnd, once, if the session started."""
    if session.state != "started":
        return
    session.state = "ended"
    await hooks.run("SessionEnd", session.hook_payload(agent, "SessionEnd") | {"reason": reason}, match=reason)
