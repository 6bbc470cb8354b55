"""What the scheduler and the routine timer share: tick, sleep until the next thing is due (a
stop wakes it at once), and on `stop()` claim nothing more and interrupt what is running."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import anyio
import anyio.abc


class Ticker:
    clock: Any
    _interrupts: dict[Any, Callable[[], None]]

    def _start_ticking(self) -> None:
        self._stopping = False
        self._sleep_scope: anyio.CancelScope | None = None

    async def tick(self, tg: anyio.abc.TaskGroup) -> None:
        raise NotImplementedError

    def _next_wait(self) -> float:
        raise NotImplementedError

    async def serve(self, *, once: bool = False) -> None:
        """Run until `stop()` (or, with `once`, until what is due now has started and finished)."""
        async with anyio.create_task_group() as tg:
            while not self._stopping:
                await self.tick(tg)
                if once or not await self._sleep(self._next_wait()):
                    break

    def stop(self) -> None:
        """Claim nothing more; interrupt what runs now (it is recorded as interrupted)."""
        self._stopping = True
        if self._sleep_scope is not None:
            self._sleep_scope.cancel()
        for interrupt in list(self._interrupts.values()):
            interrupt()

    async def _sleep(self, seconds: float) -> bool:
        with anyio.CancelScope() as scope:
            self._sleep_scope = scope
            await self.clock.sleep(seconds)
        self._sleep_scope = None
        return not self._stopping
