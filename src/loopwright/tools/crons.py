"""`CronCreate`, `CronList`, `CronDelete`: the model schedules more prompts of its own inside a
`/loop` (offered only there, where a process stays to fire them). Five cron fields, local
time; a one-shot task goes once fired; a recurring one ends a week after it was made."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from ..core.ports import Access, Crons, ToolContext, ToolOutput
from .base import BaseTool, ToolInput


class CronCreateInput(ToolInput):
    cron: str = Field(description='Five cron fields in local time: minute hour day-of-month month day-of-week, '
                      'such as "0 15 * * *" (15:00 daily) or "*/30 * * * *".')
    prompt: str = Field(description="The prompt to run when it fires.")
    recurring: bool = Field(default=True, description="False: fire once, at the next match, then go.")


class CronDeleteInput(ToolInput):
    id: str = Field(description="The task's id, as CronCreate or CronList gave it.")


class _CronTool(BaseTool):
    read_only = True

    def __init__(self, crons: Crons) -> None:
        self.crons = crons

    def access(self, tool_input: dict[str, Any]) -> Access:
        return Access("session")  # it changes only this session's own schedule


class CronCreateTool(_CronTool):
    name = "CronCreate"
    Input = CronCreateInput
    description = ("Schedule a prompt of your own in this loop: at the times a cron expression names, or once. "
                   "It runs between iterations, in this conversation. At most 50 per session.")

    async def run(self, args: CronCreateInput, ctx: ToolContext) -> ToolOutput:
        try:
            return ToolOutput(self.crons.create(args.cron, args.prompt, args.recurring))
        except ValueError as exc:
            return ToolOutput(f"Not scheduled: {exc}", is_error=True)


class CronListTool(_CronTool):
    name = "CronList"
    description = "List this session's scheduled prompts: id, cron expression, next time, prompt."

    async def run(self, args: ToolInput, ctx: ToolContext) -> ToolOutput:
        return ToolOutput(self.crons.describe())


class CronDeleteTool(_CronTool):
    name = "CronDelete"
    Input = CronDeleteInput
    description = "Delete one of this session's scheduled prompts by its id."

    async def run(self, args: CronDeleteInput, ctx: ToolContext) -> ToolOutput:
        if self.crons.delete(args.id):
            return ToolOutput(f"Deleted {args.id}.")
        return ToolOutput(f"No scheduled prompt with id {args.id!r}; CronList shows them.", is_error=True)


def cron_tools(crons: Crons) -> list[BaseTool]:
    return [CronCreateTool(crons), CronListTool(crons), CronDeleteTool(crons)]
