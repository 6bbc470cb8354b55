"""Time-based loops: run a prompt again and again in one session, on a fixed cadence or at the
pace the model sets with `ScheduleWakeup`, until a bound, the model or the user ends it.
Decisions come from `policy/cadence.py`; time comes from the injected clock."""

from __future__ import annotations

import time
from dataclasses import replace
from typing import Any, Awaitable, Callable

import anyio

from ..core.clock import Clock
from ..core.events import Event, LoopStatus, ModelUsage, Notice, RunResult
from ..core.fastclass import dataclass
from ..core.ids import uuid4
from ..core.types import ModelText, Usage
from ..policy.cadence import (
    EXPIRY_S, End, Iteration, LoopPlan, LoopState, Wait, after_iteration, cadence, clamp_wakeup, cron_error,
    cron_next,
)

MAX_CRONS = 50

BUILTIN_LOOP_PROMPT = (
    "Look after this project: check whether anything needs attention (failing tests or builds, "
    "unfinished work noted in the repository) and deal with the most important thing you find. "
    "If nothing needs doing, say so briefly.")

FIXED_GUIDE = ("This prompt runs on a schedule, every {every}, in one conversation. Do what it asks now, "
               "then end your turn; the next run comes by itself.")
PACED_GUIDE = ("This prompt runs in a self-paced loop, in one conversation. Do what it asks now; then, as the "
               "last step, call ScheduleWakeup with the delay until the next check is worth making and why, "
               "or with stop: true when the work is done or there is nothing left to watch.")


def loop_prompt(prompt: str, cwd: str, home: str) -> Callable[[], str]:
    """The prompt of every iteration: the one given, else the loop file (`.loopwright/loop.md`,
    `.claude/loop.md`, then the same under the home directory; re-read each time, at most 25,000
    bytes), else a built-in one."""
    if prompt:
        return lambda: prompt
    from ..policy.cadence import MAX_LOOP_FILE_BYTES

    places = [f"{base}/{sub}/loop.md" for base in (cwd, home) for sub in (".loopwright", ".claude")]

    def read() -> str:
        for place in places:
            try:
                with open(place, "rb") as f:
                    text = f.read(MAX_LOOP_FILE_BYTES).decode("utf-8", errors="replace").strip()
            except OSError:
                continue
            if text:
                return text
        return BUILTIN_LOOP_PROMPT

    return read


class Pacer:
    """The self-paced schedule (`ports.Wakeups`): holds the iteration's wake-up request."""

    def __init__(self, clock: Clock) -> None:
        self.clock = clock
        self.wakeup_s: float | None = None
        self.stop = False

    def request(self, delay_s: float, reason: str, stop: bool) -> str:
        if stop:
            self.stop, self.wakeup_s = True, None
            return "The loop ends after this iteration. Finish the turn with a short summary."
        kept, note = clamp_wakeup(delay_s)
        self.stop, self.wakeup_s = False, kept
        at = time.strftime("%H:%M:%S", time.localtime(self.clock.now() + kept))
        said = f" ({note})" if note else ""
        return f"Next iteration at {at}, in {kept}s{said}. Nothing more is needed now: end this turn."

    def take(self) -> tuple[float | None, bool]:
        wakeup, stop = self.wakeup_s, self.stop
        self.wakeup_s, self.stop = None, False
        return wakeup, stop


@dataclass
class CronTask:
    id: str
    cron: str
    prompt: str
    recurring: bool
    created: float
    next_at: float


class SessionCrons:
    """The prompts the model scheduled in this loop (`ports.Crons`), fired between iterations."""

    def __init__(self, clock: Clock) -> None:
        self.clock = clock
        self.tasks: dict[str, CronTask] = {}

    def create(self, cron: str, prompt: str, recurring: bool) -> str:
        if len(self.tasks) >= MAX_CRONS:
            raise ValueError(f"at most {MAX_CRONS} scheduled prompts per session; delete one first (CronDelete)")
        if (problem := cron_error(cron)) is not None:
            raise ValueError(problem)
        if not prompt.strip():
            raise ValueError("the prompt is empty")
        now = self.clock.now()
        task = CronTask(uuid4()[:8], cron, prompt, recurring, now, cron_next(cron, now))
        self.tasks[task.id] = task
        how = "recurring, for 7 days" if recurring else "once"
        return f"Scheduled {task.id} ({how}): first at {_clock_time(task.next_at)}."

    def describe(self) -> str:
        if not self.tasks:
            return "No scheduled prompts."
        return "\n".join(f"{t.id}  {t.cron}  next {_clock_time(t.next_at)}  {'recurring' if t.recurring else 'once'}"
                         f"  {t.prompt[:80]}" for t in sorted(self.tasks.values(), key=lambda t: t.next_at))

    def delete(self, task_id: str) -> bool:
        return self.tasks.pop(task_id, None) is not None

    def next_at(self) -> float | None:
        return min((t.next_at for t in self.tasks.values()), default=None)

    def take_due(self, now: float) -> CronTask | None:
        """The earliest due task, moved on: a one-shot or expired one goes, a recurring one waits
        for its next match (fires missed meanwhile collapse into this one)."""
        due = [t for t in self.tasks.values() if t.next_at <= now]
        if not due:
            return None
        task = min(due, key=lambda t: t.next_at)
        if not task.recurring or now >= task.created + EXPIRY_S:
            del self.tasks[task.id]  # a recurring task's week is up: this was its final fire
        else:
            task.next_at = cron_next(task.cron, now)
        return task


def _clock_time(at: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M", time.localtime(at))


class TimeLoop:
    """Runs iterations with `run_once(prompt)` (one agent run each, same session) until the
    policy says the loop is over; the last iteration's result comes back with a `loop` summary."""

    def __init__(self, run_once: Callable[[str], Awaitable[RunResult]], prompt: Callable[[], str],
                 every_s: int | None, clock: Clock, emit: Callable[[Event], None], *,
                 until: float | None = None, max_iterations: int | None = None, max_budget_usd: float | None = None,
                 pacer: Pacer | None = None, crons: SessionCrons | None = None) -> None:
        self.run_once, self.prompt, self.clock, self.emit = run_once, prompt, clock, emit
        self.cadence = cadence(every_s) if every_s is not None else None
        now = clock.now()
        self.plan = LoopPlan(self.cadence.every_s if self.cadence else None, now, now + EXPIRY_S, until,
                             max_iterations, max_budget_usd)
        self.pacer = pacer if pacer is not None else (Pacer(clock) if every_s is None else None)
        self.crons = crons
        self._cron_spent = 0.0  # what scheduled prompts cost, counted with the next iteration
        self.totals = LoopTotals()
        self._interrupted = False
        self._waiting: anyio.CancelScope | None = None

    @property
    def guide(self) -> str:
        """What the model is told about the loop (for the system prompt)."""
        guide = PACED_GUIDE if self.cadence is None else FIXED_GUIDE.format(every=_every(self.cadence.every_s))
        if self.crons is not None:
            guide += " To run something at a set time (once, or on a cron schedule), use CronCreate."
        return guide

    def interrupt(self) -> None:
        """End the loop: a wait ends at once; a running iteration is the caller's to interrupt."""
        self._interrupted = True
        if self._waiting is not None:
            self._waiting.cancel()

    async def run(self) -> RunResult:
        state, note = LoopState(), self.cadence.note if self.cadence else None
        self.totals.started = self.clock.now()
        while True:
            started = self.clock.now()
            result = await self.run_once(self.prompt())
            self.totals.add(result)
            wakeup, stop = self.pacer.take() if self.pacer is not None else (None, False)
            interrupted = self._interrupted or result.terminal_reason == "aborted"
            spent, self._cron_spent = result.total_cost_usd + self._cron_spent, 0.0
            it = Iteration(started, self.clock.now(), failed=result.is_error and not interrupted,
                           interrupted=interrupted, wakeup_s=wakeup, stop=stop, cost_usd=spent)
            nxt, state = after_iteration(self.plan, state, it)
            if isinstance(nxt, Wait):
                self.emit(LoopStatus(state.iterations, nxt.reason, nxt.at, note))
                note = None
                if await self._wait_and_fire_crons(nxt.at):
                    continue
                nxt = End("interrupted")
            assert isinstance(nxt, End)
            status = LoopStatus(state.iterations, nxt.reason, None, note)
            self.emit(status)
            return _with_summary(result, status, self, state.spent_usd, self.clock.now())

    async def _wait_and_fire_crons(self, at: float) -> bool:
        """Wait until `at`, running the scheduled prompts that come due first; False when
        interrupted."""
        while (cron_at := self.crons.next_at() if self.crons is not None else None) is not None and cron_at < at:
            if not await self._wait_until(cron_at):
                return False
            task = self.crons.take_due(self.clock.now()) if self.crons is not None else None
            if task is None:
                continue
            self.emit(Notice("info", f"scheduled prompt {task.id} ({task.cron}) fires", subtype="cron_fire"))
            result = await self.run_once(ModelText(task.prompt))  # the model wrote it: never a command
            self.totals.add(result)
            self._cron_spent += result.total_cost_usd
            if self._interrupted or result.terminal_reason == "aborted":
                return False
        return await self._wait_until(at)

    async def _wait_until(self, at: float) -> bool:
        """Sleep until `at`; False when interrupted first."""
        if self._interrupted:
            return False
        with anyio.CancelScope() as scope:
            self._waiting = scope
            await self.clock.sleep(max(0.0, at - self.clock.now()))
        self._waiting = None
        return not scope.cancelled_caught and not self._interrupted


def _every(seconds: int) -> str:
    for unit, size in (("days", 86400), ("hours", 3600), ("minutes", 60)):
        if seconds % size == 0:
            n = seconds // size
            return f"{n} {unit}" if n != 1 else unit.rstrip("s")
    return f"{seconds} seconds"


class LoopTotals:
    """What every run of a loop (iterations and scheduled prompts) added up to."""

    def __init__(self) -> None:
        self.started, self.turns, self.api_ms, self.usage = 0.0, 0, 0, Usage()
        self.models: dict[str, ModelUsage] = {}

    def add(self, result: RunResult) -> None:
        self.turns += result.num_turns
        self.api_ms += result.duration_api_ms
        self.usage = self.usage + result.usage
        for model, mu in result.model_usage.items():
            self.models[model] = self.models.get(model, ModelUsage()) + mu


def _with_summary(result: RunResult, status: LoopStatus, loop: TimeLoop, spent: float, now: float) -> RunResult:
    """The loop's result: the whole loop's totals at the top, the last iteration's own figures
    under `loop.last`; an interrupt while the loop waited ends it as `aborted`."""
    totals = loop.totals
    last = {"subtype": result.subtype, "is_error": result.is_error, "terminal_reason": result.terminal_reason,
            "num_turns": result.num_turns, "duration_ms": result.duration_ms,
            "total_cost_usd": round(result.total_cost_usd, 8)}
    summary: dict[str, Any] = {"mode": "self-paced" if loop.cadence is None else "fixed",
                               "iterations": status.iterations, "terminal_reason": status.reason,
                               "total_cost_usd": round(spent, 8), "last": last}
    if loop.cadence is not None:
        summary |= {"cron": loop.cadence.cron, "every_seconds": loop.cadence.every_s}
    out = replace(result, loop=summary, num_turns=totals.turns, duration_ms=int((now - totals.started) * 1000),
                  duration_api_ms=totals.api_ms, total_cost_usd=spent, usage=totals.usage,
                  model_usage=dict(totals.models))
    if status.reason == "interrupted" and result.terminal_reason != "aborted":  # Ctrl-C between iterations
        out = replace(out, subtype="error_during_execution", is_error=True, terminal_reason="aborted",
                      errors=(*result.errors, f"Interrupted by the user while the loop waited, after "
                                             f"{status.iterations} iteration(s)"))
    return out
