"""`@path` in a prompt a person wrote outside the interactive terminal — `-p "explain @src/x.py"`
and a stream-json user message — attached under the same rules as at the terminal
(`context.mentions`): the prompt the model gets, and the transcript records, holds each file as
the Read tool shows it; a path the Read rules refuse stops the prompt before anything is sent."""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable

from ..core.types import ModelText

if TYPE_CHECKING:
    from ..agent.run import Run


async def with_mentions(run: Run, prompt: str, said: Callable[[str], None] | None = None) -> str:
    """`prompt` with the files its `@path`s name attached (`CommandError` when one may not be
    read), each attached path passed to `said`. Left as written: a message the client composed
    (delivered verbatim), a custom command or skill and an MCP prompt (`/name …`: the `@file`s of
    its body are attached as it starts) and an unknown `/name` (refused by the run, with nothing read).
    `run`: the run the prompt is for (its agent's Read rules and skills)."""
    if isinstance(prompt, ModelText) or "@" not in prompt:
        return prompt
    head = prompt.strip().split(maxsplit=1)[0] if prompt.strip() else ""
    if head.startswith("/"):
        from ..context.commands import refuse_unknown

        known = run.agent.skills
        skills = known.found if known is not None else {}
        if head[1:] in skills or head.startswith("/mcp__"):
            return prompt
        refuse_unknown(prompt, known)  # a typo is refused before any file is read
    mentioned = await run.attach_mentions(prompt)
    for path in mentioned.attached:
        if said is not None:
            said(path)
    return str(mentioned.prompt)


__all__ = ["with_mentions"]
