"""What the project tells the agent: memory files and skills (`memory`, `skills`), given as the
conversation opens."""

from __future__ import annotations

from typing import Any, Callable

from ..core.events import Event, Notice
from ..core.types import Message, TextBlock


def opening_messages(memory: Any, skills: Any, emit: Callable[[Event], None]) -> list[Message]:
    """What opens a new conversation before its first prompt: the memory files, then the list of
    skills (names and descriptions only); each problem found on the way said as a notice."""
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
    if loaded:
        emit(Notice("info", f"loaded {' and '.join(loaded)}", "context_loaded"))
    return [Message("user", tuple(TextBlock(t) for t in blocks))] if blocks else []
