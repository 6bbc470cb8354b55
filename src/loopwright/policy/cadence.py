"""Time-based loops as pure policy: `/loop` arguments, fixed intervals as clean cron steps, the
next fire time, the self-paced wake-up bounds, and what a loop does after each iteration.
Times are wall-clock epoch seconds; fire times follow local time, as cron does."""

from __future__ import annotations

import math
import re
import time
from dataclasses import replace
from typing import Callable, Literal, Union

from ..core.fastclass import dataclass
from .durations import UNITS, unit_seconds

MIN_WAKEUP_S, MAX_WAKEUP_S = 60, 3600  # a self-paced loop wakes between one minute and one hour
FALLBACK_WAKEUP_S = 20 * 60  # an iteration that neither reschedules nor stops: one more try
EXPIRY_S = 7 * 24 * 3600  # a loop expires a week after it starts, after one final iteration
MAX_FAILED_ITERATIONS = 3  # iterations in a row that end in an error before the loop gives up
MAX_LOOP_FILE_BYTES = 25_000

_LEADING = re.compile(r"(\d+)([smhd])(?:\s+|$)(.*)", re.S)
_TRAILING = re.compile(r"(.*?)[\s,;]*\bevery\s+(?:(\d+)\s*)?([a-z]+)\s*\.?\s*$", re.S | re.I)
_MINUTE_STEPS = (1, 2, 3, 4, 5, 6, 10, 12, 15, 20, 30)  # divide an hour: a clean `*/N` minute step
_HOUR_STEPS = (1, 2, 3, 4, 6, 8, 12)  # divide a day


@dataclass(frozen=True, slots=True)
class LoopArgs:
    """What `/loop …` asked for: an interval in seconds (None: self-paced) and the prompt ("" when
    none was given: the loop file or the built-in prompt)."""

    interval_s: int | None
    prompt: str


def parse_loop(text: str) -> LoopArgs:
    """`5m PROMPT`, `PROMPT every 2 hours`, `PROMPT` (self-paced), `5m` or nothing (no prompt).
    Raises ValueError naming the interval when it is not one a loop can keep."""
    text = text.strip()
    lead = _LEADING.fullmatch(text)
    if lead:
        return LoopArgs(_interval(int(lead.group(1)), lead.group(2), lead.group(0).split()[0]), lead.group(3).strip())
    trail = _TRAILING.fullmatch(text)
    if trail and trail.group(3).lower() in UNITS and unit_seconds(trail.group(3)) >= 1:
        count = int(trail.group(2)) if trail.group(2) else 1
        said = text[len(trail.group(1)):].strip(" ,;.")
        return LoopArgs(_interval(count, trail.group(3), said), trail.group(1).strip())
    return LoopArgs(None, text)


def parse_interval(text: str) -> int | None:
    """`5m`, `2h`, `1d`, `30s` as seconds; None when the text is not one interval. Raises
    ValueError for an interval a loop cannot keep (zero, over a week)."""
    lead = _LEADING.fullmatch(text.strip())
    if lead is None or lead.group(3):
        return None
    return _interval(int(lead.group(1)), lead.group(2), text.strip())


def _interval(count: int, unit: str, said: str) -> int:
    seconds = int(count * unit_seconds(unit))
    if seconds <= 0:
        raise ValueError(f"loop interval {said!r}: expected a positive interval such as 5m, 2h or 1d")
    if seconds > EXPIRY_S:
        raise ValueError(f"loop interval {said!r}: at most 7d (a loop expires after 7 days)")
    return seconds


@dataclass(frozen=True, slots=True)
class Cadence:
    """A fixed interval as a clean cron step: `every_s` is what the loop keeps, `note` says why it
    differs from what was asked (None when it does not)."""

    cron: str
    every_s: int
    note: str | None = None


def cadence(seconds: int) -> Cadence:
    """Seconds round up to whole minutes; a step that does not divide its hour (or day) rounds to
    the nearest one that does, the longer of two equally near."""
    minutes = max(1, math.ceil(seconds / 60))
    options = [(m, f"*/{m} * * * *" if m > 1 else "* * * * *") for m in _MINUTE_STEPS]
    options += [(h * 60, f"0 */{h} * * *" if h > 1 else "0 * * * *") for h in _HOUR_STEPS]
    options += [(d * 1440, f"0 0 */{d} * *" if d > 1 else "0 0 * * *") for d in range(1, 8)]
    chosen, cron = min(options, key=lambda o: (abs(o[0] - minutes), -o[0]))
    note = None
    if chosen * 60 != seconds:
        note = f"{_say(seconds)} is not a clean cron step; using every {_say(chosen * 60)} ({cron})"
    return Cadence(cron, chosen * 60, note)


def _say(seconds: int) -> str:
    for unit in ("d", "h", "m"):
        size = int(unit_seconds(unit))
        if seconds % size == 0:
            return f"{seconds // size}{unit}"
    return f"{seconds}s"


def next_fire(every_s: int, after: float) -> float:
    """The first time after `after` that the cadence's cron expression matches, in local time:
    minute steps on the hour's clean minutes, hour steps at :00 of clean hours, day steps at
    midnight of days 1, 1+N, … of the month (cron's `*/N` day-of-month)."""
    if every_s < 3600:
        step = every_s // 60
        t = float((math.floor(after / 60) + 1) * 60)  # the next whole minute (zones are whole minutes)
        while time.localtime(t).tm_min % step:
            t += 60
        return t
    if every_s < 86400:
        step = every_s // 3600
        lt = time.localtime(after)
        t = time.mktime((lt.tm_year, lt.tm_mon, lt.tm_mday, lt.tm_hour + 1, 0, 0, 0, 0, -1))
        while time.localtime(t).tm_hour % step:
            t += 3600
        return t
    step = every_s // 86400
    lt = time.localtime(after)
    day = 1
    while True:
        t = time.mktime((lt.tm_year, lt.tm_mon, lt.tm_mday + day, 0, 0, 0, 0, 0, -1))
        if (time.localtime(t).tm_mday - 1) % step == 0:
            return t
        day += 1


def clamp_wakeup(seconds: float) -> tuple[int, str | None]:
    """A self-paced delay within one minute and one hour, with a note when it was moved."""
    kept = int(min(max(seconds, MIN_WAKEUP_S), MAX_WAKEUP_S))
    if kept != seconds:
        return kept, f"delay {seconds:g}s is outside {MIN_WAKEUP_S}–{MAX_WAKEUP_S}s; using {kept}s"
    return kept, None


# ---------------------------------------------------------------- after each iteration


@dataclass(frozen=True, slots=True)
class LoopPlan:
    """A loop's fixed facts: `every_s` None is self-paced; `until`, `max_iterations` and
    `max_budget_usd` (the whole loop's spend) are the user's bounds (None: unbounded); `expires` is
    a week after the start."""

    every_s: int | None
    started: float
    expires: float
    until: float | None = None
    max_iterations: int | None = None
    max_budget_usd: float | None = None


@dataclass(frozen=True, slots=True)
class Iteration:
    """How one iteration ended: its start, whether it failed, and a self-paced wake-up request
    (`wakeup_s`) or stop (`stop`) when the model made one."""

    started: float
    ended: float
    failed: bool = False
    interrupted: bool = False
    wakeup_s: float | None = None
    stop: bool = False
    cost_usd: float = 0.0


@dataclass(frozen=True, slots=True)
class LoopState:
    iterations: int = 0
    spent_usd: float = 0.0
    failures_in_row: int = 0
    fallback_pending: bool = False  # the last wait was the fallback: no reschedule ends the loop
    final: bool = False  # the iteration just run was the one after expiry


@dataclass(frozen=True, slots=True)
class Wait:
    at: float
    reason: Literal["schedule", "missed", "wakeup", "fallback", "expiry"]


@dataclass(frozen=True, slots=True)
class End:
    reason: Literal["stopped", "max_iterations", "until", "expired", "no_reschedule", "failing", "interrupted",
                    "budget_exhausted"]


LoopNext = Union[Wait, End]


def after_iteration(plan: LoopPlan, state: LoopState, it: Iteration) -> tuple[LoopNext, LoopState]:
    """What follows an iteration: wait for the next one (and when), or end (and why)."""
    failures = state.failures_in_row + 1 if it.failed else 0
    state = replace(state, iterations=state.iterations + 1, spent_usd=state.spent_usd + it.cost_usd,
                    failures_in_row=failures)
    if it.interrupted:
        return End("interrupted"), state
    if failures >= MAX_FAILED_ITERATIONS:
        return End("failing"), state
    if plan.max_budget_usd is not None and state.spent_usd >= plan.max_budget_usd:
        return End("budget_exhausted"), state
    if state.final:
        return End("expired"), state
    if plan.max_iterations is not None and state.iterations >= plan.max_iterations:
        return End("max_iterations"), state
    if plan.every_s is not None:
        nxt = next_fire(plan.every_s, it.started)
        wait = Wait(max(nxt, it.ended), "missed" if nxt <= it.ended else "schedule")
        fallback = False
    elif it.stop:
        return End("stopped"), state
    elif it.wakeup_s is not None:
        wait, fallback = Wait(it.ended + clamp_wakeup(it.wakeup_s)[0], "wakeup"), False
    elif state.fallback_pending:
        return End("no_reschedule"), state
    else:
        wait, fallback = Wait(it.ended + FALLBACK_WAKEUP_S, "fallback"), True
    if plan.until is not None and wait.at > plan.until:
        return End("until"), state
    final = wait.at >= plan.expires
    if final:  # one last iteration when the week is up, then the loop is gone
        wait = Wait(max(plan.expires, it.ended), "expiry")
    return wait, replace(state, fallback_pending=fallback, final=final)


# ---------------------------------------------------------------- persisted schedules


@dataclass(frozen=True, slots=True)
class FireDecision:
    """What to do with a schedule that is due: `run` its fire at `fire_at`, or record it as
    skipped (`skip`: overlap, misfire); then the schedule's next fire is `next_at` (None: it has
    run `max_runs` times and is finished)."""

    fire_at: float
    next_at: float | None
    run: bool
    skip: str | None = None


def cron_error(expr: str) -> str | None:
    """Why a cron expression cannot drive a schedule, or None: five fields (minute hour
    day-of-month month day-of-week), as cron reads them."""
    from croniter import croniter

    fields = expr.split()
    if len(fields) != 5:
        return (f"expected five cron fields (minute hour day-of-month month day-of-week), got {len(fields)} "
                f"in {expr!r}")
    for i, (value, (name, allowed)) in enumerate(zip(fields, _CRON_FIELDS)):
        alone = " ".join(value if j == i else "*" for j in range(5))
        if not croniter.is_valid(alone):
            return f"the {name} field {value!r} of {expr!r} is not valid: expected {allowed}, `*`, a list, range or step"
    if not croniter.is_valid(expr):
        return f"{expr!r} is not a cron expression this scheduler can run"
    return None


_CRON_FIELDS = (("minute", "0-59"), ("hour", "0-23"), ("day-of-month", "1-31"), ("month", "1-12 or jan-dec"),
                ("day-of-week", "0-7 or sun-sat"))


def cron_next(expr: str, after: float) -> float:
    """The first time after `after` that the expression matches, in local time (day-of-month and
    day-of-week are ORed when both are restricted, as cron does)."""
    from datetime import datetime

    from croniter import croniter

    return float(croniter(expr, datetime.fromtimestamp(after).astimezone()).get_next(float))


def schedule_step(every_s: int, cron: str = "") -> Callable[[float], float]:
    """A schedule's next fire after a time: its cron expression if it has one, else its step."""
    if cron:
        return lambda after: cron_next(cron, after)
    return lambda after: next_fire(every_s, after)


def decide_fire(step: Callable[[float], float], due_at: float, now: float, *, grace_s: float, running: bool,
                runs: int, max_runs: int | None) -> FireDecision:
    """Missed fires collapse into the latest one; it runs unless the schedule's previous run is
    still going (no overlap) or it is later than the misfire grace (the scheduler was down)."""
    latest = due_at
    while (following := step(latest)) <= now:
        latest = following
    following = step(max(latest, now))
    if running:
        return FireDecision(latest, following, False, "overlap")
    if now - latest > grace_s:
        return FireDecision(latest, following, False, "misfire")
    finished = max_runs is not None and runs + 1 >= max_runs
    return FireDecision(latest, None if finished else following, True)
