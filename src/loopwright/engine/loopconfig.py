"""What one agent loop is given: the model, tools, limits, hooks and the capabilities around it
(engine/capability.py). `AgentLoop` (engine/loop.py) runs it."""

from __future__ import annotations

from dataclasses import field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Awaitable, Callable, Sequence

from ..core.errors import CrashLog
from ..core.fastclass import dataclass
from ..core.ports import Approver, HookRunner, NoHooks, Tool
from ..policy.budget import Budget
from ..policy.models import resolve_model
from ..permissions.rules import PermissionRules
from ..policy.stop import Caps, Limits
from .capability import Capability

if TYPE_CHECKING:
    from .automode import AutoClassifier

StopHook = Callable[[dict[str, Any]], Awaitable[str | None]]  # a Stop hook in Python: a reason to go on, or None
FINAL_TURN = ("The turn limit for this run is reached, so no more tools can run. Reply now with a "
              "summary: what you did, what is verified, and what remains to be done.")


@dataclass
class LoopConfig:
    model: str
    cwd: Path
    session_id: str
    system: str = ""
    tools: Sequence[Tool] = ()
    limits: Limits = field(default_factory=Limits)
    budget: Budget = field(default_factory=Budget)
    permissions: PermissionRules = field(default_factory=PermissionRules)
    parallel_tools: int = 10
    include_partial: bool = False
    stop_hooks: Sequence[StopHook] = ()
    final_turn: bool = False
    compact_threshold: float = 0.8  # of the model's context window
    max_failed_compactions: int = 3
    max_compaction_refills: int = 3
    hooks: HookRunner = field(default_factory=NoHooks)
    # the features around the loop (goal, structured output, memory, checkpoints, …), in the order
    # they are asked at each seam
    capabilities: Sequence[Capability] = ()
    background_tasks: Callable[[], list[dict[str, Any]]] = list  # running background work, for Stop
    writable_roots: tuple[Path, ...] = ()  # besides cwd
    approver: Approver | None = None
    classifier: AutoClassifier | None = None  # auto mode: decides what the rules would ask about
    transcript_path: str = ""
    child_env: dict[str, str] = field(default_factory=dict)  # tools' processes: core.environ.child_env
    crash_log: CrashLog | None = None  # where an internal error's traceback goes (the error line names it)
    subagent: dict[str, Any] | None = None  # a subagent's agent_id, agent_type, agent_transcript_path (loop.LoopHooks)
    expansion: dict[str, str] | None = None  # the typed command this run's prompt expanded (UserPromptExpansion)
    # awaited just before tools run: the session's records made durable off the event loop (a
    # Recorder's `settle`: one fsync a step); None: each record is durable as written. Not before
    # a model call: a request lost to a power cut is only sent again, a tool's effect is not
    settle: Callable[[], Awaitable[None]] | None = None


def caps_for(model: str) -> Caps:
    info = resolve_model(model)
    return Caps(info.default_output, info.max_output)
