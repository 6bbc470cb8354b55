"""The goal as a capability: its bounds checked before every model call, the evaluator asked at
every candidate stop nothing else held, its spend and its report (`result.reports["goal"]`).
The judging itself is `engine.goal.GoalJudge`, which lives as long as the session's goal."""

from __future__ import annotations

from typing import Any, Sequence

from ..core.fastclass import dataclass
from ..core.types import Message, ToolResultBlock, ToolUseBlock
from ..engine.capability import Capability, Spend, StopAnswer, StopView
from ..engine.goal import GoalContinue, GoalJudge
from ..policy.budget import Spent
from ..policy.stop import Continue, Finish


@dataclass(frozen=True, slots=True)
class GoalCheck:
    command: str
    exit_code: int | None
    passed: bool
    timed_out: bool


@dataclass(frozen=True, slots=True)
class GoalReport:
    """Where the goal stands at the end of a run."""

    condition: str
    met: bool
    failed: bool
    iterations: int
    duration_ms: int
    last_reason: str
    checks: tuple[GoalCheck, ...]
    evaluator: dict[str, Any]  # its model, usage, cost and number of calls
    bounds: dict[str, Any]

    def to_json(self) -> dict[str, Any]:
        return {"condition": self.condition, "met": self.met, "failed": self.failed, "iterations": self.iterations,
                "duration_ms": self.duration_ms, "last_reason": self.last_reason,
                "checks": [{"command": c.command, "exit_code": c.exit_code, "passed": c.passed,
                            "timed_out": c.timed_out} for c in self.checks],
                "evaluator": self.evaluator, "bounds": self.bounds}


class Goal(Capability):
    name = "goal"

    def __init__(self, judge: GoalJudge) -> None:
        self.judge = judge
        self.tools_ran = True  # the first stop of a run counts as progress

    def before_turn(self, spent: Spent) -> Finish | None:
        bound = self.judge.bound_hit(spent.turns, spent.cost_usd) if self.judge.active else None
        return None if bound is None else Finish(bound.subtype, bound.terminal_reason, True, (bound.reason,))

    async def after_batch(self, calls: Sequence[ToolUseBlock], results: Sequence[ToolResultBlock]) -> list[str]:
        self.tools_ran = True
        return []

    async def at_stop(self, stop: StopView) -> StopAnswer:
        if stop.held or not self.judge.active:  # a Stop hook's block goes first; the goal is judged after
            return None
        tools_ran, self.tools_ran = self.tools_ran, False
        decision = await self.judge.judge(stop.messages, stop.background, tools_ran, stop.own_cost_usd)
        if isinstance(decision, GoalContinue):
            return Continue((Message.user(decision.message),), "goal")
        errors = (decision.reason,) if decision.is_error else ()
        return Finish(decision.subtype, decision.terminal_reason, decision.is_error, errors, result=stop.text)

    def spend(self) -> Sequence[Spend]:
        return [("evaluator", self.judge.model, self.judge.state.evaluator)]

    def report(self) -> GoalReport:
        judge, s = self.judge, self.judge.state
        return GoalReport(
            judge.spec.condition, s.met, s.failed, s.iterations, int((judge.clock.monotonic() - s.started) * 1000),
            s.last_reason, tuple(GoalCheck(c.command, c.exit_code, c.passed, c.timed_out) for c in s.checks),
            {"model": judge.model, **s.evaluator.to_json(), "calls": s.evaluator.calls}, judge.limits.to_json())
