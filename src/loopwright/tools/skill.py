"""`Skill`: the model loads a listed skill by name (offered only when the session has skills).
What a skill is and where it lives is the caller's (`context.skills`); this tool only asks."""

from __future__ import annotations

import inspect
from typing import Any, Callable

from pydantic import Field

from ..core.ports import Access, ToolContext, ToolOutput
from .base import BaseTool, ToolInput


class SkillInput(ToolInput):
    skill: str = Field(description="The skill's name, as listed.")
    args: str = Field(default="", description="Arguments for the skill, if it takes any.")


class SkillTool(BaseTool):
    name = "Skill"
    read_only = True
    Input = SkillInput
    description = ("Load a skill: a documented procedure for a kind of task. Call it with the name of a listed "
                   "skill when the task matches the skill's description, then follow the instructions it returns. "
                   "A skill already loaded in this conversation need not be loaded again.")

    def __init__(self, use: Callable[[str, str], Any]) -> None:
        self.use = use  # (name, args) -> (text, is_error), or an awaitable of it

    def access(self, tool_input: dict[str, Any]) -> Access:
        return Access("session")  # reads the session's own skill files, changes nothing

    async def run(self, args: SkillInput, ctx: ToolContext) -> ToolOutput:
        found = self.use(args.skill, args.args)
        text, is_error = await found if inspect.isawaitable(found) else found
        return ToolOutput(text, is_error=is_error)
