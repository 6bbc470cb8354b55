"""What the project tells the agent: memory files, skills and custom commands, plugins
(`memory`, `skills`, `commands`, `plugins`), given as the conversation opens or a command starts."""

from __future__ import annotations

from typing import Any, Callable

from ..core.events import Event, Notice
from ..core.fastclass import dataclass
from ..core.types import Message, TextBlock


def opening_messages(memory: Any, skills: Any, emit: Callable[[Event], None], agents: Any = None,
                     plugins: int = 0) -> list[Message]:
    """What opens a new conversation before its first prompt: the memory files, then the list of
    skills (names and descriptions only); each problem found on the way said as a notice. The
    subagent definitions (`agents`, name -> AgentDef) are not in it, only counted in the notice."""
    blocks, loaded = [], []
    if memory is not None and (text := memory.opening(emit)):
        blocks.append(text)
        loaded.append(f"{len(memory.loaded)} memory file(s)")
    if skills is not None:
        from .skills import listing

        skills.say_problems(emit)
        if text := listing(skills.found):
            blocks.append(text)
        if skills.found:
            loaded.append(f"{len(skills.found)} skill(s) and command(s)")
    if defined := [a for a in (agents or {}).values() if not a.builtin]:
        loaded.append(f"{len(defined)} subagent(s)")
    if plugins:
        loaded.append(f"{plugins} plugin(s)")
    if loaded:
        said = loaded[0] if len(loaded) == 1 else f"{', '.join(loaded[:-1])} and {loaded[-1]}"
        emit(Notice("info", f"loaded {said}", "context_loaded"))
    return [Message("user", tuple(TextBlock(t) for t in blocks))] if blocks else []


@dataclass(frozen=True, slots=True)
class Turn:
    """What a typed prompt starts (`commands.start`): the prompt to send, and the rules and model
    a command grants for its turn."""

    prompt: str
    allow: tuple[str, ...] = ()
    model: str | None = None
    # a command's UserPromptExpansion input: command_name, command_args, command_source, prompt
    expansion: dict[str, str] | None = None


def reading_grants(skills: Any, plugins: Any = ()) -> tuple[str, ...]:
    """`Read` allow rules for the folders the session's skills and plugins came from: a skill's
    body sends the model to its supporting files (`references/…`, `scripts/…`) in its base
    directory, which for a user's or a plugin's skill lies outside the project; reading them
    must not need a rule of its own (Claude Code users hit exactly this: anthropics/claude-code
    issues 15757, 31036)."""
    folders = [s.folder for s in (skills.found.values() if skills is not None else ())]
    folders += [p.root for p in plugins or ()]
    import os

    real = dict.fromkeys(os.path.realpath(f) for f in folders if f and os.path.isabs(f))
    return tuple(f"Read(/{folder}/**)" for folder in real)
