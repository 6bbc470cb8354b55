"""`loopwright routine run NAME`: fire a routine now (and, without --once, again on its trigger
until Ctrl-C), with the engine's fire (`proactive.fire`) given this process's ledger, agents and
report command. A line per item on stderr, the fire's totals on stdout."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
import time
from typing import Any, Callable

from ....compose.render import visible


def fire_routine(routine: Any, key: str, store: Any, *, once: bool, dry_run: bool, queue: Any = None) -> int:
    """`queue`: (store URL, queue name) to send each item to `loopwright worker`s; None: run here."""
    return asyncio.run(_serve(routine, key, store, once=once or dry_run, dry_run=dry_run, queue=queue))


def say(name: str) -> Callable[[str], None]:
    def line(text: str) -> None:
        print(visible(f"{time.strftime('%H:%M:%S')} {name}: {text}"), file=sys.stderr, flush=True)

    return line


async def _serve(routine: Any, key: str, store: Any, *, once: bool, dry_run: bool, queue: Any = None) -> int:
    from ....policy.cadence import schedule_step

    interrupts: dict[int, Callable[[], None]] = {}
    stopping = asyncio.Event()

    def on_signal() -> None:
        if stopping.is_set():
            os._exit(130)  # a second Ctrl-C: leave now
        stopping.set()
        for interrupt in list(interrupts.values()):
            interrupt()

    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, on_signal)
    try:
        while True:
            code = await fire_once(routine, key, store, interrupts, stopping.is_set, dry_run=dry_run, queue=queue)
            if once or stopping.is_set():
                return 130 if stopping.is_set() else code
            if not (routine.every_s or routine.cron):
                say(routine.name)("no `every:` or `cron:` in the routine: fired once")
                return code
            wait = schedule_step(routine.every_s, routine.cron)(time.time()) - time.time()
            say(routine.name)(f"next fire at {time.strftime('%H:%M:%S', time.localtime(time.time() + wait))}")
            try:
                await asyncio.wait_for(stopping.wait(), max(wait, 0.0))
                return 130
            except asyncio.TimeoutError:
                continue
    finally:
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.remove_signal_handler(sig)


async def fire_once(routine: Any, key: str, store: Any, interrupts: dict[int, Callable[[], None]],
                    stopping: Callable[[], bool], *, dry_run: bool = False, queue: Any = None) -> int:
    """One fire; 0, or 1 when the source could not be read."""
    from ....core.ids import uuid4
    from ....core.owners import owner_alive, this_owner
    from ....proactive.fire import FireContext, fire
    from ....proactive.sources import SourceError, command_items, folder_items, queued_items, run_report
    from ....compose.runspec import RunSpec
    from ...core import load_run_settings
    from .item import item_runner

    line = say(routine.name)
    cwd = os.getcwd()
    try:
        if routine.source_kind == "http":
            found = queued_items(store, key, routine.retry_failed)
        else:
            found = (await command_items(routine.source, cwd) if routine.source_kind == "command"
                     else folder_items(routine.source, cwd))
    except SourceError as exc:
        line(f"error: {exc}")
        print(visible(f"routine {routine.name}: the source failed: {exc}"), flush=True)
        return 1

    def register(interrupt: Callable[[], None]) -> Callable[[], None]:
        interrupts[id(interrupt)] = interrupt

        def unregister() -> None:
            interrupts.pop(id(interrupt), None)

        return unregister

    async def report(outcome: Any) -> str | None:
        return await run_report(routine.report, outcome, cwd)

    settings = None if dry_run else load_run_settings(RunSpec())
    from ....telemetry import step

    # a span per fire (telemetry on), its items' spans under it
    with step(os.environ, f"routine_fire {routine.name}", {"loopwright.routine.name": routine.name}) as fired:
        ctx = FireContext(store, key, this_owner(), owner_alive, time.time, uuid4,
                          item_runner(settings, register, queue, fired.traceparent), report if routine.report else None,
                          line, stopping)
        summary = await fire(routine, found, ctx, dry_run=dry_run)
        fired.set({"loopwright.routine.found": summary.found, "loopwright.routine.taken": summary.taken,
                   "loopwright.routine.done": summary.done, "loopwright.routine.failed": summary.failed,
                   "loopwright.cost_usd": summary.spend})
    if dry_run:
        print(visible(f"routine {routine.name}: {summary.found} found; would take {len(summary.would_take)}"
                      + (f", {summary.skipped} skipped" if summary.skipped else "")), flush=True)
        for item_id in summary.would_take:
            print(visible(f"  {item_id}"), flush=True)
        return 0
    print(visible(summary.line(routine.name)), flush=True)
    return 0
