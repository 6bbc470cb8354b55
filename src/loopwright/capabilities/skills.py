"""Skills as a capability: the Skill tool, with which the model loads a skill the session listed
at its start (the tool is built where the loop is, as tools are adapters: `app.loopbuild`)."""

from __future__ import annotations

from typing import Sequence

from ..core.ports import Tool
from ..engine.capability import Capability


class Skills(Capability):
    name = "skills"

    def __init__(self, tool: Tool) -> None:
        """`tool`: the Skill tool (`tools.skill.SkillTool`) over the agent's skills."""
        self.tool = tool

    def tools(self) -> Sequence[Tool]:
        return (self.tool,)
