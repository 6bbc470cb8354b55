"""`/loop` in the interactive terminal: the first iteration runs at once, the next ones fire when
the interval has passed and the prompt is idle (never during a turn), until `/loop stop`, the
session's end or a week. Intervals are kept as given (seconds too): no cron is involved here."""

from __future__ import annotations

import os
import time
from typing import Any, Callable

from ...core.fastclass import dataclass


@dataclass(slots=True)
class Fire:
    """What the idle prompt returns when an iteration is due."""

    prompt: str


class IdleLoop:
    def __init__(self, room: Any, clock: Callable[[], float] = time.time) -> None:
        self.room, self.clock = room, clock
        self.every_s: int | None = None
        self.prompt: Callable[[], str] | None = None
        self.ends_at = 0.0
        self.iterations = 0

    @property
    def next_at(self) -> float | None:
        return self.room.status.next_loop

    def command(self, args: str) -> str | None:
        """`/loop INTERVAL PROMPT`, `/loop PROMPT every 5m`, `/loop` (its state), `/loop stop`."""
        from ...policy.cadence import EXPIRY_S, parse_loop
        from ...proactive.schedule import loop_prompt

        if args in ("", "status"):
            self.room.say(self.describe())
            return None
        if args in ("stop", "off", "cancel"):
            self.stop("stopped")
            return None
        try:
            parsed = parse_loop(args)
        except ValueError as exc:
            self.room.say(f"error: {exc}")
            return None
        if parsed.interval_s is None:
            self.room.say("error: /loop in the terminal needs an interval, e.g. /loop 5m check the build "
                          "(self-paced loops run with loopwright -p \"/loop PROMPT\")")
            return None
        self.every_s, self.iterations = parsed.interval_s, 1
        self.prompt = loop_prompt(parsed.prompt, str(self.room.agent.cwd), os.path.expanduser("~"))
        self.ends_at = self.clock() + EXPIRY_S
        self.room.status.next_loop = self.clock() + self.every_s
        self.room.say(f"⟳ looping every {_say(self.every_s)} while the prompt is idle (/loop stop ends it)")
        return self.prompt()

    def due_in(self) -> float | None:
        """Seconds until the next iteration (0: due now), None when no loop runs."""
        at = self.room.status.next_loop
        return None if at is None else max(0.0, at - self.clock())

    def fire(self) -> str | None:
        """The next iteration's prompt, the fire time moved on; None when the loop has expired."""
        if self.prompt is None or self.every_s is None:
            return None
        if self.clock() >= self.ends_at:
            self.stop("a week is up")
            return None
        self.iterations += 1
        self.room.status.next_loop = self.clock() + self.every_s
        self.room.say(f"⟳ loop iteration {self.iterations}")
        return self.prompt()

    def stop(self, why: str) -> None:
        if self.prompt is None:
            self.room.say("no loop is running")
            return
        self.room.say(f"⟳ loop over after {self.iterations} iteration(s): {why}")
        self.prompt, self.every_s, self.room.status.next_loop = None, None, None

    def describe(self) -> str:
        if self.prompt is None:
            return "no loop is running · /loop INTERVAL PROMPT starts one"
        at = time.strftime("%H:%M:%S", time.localtime(self.room.status.next_loop or 0))
        return f"loop every {_say(self.every_s or 0)}, {self.iterations} iteration(s), next at {at}"


def _say(seconds: int) -> str:
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds % size == 0:
            return f"{seconds // size}{unit}"
    return f"{seconds}s"
