"""A fake `Clock` for tests: `sleep` returns at once and moves time forward, so a 30-second
backoff or a week-long expiry costs nothing, and every sleep is recorded."""

from __future__ import annotations


class FakeClock:
    def __init__(self, start: float = 1_800_000_000.0) -> None:
        self._wall = start
        self._mono = 0.0
        self.sleeps: list[float] = []

    def now(self) -> float:
        return self._wall

    def monotonic(self) -> float:
        return self._mono

    def advance(self, seconds: float) -> None:
        self._wall += seconds
        self._mono += seconds

    async def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.advance(max(0.0, seconds))
        import anyio

        await anyio.lowlevel.checkpoint()
