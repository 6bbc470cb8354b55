"""`/loop`'s part of a run as a capability: the tools that steer the loop (`ScheduleWakeup` in a
self-paced loop; `CronCreate`, `CronList`, `CronDelete` where a process stays to fire them) and
the guide that tells the model how the loop works (`proactive.schedule.TimeLoop.guide`). The
front end that runs the loop builds the tools (tools are adapters) and passes this in
`Agent(capabilities=…)`; an agent without it is the agent it was."""

from __future__ import annotations

from typing import Sequence

from ..core.ports import Tool
from ..engine.capability import Capability


class LoopTools(Capability):
    name = "loop_tools"

    def __init__(self, guide: str, tools: Sequence[Tool] = ()) -> None:
        if not guide.strip():
            raise ValueError("LoopTools: expected the loop's guide for the system prompt, got an empty text")
        self.guide, self.offered = guide, tuple(tools)

    def tools(self) -> Sequence[Tool]:
        return self.offered

    def system(self) -> str:
        return self.guide
