"""`loopwright -p "/loop …"`: a time-based loop in the foreground, in one session, until the
model stops it (self-paced), a bound (`--max-iterations`, `--until`, a week) or Ctrl-C ends it."""

from __future__ import annotations

import asyncio
import os
import sys
import time
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from ..config import parse_duration, positive
from ..core.errors import UsageError
from ..core.events import Event, ResultEvent
from ..compose.runspec import limit
from ..compose.render import dumps

if TYPE_CHECKING:
    from .options import Options


def parse_until(value: str | None, now: float) -> float | None:
    """`--until`: a duration from now (`90m`, `2h`) or a local time today or later (`17:30`,
    `2026-12-24T09:00`)."""
    if not value:
        return None
    for fmt in ("%H:%M", "%H:%M:%S", "%Y-%m-%dT%H:%M", "%Y-%m-%dT%H:%M:%S", "%Y-%m-%d %H:%M"):
        try:
            parsed = time.strptime(value, fmt)
        except ValueError:
            continue
        if fmt.startswith("%H"):  # a time of day: today, or tomorrow if it has passed
            today = time.localtime(now)
            at = time.mktime((today.tm_year, today.tm_mon, today.tm_mday, parsed.tm_hour, parsed.tm_min,
                              parsed.tm_sec, 0, 0, -1))
            return at if at > now else at + 86400
        at = time.mktime(parsed[:8] + (-1,))
        if at <= now:
            raise UsageError(f"--until: {value!r} has already passed")
        return at
    try:
        return now + parse_duration(value, "--until")
    except UsageError:
        raise UsageError(f"--until: expected a duration such as 90m or 2h, or a local time such as 17:30 or "
                         f"2026-12-24T09:00, got {value!r}") from None


def _bound_the_loop(agent: Any, opts: Options, now: float, until: float | None) -> tuple[Any, float | None]:
    """The loop's default bounds where the flags give none (each iteration 100 turns; the whole
    loop $10 where the model's price is known; a week at most), said in one stderr line. Returns
    `agent` with them and the whole loop's money bound."""
    from ..policy.bounds import DEFAULT_BUDGET_USD, DEFAULT_TURNS
    from ..policy.cadence import EXPIRY_S
    from ..policy.models import resolve_model

    priced = resolve_model(agent.model).price is not None
    turns, origin_t = (limit(opts.max_turns), "flag") if opts.max_turns is not None else (DEFAULT_TURNS, "default")
    budget, origin_b = ((limit(opts.max_budget_usd), "flag") if opts.max_budget_usd is not None
                        else (DEFAULT_BUDGET_USD, "default") if priced else (None, "unpriced"))
    agent = agent.replace(limits=replace(agent.limits, max_turns=turns),
                          budget=replace(agent.budget, max_budget_usd=budget))
    parts = [f"{turns} turns an iteration ({origin_t})" if turns else "no turn bound an iteration (removed)",
             f"${budget:g} in all ({origin_b})" if budget else
             "no money bound (no price is known for the model)" if origin_b == "unpriced" else "no money bound (removed)"]
    if opts.max_iterations:
        parts.append(f"{opts.max_iterations} iterations (flag)")
    end = min(x for x in (until, now + EXPIRY_S) if x is not None)
    parts.append(f"ends by {time.strftime('%Y-%m-%d %H:%M', time.localtime(end))} "
                 f"({'--until' if until is not None and until <= now + EXPIRY_S else 'a week at most'})")
    print(f"loopwright: loop bounds: {', '.join(parts)}; change with --max-turns, --max-budget-usd (a value, or "
          "none), --max-iterations, --until", file=sys.stderr, flush=True)
    return agent, budget


def run_loop(opts: Options, prompt: str) -> int:
    from ..compose.build import build
    from ..core.clock import SystemClock
    from ..policy.cadence import parse_loop
    from .core import print_result

    try:
        args = parse_loop(prompt.strip()[len("/loop"):])
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    spec, every = _iteration_goal(opts, args.prompt)
    positive(opts.max_iterations, "--max-iterations")
    clock = SystemClock()
    until = parse_until(opts.until, clock.now())  # a bad --until is refused before any session opens
    built = build(opts, every, goal=False)  # each iteration sets its own goal (below)
    try:
        result = asyncio.run(_looped(built, opts, args, spec, every, clock, until))
    finally:
        built.close()
    fmt = opts.output_format
    if fmt == "text" and result.loop:
        print(f"loopwright: {loop_ended(result)}", file=sys.stderr, flush=True)
    if fmt == "json":
        print_result(result, "json")
    elif fmt == "stream-json":
        sys.stdout.write(dumps(result.to_json()) + "\n")  # the last line: the loop's summary
        sys.stdout.flush()
    return result.exit_code


async def _looped(built: Any, opts: Options, args: Any, spec: Any, every: str, clock: Any,
                  until: float | None) -> Any:
    """The loop of `built` (`compose.build.Built`) in the foreground, bounded, each iteration
    judged against `spec` (a goal) when there is one."""
    from ..proactive.schedule import SessionCrons, TimeLoop, loop_prompt
    from .core import foreground, print_result

    agent, budget = _bound_the_loop(built.agent, opts, clock.now(), until)
    fmt = opts.output_format
    emit = built.emitter(fmt, opts.verbose)

    def on_event(event: Event) -> None:
        emit(event)
        if fmt == "text" and isinstance(event, ResultEvent):
            print_result(event.result, "text")  # each iteration's answer as it comes

    async def iteration(text: str) -> Any:
        if spec is not None:  # each iteration a goal loop of its own: judged afresh, its bounds anew
            built.session.set_goal(spec)
        return await run.prompt(text, on_event=on_event)

    if spec is not None:
        from ..compose.goals import bounds_line

        print(bounds_line(spec, agent.model).replace("goal bounds", "goal bounds, each iteration", 1),
              file=sys.stderr, flush=True)
    loop = TimeLoop(iteration, loop_prompt(every, str(agent.cwd), os.path.expanduser("~")), args.interval_s, clock,
                    on_event, until=until, max_iterations=opts.max_iterations,
                    max_budget_usd=budget, crons=SessionCrons(clock))
    if loop.cadence is not None and loop.cadence.note:
        print(f"loopwright: note: {loop.cadence.note}", file=sys.stderr, flush=True)
    built.agent = agent.replace(capabilities=[*agent.capabilities, loop_tools(loop)])
    run = built.start()

    def interrupt() -> None:
        loop.interrupt()
        run.interrupt()

    return await foreground(run, loop.run, on_event, interrupt)


def loop_tools(loop: Any) -> Any:
    """The `LoopTools` capability of a `TimeLoop`: ScheduleWakeup when it is self-paced, the cron
    tools when it keeps crons, and its guide."""
    from ..capabilities.looping import LoopTools
    from ..tools.crons import cron_tools
    from ..tools.wakeup import ScheduleWakeupTool

    paced = [ScheduleWakeupTool(loop.pacer)] if loop.pacer is not None else []
    return LoopTools(loop.guide, [*paced, *(cron_tools(loop.crons) if loop.crons is not None else ())])


def _iteration_goal(opts: Options, prompt: str) -> tuple[Any, str]:
    """`/loop 30m /goal COND` (or `/loop … PROMPT` with --goal or --goal-file): every iteration is
    a goal loop; (its spec, the prompt that starts each iteration). Without a goal: (None, prompt)."""
    from ..compose.goals import goal_from_options

    spec, start = goal_from_options(opts, prompt)  # goal flags without a goal are refused there
    if start is None:
        raise UsageError("/loop … /goal needs a condition (`/goal clear` has nothing to clear in a loop)")
    return spec, start


def loop_ended(result: Any) -> str:
    """The closing line of a loop in text mode: why it ended, after how much."""
    loop = result.loop
    why = {"interrupted": "interrupted by the user", "max_iterations": "--max-iterations reached",
           "until": "--until reached", "expired": "a week is up", "stopped": "the model ended it",
           "no_reschedule": "the model scheduled no next run", "failing": "iterations kept failing",
           "budget_exhausted": "its money bound was spent"}.get(loop["terminal_reason"], loop["terminal_reason"])
    return (f"loop ended: {why}, after {loop['iterations']} iteration(s), {result.num_turns} turns, "
            f"${result.total_cost_usd:.4f}")
