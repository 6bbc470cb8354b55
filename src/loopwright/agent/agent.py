"""`Agent`: the public agent — an immutable description (`AgentSpec`: model, tools, prompts,
limits, budget, permissions, hooks; changed only by `replace`) and the ways to run it:
`await agent.run("…")` for one prompt, `agent.open(session)` for a `Run` over many."""

from __future__ import annotations

from typing import TYPE_CHECKING, AsyncIterator, Callable

from ..core.events import Event, RunResult
from .spec import DEFAULT_SYSTEM_PROMPT, AgentSpec, default_system_prompt

if TYPE_CHECKING:
    from .run import Run
    from .session import Session


class Agent(AgentSpec):
    """An agent: its model, tools and limits (the fields are `AgentSpec`'s). Immutable:
    `agent.replace(model=…)` gives another. `await agent.run("…")` runs one prompt on a new
    session (or on `session=`, which then holds the conversation for the next prompt);
    `async with agent.open(session) as run:` keeps a run's resources open across prompts."""

    def open(self, session: Session | None = None) -> Run:
        """A run of this agent over `session` (a new one when None): `async with agent.open(s) as
        run: await run.prompt("…")`. The run owns what it starts (the model client it made, MCP
        servers, subagents, background shells) and closes them when the block ends."""
        from .run import Run
        from .session import Session

        return Run(self, session if session is not None else Session())

    async def run(self, prompt: str, *, session: Session | None = None,
                  on_event: Callable[[Event], None] | None = None) -> RunResult:
        """Run one prompt to its result, then close what the run started. Pass a `Session` for a
        conversation that carries over to the next call."""
        async with self.open(session) as run:
            return await run.prompt(prompt, on_event=on_event)

    async def stream(self, prompt: str, *, session: Session | None = None) -> AsyncIterator[Event]:
        """Yield every event of one prompt's run; the last one is a `ResultEvent`."""
        async with self.open(session) as run:
            async for event in run.stream(prompt):
                yield event

    def run_sync(self, prompt: str, *, session: Session | None = None) -> RunResult:
        import anyio

        return anyio.run(lambda: self.run(prompt, session=session))


__all__ = ["DEFAULT_SYSTEM_PROMPT", "Agent", "default_system_prompt"]
