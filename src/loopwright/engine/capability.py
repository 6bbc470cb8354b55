"""`Capability`: one feature around the loop (a goal, structured output, memory, checkpoints, …)
as one object the loop calls at its seams; the seams themselves stay in `loop.py`.
A capability overrides only the methods it needs; the loop calls only those (`Seams`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, Iterator, Sequence, Union, overload

from ..core.events import RESULT_KEYS, CapabilityReport, Event, ModelUsage, RunResult
from ..core.fastclass import dataclass
from ..core.ports import Tool
from ..core.types import Message, ToolResultBlock, ToolUseBlock
from ..policy.budget import Spent
from ..policy.stop import Continue, Finish

Spend = tuple[str, str, ModelUsage]  # (role, model, usage) of model calls made outside the loop
# At a candidate stop: None lets the run end; a string is a reason to go on, joined with the Stop
# hooks' (it counts against `Limits.stop_block_cap` as a hook's block does); a `Continue` goes on
# as the capability's own decision and a `Finish` ends the run as it says
StopAnswer = Union[str, Continue, Finish, None]


@dataclass(frozen=True, slots=True)
class RunView:
    """What a capability may see of the run it joins (`Capability.start`)."""

    emit: Callable[[Event], None]
    messages: Callable[[], Sequence[Message]]  # the conversation as it is now
    cwd: Path
    session_id: str


@dataclass(frozen=True, slots=True)
class StopView:
    """A candidate stop: the run would end with `text`."""

    text: str
    messages: Sequence[Message]
    background: Sequence[dict[str, Any]]  # background work still running
    own_cost_usd: float  # what the loop's own model calls cost so far (not the capabilities' spend)
    held: bool  # a Stop hook or an earlier capability already asked to go on


class Capability:
    """A feature around the loop. Every method has a default that does nothing, so a capability
    writes only what it contributes. `name` keys its report in `RunResult.reports` (and the JSON
    result); it must be unique in a run and not one of the result's own keys."""

    name: str = ""

    def tools(self) -> Sequence[Tool]:
        """Tools it offers the model (gathered when the loop is built; `LiveTools` for a set that
        changes during the run)."""
        return ()

    def system(self) -> str:
        """Text it adds to the system prompt (gathered when the loop is built)."""
        return ""

    def start(self, run: RunView) -> None:
        """The run begins (called once, before the first model call)."""

    def before_turn(self, spent: Spent) -> Finish | None:
        """Before every model call, with what the run has spent: a `Finish` ends the run."""
        return None

    def before_write(self, real_path: str) -> None:
        """Write or Edit is about to change the file at `real_path` (in a worker thread)."""

    async def after_batch(self, calls: Sequence[ToolUseBlock], results: Sequence[ToolResultBlock]) -> list[str]:
        """After a batch of tool calls ran: text to add to the conversation beside the results."""
        return []

    def after_compact(self) -> list[str]:
        """Compaction summarised the conversation: text that opens it again."""
        return []

    async def at_stop(self, stop: StopView) -> StopAnswer:
        """The model would stop here (see `StopAnswer`)."""
        return None

    def spend(self) -> Sequence[Spend]:
        """Model calls it made outside the loop, for the run's budget and result."""
        return ()

    def report(self) -> CapabilityReport | None:
        """Its part of the result, under `name` in `RunResult.reports`."""
        return None

    def shape(self, result: RunResult) -> RunResult:
        """The last word on the result (after every report is in)."""
        return result

    async def aclose(self) -> None:
        """The run is over: release what it holds."""


def overriding(capabilities: Sequence[Capability], method: str) -> tuple[Capability, ...]:
    """The capabilities whose class defines `method` itself: the loop calls only these, so a
    seam no capability uses costs nothing a turn."""
    base = getattr(Capability, method)
    return tuple(c for c in capabilities if getattr(type(c), method) is not base)


class Seams:
    """A run's capabilities, sorted by the seams they use (built once per loop)."""

    def __init__(self, capabilities: Sequence[Capability]) -> None:
        checked(capabilities)
        self.all = tuple(capabilities)
        self.before_turn = overriding(capabilities, "before_turn")
        self.before_write = overriding(capabilities, "before_write")
        self.after_batch = overriding(capabilities, "after_batch")
        self.after_compact = overriding(capabilities, "after_compact")
        self.at_stop = overriding(capabilities, "at_stop")
        self.spend = overriding(capabilities, "spend")
        self.shape = overriding(capabilities, "shape")
        self.aclose = overriding(capabilities, "aclose")

    def write_hook(self) -> Callable[[str], None] | None:
        """What `ToolContext.before_write` gets: None when no capability watches writes."""
        watchers = self.before_write
        if not watchers:
            return None

        def before_write(real_path: str) -> None:
            for capability in watchers:
                capability.before_write(real_path)

        return before_write

    def compacted(self) -> list[str]:
        return [text for c in self.after_compact for text in c.after_compact()]

    def spent(self) -> list[Spend]:
        return [s for c in self.spend for s in c.spend()]

    def reports(self) -> dict[str, CapabilityReport]:
        return {c.name: r for c in self.all if (r := c.report()) is not None}


def checked(capabilities: Sequence[Capability]) -> None:
    """Names clear errors for a capability list the loop cannot keep apart in its result."""
    seen: set[str] = set()
    for capability in capabilities:
        if not isinstance(capability, Capability):
            raise TypeError(f"capabilities: expected Capability objects, got {type(capability).__name__}")
        name = capability.name
        if not name or name in RESULT_KEYS or name in seen:
            why = "is empty" if not name else "is a key of the result" if name in RESULT_KEYS else "is used twice"
            raise ValueError(f"capabilities: the name {name!r} of {type(capability).__name__} {why}; "
                             "expected a unique name that is not one of the result's own keys")
        seen.add(name)


class LiveTools(Sequence[Tool]):
    """Tools a capability offers that may change during a run (an MCP server says
    `tools/list_changed`): `read` is asked again each time the run's tool list is read, that is
    for every request. What `Capability.tools` returns otherwise is taken once, when the loop is built."""

    def __init__(self, read: Callable[[], Sequence[Tool]]) -> None:
        self.read = read

    def __iter__(self) -> Iterator[Tool]:
        return iter(self.read())

    def __len__(self) -> int:
        return len(self.read())

    @overload
    def __getitem__(self, index: int) -> Tool: ...
    @overload
    def __getitem__(self, index: slice) -> Sequence[Tool]: ...
    def __getitem__(self, index: int | slice) -> Tool | Sequence[Tool]:
        return self.read()[index]


class _Joined(Sequence[Tool]):
    """A run's tools when some of them are live: the parts in order, each read as it is now."""

    def __init__(self, parts: Sequence[Sequence[Tool]]) -> None:
        self.parts = tuple(parts)

    def __iter__(self) -> Iterator[Tool]:
        for part in self.parts:
            yield from part

    def __len__(self) -> int:
        return sum(len(part) for part in self.parts)

    @overload
    def __getitem__(self, index: int) -> Tool: ...
    @overload
    def __getitem__(self, index: slice) -> Sequence[Tool]: ...
    def __getitem__(self, index: int | slice) -> Tool | Sequence[Tool]:
        return list(self)[index]


def with_contributions(tools: Sequence[Tool], system: str,
                       capabilities: Sequence[Capability]) -> tuple[Sequence[Tool], str]:
    """The run's tools and system prompt with what its capabilities add, in their order. A plain
    list unless a capability's tools are `LiveTools`; then a sequence that reads those again
    each time (the fixed parts cost what a list does)."""
    checked(capabilities)
    fixed, names = list(tools), {t.name for t in tools}
    parts: list[Sequence[Tool]] = [fixed]
    for capability in capabilities:
        offered = capability.tools()
        live = isinstance(offered, LiveTools)
        if live:
            parts.append(offered)
        for tool in offered:  # a live part is checked as it is now; its later names are the capability's care
            if tool.name in names:  # the API refuses a request with two tools of one name
                raise ValueError(f"capabilities: {type(capability).__name__} offers a tool named {tool.name!r}, "
                                 "which the run already has; expected a tool name of its own")
            names.add(tool.name)
            if not live:
                fixed.append(tool)
        if live:
            fixed = []
            parts.append(fixed)
    texts = [system, *(c.system() for c in capabilities)]
    joined: Sequence[Tool] = fixed if len(parts) == 1 else _Joined([p for p in parts if isinstance(p, LiveTools) or p])
    return joined, "\n\n".join(t for t in texts if t)
