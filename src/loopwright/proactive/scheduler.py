"""Persisted schedules, served: claim each due fire (at most once, even with several schedulers
on one store), run it as a fresh agent run, record how it ended. A fire that overlaps its
schedule's running one, or comes later than the grace, is recorded as skipped; a run that a
dead scheduler left behind is recorded as interrupted and never run again."""

from __future__ import annotations

from typing import Awaitable, Callable

import anyio

from ..core.clock import Clock
from .ticker import Ticker
from ..core.fastclass import dataclass
from ..policy.cadence import decide_fire, schedule_step
from ..core.storeports import Schedule, ScheduledRun, ScheduleStore

POLL_S = 30.0  # schedules added by another process are seen within this
MAX_NOTE = 2000


@dataclass(frozen=True, slots=True)
class FireOutcome:
    """How a fire's run ended: `status` success, error or interrupted; `note` the answer or the
    error."""

    status: str
    session_id: str = ""
    cost_usd: float = 0.0
    note: str = ""

    @classmethod
    def of_result(cls, result: dict, session_id: str = "", interrupted: bool = False) -> "FireOutcome":
        """A run's result object (as `-p --output-format json` prints it) as a fire's outcome."""
        status = ("interrupted" if interrupted or result.get("terminal_reason") == "aborted" else
                  "error" if result.get("is_error") else "success")
        note = "; ".join(result.get("errors") or []) if result.get("is_error") else str(result.get("result", ""))
        return cls(status, str(result.get("session_id") or session_id), float(result.get("total_cost_usd") or 0.0),
                   note)


Interrupts = Callable[[Callable[[], None]], None]  # a fire registers how to interrupt it
RunFire = Callable[[Schedule, Interrupts], Awaitable[FireOutcome]]


class Scheduler(Ticker):
    def __init__(self, store: ScheduleStore, run_fire: RunFire, clock: Clock, *, owner: str,
                 alive: Callable[[str], bool], notify: Callable[[str, ScheduledRun], None] = lambda kind, run: None,
                 max_concurrent: int = 4, poll_s: float = POLL_S) -> None:
        self.store, self.run_fire, self.clock, self.owner = store, run_fire, clock, owner
        self.alive, self.notify = alive, notify
        self.max_concurrent, self.poll_s = max_concurrent, poll_s
        self.active = 0
        self._start_ticking()
        self._interrupts: dict[int, Callable[[], None]] = {}

    def recover(self) -> list[int]:
        """Runs left `running` by a scheduler that is gone: interrupted, not run again (their
        tools may have had effects)."""
        done = []
        for run, owner in self.store.orphans():
            if owner != self.owner and not self.alive(owner):
                note = f"the scheduler ({owner}) stopped during this run; it is not run again"
                self.store.finish(run.id, "interrupted", self.clock.now(), run.session_id, run.cost_usd, note)
                self.notify("recovered", ScheduledRun(run.id, run.schedule_id, run.fire_at, "interrupted", note=note))
                done.append(run.id)
        return done

    async def tick(self, tg: anyio.abc.TaskGroup) -> None:
        """Claim every due fire this process has room for; start the ones to run in `tg`."""
        now = self.clock.now()
        for schedule in self.store.due(now):
            if self.active >= self.max_concurrent:
                return  # still due: the next tick takes it
            d = decide_fire(schedule_step(schedule.every_s, schedule.cron), schedule.next_at or now, now,
                            grace_s=schedule.grace_s, running=self.store.running(schedule.id), runs=schedule.runs,
                            max_runs=schedule.max_runs)
            run = ScheduledRun(0, schedule.id, d.fire_at, "running" if d.run else "skipped",
                               started=now if d.run else None, ended=None if d.run else now, note=d.skip or "")
            run_id = self.store.claim(schedule, d.next_at, run, self.owner)
            if run_id is None:
                continue  # another scheduler took this fire
            if not d.run:
                self.notify("skipped", ScheduledRun(run_id, schedule.id, d.fire_at, "skipped", note=run.note))
                continue
            self.active += 1
            tg.start_soon(self._fire, schedule, ScheduledRun(run_id, schedule.id, d.fire_at, "running", started=now))

    async def _fire(self, schedule: Schedule, run: ScheduledRun) -> None:
        self.notify("started", run)
        outcome = FireOutcome("interrupted", note="the scheduler was stopped during this run")
        try:
            outcome = await self.run_fire(schedule, lambda stop: self._interrupts.__setitem__(run.id, stop))
        except Exception as exc:  # a broken schedule (its folder gone, say) must not stop the others
            outcome = FireOutcome("error", note=f"{type(exc).__name__}: {exc}")
        finally:
            self._interrupts.pop(run.id, None)
            self.active -= 1
            if self._sleep_scope is not None:
                self._sleep_scope.cancel()  # room for another fire: look again now
            ended, note = self.clock.now(), outcome.note[:MAX_NOTE]
            self.store.finish(run.id, outcome.status, ended, outcome.session_id, outcome.cost_usd, note)
        self.notify("finished", ScheduledRun(run.id, run.schedule_id, run.fire_at, outcome.status, run.started, ended,
                                             outcome.session_id, outcome.cost_usd, note))

    async def serve(self, *, once: bool = False) -> None:
        """Run until `stop()` (or, with `once`, until the fires due now have finished)."""
        self.recover()
        await super().serve(once=once)

    def _next_wait(self) -> float:
        if self.active >= self.max_concurrent:
            return self.poll_s  # a finishing fire wakes the loop sooner
        upcoming = [s.next_at for s in self.store.schedules() if not s.paused and s.next_at is not None]
        now = self.clock.now()
        return max(0.0, min([self.poll_s, *(at - now for at in upcoming)]))

