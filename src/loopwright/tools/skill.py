"""`Skill`: the model loads a listed skill by name (offered only when the session has skills).
What a skill is and where it lives is the caller's (`context.skills`); this tool only asks, handing
on the way its call makes further calls (`ToolContext.step`: a skill's shell steps). Its
schema is plain data and its input checked by hand, so offering it loads no validation library
on the way to the first request."""

from __future__ import annotations

import inspect
from typing import Any, Callable

from ..core.errors import ToolInputError
from ..core.ports import Access, ToolContext, ToolOutput

PROPERTIES = {
    "skill": {"type": "string", "description": "The skill's name, as listed."},
    "args": {"type": "string", "default": "", "description": "Arguments for the skill, if it takes any."},
}
SCHEMA = {"type": "object", "additionalProperties": False, "required": ["skill"], "properties": PROPERTIES}


class SkillTool:
    name = "Skill"
    read_only = True
    description = ("Load a skill: a documented procedure for a kind of task. Call it with the name of a listed "
                   "skill when the task matches the skill's description, then follow the instructions it returns. "
                   "A skill already loaded in this conversation need not be loaded again.")
    input_schema = SCHEMA

    def __init__(self, use: Callable[[str, str, Any], Any]) -> None:
        self.use = use  # (name, args, ctx.step) -> (text, is_error), or an awaitable of it

    def validate(self, raw: dict[str, Any]) -> dict[str, str]:
        unknown = sorted(set(raw) - set(PROPERTIES))
        if unknown:
            raise ToolInputError(f"Invalid input for Skill: unknown field(s) {', '.join(unknown)}")
        if not isinstance(raw.get("skill"), str) or not raw["skill"].strip():
            raise ToolInputError("Invalid input for Skill: `skill` is required: the name of a listed skill")
        if not isinstance(raw.get("args", ""), str):
            raise ToolInputError("Invalid input for Skill: `args` must be text")
        return {"skill": raw["skill"], "args": raw.get("args", "")}

    def access(self, tool_input: dict[str, Any]) -> Access:
        return Access("session")  # reads the session's own skill files, changes nothing

    async def run(self, args: dict[str, str], ctx: ToolContext) -> ToolOutput:
        found = self.use(args["skill"], args["args"], ctx.step)
        text, is_error = await found if inspect.isawaitable(found) else found
        return ToolOutput(text, is_error=is_error)
