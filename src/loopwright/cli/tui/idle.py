"""`/loop` in the interactive terminal: the first iteration runs at once, the next ones fire when
the interval has passed and the prompt is idle (never during a turn), until `/loop stop`, the
session's end or a week. Intervals are kept as given (seconds too): no cron is involved here.
Without an interval the loop is self-paced, as with `-p`: the model is offered `ScheduleWakeup`
and told to pace itself; after each iteration the same policy as `-p`'s decides the next fire
(its wake-up, the fallback retry, or the end: it stopped, it scheduled nothing twice, it failed
three times in a row, Esc, a week)."""

from __future__ import annotations

import os
import time
from typing import TYPE_CHECKING, Any, Callable

from ...core.fastclass import dataclass

if TYPE_CHECKING:
    from ...agent.run import Run


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
        self.paced: Any = None  # a self-paced loop: its `Paced` state

    @property
    def next_at(self) -> float | None:
        return self.room.status.next_loop

    def command(self, args: str) -> str | None:
        """`/loop INTERVAL PROMPT`, `/loop PROMPT every 5m`, `/loop` (its state), `/loop stop`."""
        from ...policy.cadence import EXPIRY_S, cadence, parse_loop
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
        if self.prompt is not None:
            self.stop("another /loop replaced it")
        self.iterations = 1
        self.prompt = loop_prompt(parsed.prompt, str(self.room.agent.cwd), os.path.expanduser("~"))
        self.ends_at = self.clock() + EXPIRY_S
        if parsed.interval_s is None:
            self.paced = Paced(self.room.live, self.clock)
            self.ends_at += EXPIRY_S  # the policy ends it (after a last iteration when the week is up)
            self.room.say("⟳ self-paced loop: the model sets when the next iteration comes (ScheduleWakeup); "
                          "/loop stop ends it")
            return self.prompt()
        steps = cadence(parsed.interval_s)  # the same clean cron step as `-p`, schedules and routines
        self.every_s = steps.every_s
        self.room.status.next_loop = self.clock() + self.every_s
        if steps.note:
            self.room.say(f"note: {steps.note}")
        self.room.say(f"⟳ looping every {_say(self.every_s)} while the prompt is idle (/loop stop ends it)")
        return self.prompt()

    def due_in(self) -> float | None:
        """Seconds until the next iteration (0: due now), None when no loop runs."""
        at = self.room.status.next_loop
        return None if at is None else max(0.0, at - self.clock())

    def fire(self) -> str | None:
        """The next iteration's prompt, the fire time moved on; None when the loop has expired."""
        if self.prompt is None or (self.every_s is None and self.paced is None):
            return None
        if self.clock() >= self.ends_at:
            self.stop("a week is up")
            return None
        self.iterations += 1
        if self.paced is not None:
            self.paced.begin()
            self.room.status.next_loop = None  # the iteration says when the next one comes
        else:
            self.room.status.next_loop = self.clock() + (self.every_s or 0)
        self.room.say(f"⟳ loop iteration {self.iterations}")
        return self.prompt()

    def stop(self, why: str) -> None:
        if self.prompt is None:
            self.room.say("no loop is running")
            return
        self.room.say(f"⟳ loop over after {self.iterations} iteration(s): {why}")
        self.prompt, self.every_s, self.room.status.next_loop = None, None, None
        if self.paced is not None:
            self.paced.close()
            self.paced = None

    def ended(self, result: Any) -> None:
        """After every turn: a self-paced loop's iteration decides the next fire, or the end."""
        if self.paced is None:
            return
        at = self.paced.after(result)
        if isinstance(at, str):
            self.stop(at)
        elif at is not None:
            self.room.status.next_loop = at
            self.room.say(f"⟳ next iteration at {time.strftime('%H:%M:%S', time.localtime(at))}")

    def describe(self) -> str:
        if self.prompt is None:
            return "no loop is running · /loop INTERVAL PROMPT starts one"
        at = time.strftime("%H:%M:%S", time.localtime(self.room.status.next_loop or 0))
        how = "self-paced loop" if self.paced is not None else f"loop every {_say(self.every_s or 0)}"
        nxt = f"next at {at}" if self.room.status.next_loop is not None else "an iteration is running"
        return f"{how}, {self.iterations} iteration(s), {nxt}"


def _say(seconds: int) -> str:
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds % size == 0:
            return f"{seconds // size}{unit}"
    return f"{seconds}s"


ENDED = {"stopped": "the model ended it", "no_reschedule": "the model scheduled no next run",
         "failing": "iterations kept failing", "interrupted": "interrupted", "expired": "a week is up",
         "budget_exhausted": "its money bound was spent", "until": "its end time came",
         "max_iterations": "its iterations ran out"}


class _Now:
    def __init__(self, clock: Callable[[], float]) -> None:
        self.now = clock


class Paced:
    """A self-paced loop's part of the session: its `LoopTools` (`ScheduleWakeup` and the pacing
    guide) among the agent's capabilities while it runs; the loop policy's state between iterations."""

    def __init__(self, live: Run, clock: Callable[[], float]) -> None:
        """`live`: the session's run: its agent has the capability until `close`
        (then it is again the agent it was)."""
        from ...policy.cadence import EXPIRY_S, LoopPlan, LoopState
        from ...capabilities.looping import LoopTools
        from ...proactive.schedule import PACED_GUIDE, Pacer
        from ...tools.wakeup import ScheduleWakeupTool

        self.live, self.clock = live, clock
        self.pacer = Pacer(_Now(clock))  # type: ignore[arg-type]
        now = clock()
        self.plan, self.state = LoopPlan(None, now, now + EXPIRY_S), LoopState()
        self.capability = LoopTools(PACED_GUIDE, [ScheduleWakeupTool(self.pacer)])
        live.update(capabilities=[*live.agent.capabilities, self.capability])
        self.started: float | None = now  # the iteration running now (None: a turn of the person's)

    def begin(self) -> None:
        self.started = self.clock()

    def after(self, result: Any) -> float | str | None:
        """After a turn: when the next iteration fires, why the loop is over, or None (the turn
        was not an iteration; a wake-up the model asked for in it is dropped)."""
        from ...policy.cadence import Iteration, Wait, after_iteration

        wakeup, stop = self.pacer.take()
        if self.started is None:
            return None
        aborted = result.terminal_reason == "aborted"
        it = Iteration(self.started, self.clock(), failed=result.is_error and not aborted, interrupted=aborted,
                       wakeup_s=wakeup, stop=stop, cost_usd=result.total_cost_usd)
        self.started = None
        nxt, self.state = after_iteration(self.plan, self.state, it)
        return nxt.at if isinstance(nxt, Wait) else ENDED.get(nxt.reason, nxt.reason)

    def close(self) -> None:
        self.live.update(capabilities=[c for c in self.live.agent.capabilities if c is not self.capability])
