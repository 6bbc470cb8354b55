"""An `Agent`'s session start and end: the opening of the conversation (memory, skills, what
SessionStart hooks add and the environment they set) once before the first prompt, and SessionEnd.
`agent` is the `loopwright.Agent` (its methods are called, so a subclass's own are used)."""

from __future__ import annotations

from typing import Any, Callable

from ..core.events import Event, Notice
from ..core.ports import HookRunner, hooks_want
from ..core.types import Message, TextBlock
from ..engine.sizes import bounded_context


async def start_session(agent: Any, hooks: HookRunner, emit: Callable[[Event], None]) -> list[Message]:
    """Once per session before its first prompt: the memory files, then what SessionStart
    hooks add (their additionalContext or plain stdout), open the conversation."""
    if agent._session != "new":
        return []
    agent._session = "started"
    # A resumed conversation already holds the memory it was given: it is not read again.
    if agent.history or (agent.memory is None and agent.skills is None and not agent.plugins):
        opening = []
        if agent.memory is not None:
            agent.memory.remember(agent.history)
    else:
        from ..context import opening_messages

        opening = opening_messages(agent.memory, agent.skills, emit, agent.agents if agent.depth == 0 else None,
                                   len(agent.plugins))
    if agent.subagent is not None:  # a subagent's SubagentStart fired as it was spawned (agents.runner)
        return opening
    if not hooks_want(hooks, "SessionStart"):
        return opening  # no handler: no payload, no env file
    started = await agent._session_start_hooks(hooks, emit)
    if started.additional_context:
        opening.append(Message("user", tuple(TextBlock(t) for t in bounded_context(started.additional_context))))
    return opening


async def session_start_hooks(agent: Any, hooks: Any, emit: Callable[[Event], None]) -> Any:
    """SessionStart, its command hooks given a `CLAUDE_ENV_FILE`; what they write there holds
    for the session's tools (app.envfile)."""
    from .envfile import session_start

    payload = agent._hook_payload("SessionStart") | {"source": agent.session_source, "model": agent.model}
    started, found, problem = await session_start(hooks, payload, agent.session_source, str(agent.cwd),
                                                  agent._child_environment())
    agent._session_env |= found
    if problem:
        emit(Notice("warning", problem))
    return started


async def end_session(agent: Any, reason: str = "other", *, on_event: Callable[[Event], None] | None = None) -> None:
    """`Agent.end_session`: SessionEnd, once, if the session started."""
    if agent._session != "started":
        return
    agent._session = "ended"
    hooks = agent._hooks(agent._emitter(on_event))
    await hooks.run("SessionEnd", agent._hook_payload("SessionEnd") | {"reason": reason}, match=reason)
