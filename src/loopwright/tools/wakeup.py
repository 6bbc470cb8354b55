"""`ScheduleWakeup`: how the model paces a self-paced `/loop` (offered only there). It asks for
the next iteration in so many seconds, or ends the loop with `stop`."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from ..core.ports import Access, ToolContext, ToolOutput, Wakeups
from .base import BaseTool, ToolInput


class ScheduleWakeupInput(ToolInput):
    delaySeconds: float = Field(default=1200, description="Seconds until the next iteration, 60 to 3600 "
                                "(others are moved into that range). Prefer long waits over frequent polling.")
    reason: str = Field(default="", description="Why this delay: what the next iteration will check.")
    prompt: str = Field(default="", description="The loop's prompt, passed back unchanged.")
    stop: bool = Field(default=False, description="True ends the loop after this iteration: nothing is left to do.")


class ScheduleWakeupTool(BaseTool):
    name = "ScheduleWakeup"
    read_only = True
    Input = ScheduleWakeupInput
    description = ("Pace this loop: schedule the next iteration in delaySeconds (60 to 3600), saying why, or "
                   "end the loop with stop: true when the work is done or there is nothing left to watch. "
                   "Call it once, as the last thing in an iteration. An iteration that does neither gets one "
                   "more try about 20 minutes later; if that one does neither either, the loop ends.")

    def __init__(self, wakeups: Wakeups) -> None:
        self.wakeups = wakeups

    def access(self, tool_input: dict[str, Any]) -> Access:
        return Access("session")  # changes nothing but this loop's own schedule

    async def run(self, args: ScheduleWakeupInput, ctx: ToolContext) -> ToolOutput:
        return ToolOutput(self.wakeups.request(args.delaySeconds, args.reason, args.stop))
