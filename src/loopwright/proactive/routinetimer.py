"""Routines fired by the scheduler, beside schedules: each registered routine that is due is
claimed (a compare-and-set on its next fire, so one scheduler of several takes it) and fired by
`run_fire` (injected: the CLI runs `loopwright routine run NAME --once` in its folder). Missed
fires collapse into one; a routine still firing here is not fired again until it ends. Whether
an item runs is the ledger's to decide, item by item, so a late or doubled fire is harmless."""

from __future__ import annotations

from typing import Awaitable, Callable, Protocol

import anyio

from ..core.clock import Clock
from .ticker import Ticker
from ..core.storeports import RoutineEntry
from ..policy.cadence import schedule_step

POLL_S = 30.0

Register = Callable[[Callable[[], None]], None]
RunRoutineFire = Callable[[RoutineEntry, Register], Awaitable[str]]


class Registry(Protocol):
    """The routines a scheduler fires (`stores.ledger.SqliteLedger` is one)."""

    def due_routines(self, now: float) -> list[RoutineEntry]: ...

    def registered(self) -> list[RoutineEntry]: ...

    def claim_fire(self, routine: str, due_at: float, next_at: float) -> bool: ...


class RoutineTimer(Ticker):
    def __init__(self, ledger: Registry, run_fire: RunRoutineFire, clock: Clock, *,
                 notify: Callable[[str, RoutineEntry, str], None] = lambda kind, entry, text: None,
                 poll_s: float = POLL_S) -> None:
        self.ledger, self.run_fire, self.clock, self.notify, self.poll_s = ledger, run_fire, clock, notify, poll_s
        self.active: set[str] = set()
        self._interrupts: dict[str, Callable[[], None]] = {}
        self._start_ticking()

    async def tick(self, tg: anyio.abc.TaskGroup) -> None:
        now = self.clock.now()
        for entry in self.ledger.due_routines(now):
            if entry.key in self.active or entry.next_at is None:
                continue
            following = schedule_step(entry.every_s, entry.cron)(now)
            if not self.ledger.claim_fire(entry.key, entry.next_at, following):
                continue  # another scheduler took this fire
            self.active.add(entry.key)
            tg.start_soon(self._fire, entry)

    async def _fire(self, entry: RoutineEntry) -> None:
        self.notify("started", entry, "")
        text = "the scheduler was stopped during this fire"
        try:
            text = await self.run_fire(entry, lambda stop: self._interrupts.__setitem__(entry.key, stop))
        except Exception as exc:  # one broken routine must not stop the others
            text = f"error: {type(exc).__name__}: {exc}"
        finally:
            self._interrupts.pop(entry.key, None)
            self.active.discard(entry.key)
            if self._sleep_scope is not None:
                self._sleep_scope.cancel()
        self.notify("finished", entry, text)

    def _next_wait(self) -> float:
        upcoming = [e.next_at for e in self.ledger.registered()
                    if not e.paused and e.next_at is not None and e.key not in self.active]
        now = self.clock.now()
        return max(0.0, min([self.poll_s, *(at - now for at in upcoming)]))

