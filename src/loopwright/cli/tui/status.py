"""What the bottom status line says: model, permission mode, turn, context used (% of the model's
window), session spend, the active goal and its last verdict, the background shells and the
subagents running (how many, and what they are), the next `/loop` fire. Pure text."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ...core.events import AssistantMessage, Event, GoalStatus, ResultEvent, ToolFinished, ToolStarted

if TYPE_CHECKING:
    from ...agent.run import Run
    from ...permissions.rules import PermissionMode

# Shift-Tab's cycle; `auto` and `bypassPermissions` join it only when they apply.
CYCLE: tuple[PermissionMode, ...] = ("default", "acceptEdits", "plan")


@dataclass
class Status:
    live: Run  # the session's run
    turn: int = 0
    context_tokens: int = 0
    spent: float = 0.0
    verdict: str = ""
    next_loop: float | None = None
    bypass: bool = False  # started with bypassPermissions: it stays in the cycle
    modes: tuple[PermissionMode, ...] = field(default=CYCLE)
    agents: dict[str, str] = field(default_factory=dict)  # the subagents running: tool_use_id -> type

    def __post_init__(self) -> None:
        from ...permissions.rules import MODES

        self.bypass = self.live.agent.permissions.mode == "bypassPermissions"
        modes = list(CYCLE)
        if "auto" in MODES:
            modes.append("auto")
        if self.bypass:
            modes.append("bypassPermissions")
        self.modes = tuple(modes)

    def seen(self, event: Event) -> None:
        """Keeps the counts current from the events of a run."""
        if isinstance(event, AssistantMessage):
            self.turn += 1
            u = event.usage
            self.context_tokens = (u.input_tokens + u.cache_creation_input_tokens + u.cache_read_input_tokens
                                   + u.output_tokens)
        elif isinstance(event, GoalStatus) and not event.sentinel:
            self.verdict = "met" if event.met else "impossible" if event.failed else "not met yet"
        elif isinstance(event, ToolStarted) and event.name == "Agent":
            self.agents[event.tool_use_id] = str(event.input.get("subagent_type") or "general-purpose")
        elif isinstance(event, ToolFinished):
            self.agents.pop(event.tool_use_id, None)
        elif isinstance(event, ResultEvent):
            self.spent += event.result.total_cost_usd
            self.agents.clear()  # an interrupted turn answers its calls; none runs after it

    @property
    def mode(self) -> str:
        return str(self.live.agent.permissions.mode)

    def cycle(self) -> str:
        """Shift-Tab: the next permission mode, the run's agent's for the next call it judges."""
        from dataclasses import replace

        now = next((m for m in self.modes if m == self.mode), self.modes[-1])
        nxt = self.modes[(self.modes.index(now) + 1) % len(self.modes)]
        self.live.update(permissions=replace(self.live.agent.permissions, mode=nxt))
        return nxt

    def window(self) -> int:
        from ...policy.models import resolve_model

        return resolve_model(self.live.agent.model).context_window

    def line(self, width: int = 80) -> str:
        pct = 100 * self.context_tokens / max(1, self.window())
        parts = [self.live.agent.model, self.mode, f"turn {self.turn}", f"context {pct:.0f}%", f"${self.spent:.4f}"]
        goal = self.live.session.goal
        if goal is not None:
            parts.append(f"goal{' ' + self.verdict if self.verdict else ''}: {_cut(goal.condition, 24)}")
        parts += self.at_work()
        if self.next_loop is not None:
            parts.append("loop " + time.strftime("%H:%M:%S", time.localtime(self.next_loop)))
        return _cut(" · ".join(parts), width - 1)

    def at_work(self) -> list[str]:
        """`2 shells: npm run dev, tail -f app.log`, `1 agent: checker`: what runs besides the turn."""
        shells = [str(t.get("description") or t.get("command") or t.get("id")) for t in self.live.background_tasks()]
        out = []
        for what, names in (("shell", shells), ("agent", list(self.agents.values()))):
            if names:
                out.append(f"{len(names)} {what}{'s' if len(names) > 1 else ''}: {_cut(', '.join(names), 28)}")
        return out


def _cut(text: str, width: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 1] + "…"
