"""Memory as a capability: the memory files of a subfolder a Read looked into, added after its
batch, and the start's files read afresh once compaction summarised them away. What the files
are and how they are found is `context.memory.Memory`."""

from __future__ import annotations

from typing import Any, Callable, Sequence

from ..core.events import Event
from ..core.types import ToolResultBlock, ToolUseBlock
from ..engine.capability import Capability, RunView


class MemoryFiles(Capability):
    name = "memory"

    def __init__(self, memory: Any) -> None:
        """`memory`: a `context.memory.Memory` (its warnings are said as notices)."""
        self.memory = memory
        self.emit: Callable[[Event], None] | None = None

    def start(self, run: RunView) -> None:
        self.emit = run.emit

    async def after_batch(self, calls: Sequence[ToolUseBlock], results: Sequence[ToolResultBlock]) -> list[str]:
        return list(self.memory.after_reads(calls, results, self.emit))

    def after_compact(self) -> list[str]:
        return list(self.memory.after_compact(self.emit))
