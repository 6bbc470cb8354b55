"""`loopwright scheduler`: serves the schedules of `loopwright schedule` (and the routines' timer)
until stopped. Each fire is its own `loopwright` process, or a durable loop on a workers' queue;
its outcome is recorded in the schedule's runs."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
from typing import Any

from ...compose.render import visible
from .schedule import STORE_HELP, ScheduleParser, local_time, migrate, schedule_stores, stored_spec


def parser() -> ScheduleParser:
    p = ScheduleParser(prog="loopwright scheduler", description="Serve the schedules: fire each when due, until "
                       "Ctrl-C. Several schedulers may share the store; each fire runs once.")
    p.add_argument("--once", action="store_true", help="Run what is due now, wait for it, and exit.")
    p.add_argument("--max-concurrent", type=int, default=4, help="Fires running at once (default 4).")
    p.add_argument("--store", metavar="URL", help=STORE_HELP)
    return p


def run_scheduler(args: list[str]) -> int:
    opts = parser().parse_args(args)
    from ...config import positive

    positive(opts.max_concurrent, "--max-concurrent")
    stores = schedule_stores(opts.store)
    store = stores.schedules()
    try:
        return asyncio.run(_serve(store, stores.ledger(), opts.once, opts.max_concurrent))
    finally:
        store.close()


async def _serve(store: Any, ledger: Any, once: bool, max_concurrent: int) -> int:
    from ...core.clock import SystemClock
    from ...core.owners import owner_alive, this_owner
    from ...proactive.scheduler import Scheduler
    from ...sandbox import availability

    if (why := availability()) is not None:  # said once here; each fire's own run says it too
        print(f"loopwright: warning: fires run without the sandbox: {why}; their Bash calls are denied unless an "
              "allow rule names them (install bubblewrap)", file=sys.stderr, flush=True)
    import anyio

    from ...proactive.routinetimer import RoutineTimer

    migrate(store)  # schedules of an older release (their flags) become specs once, before any fire

    async def run_fire(schedule: Any, register: Any) -> Any:
        return await _run_fire(schedule, register, store)

    scheduler = Scheduler(store, run_fire, SystemClock(), owner=this_owner(),
                          alive=owner_alive, notify=_report, max_concurrent=max_concurrent)
    timer = RoutineTimer(ledger, _run_routine_fire, SystemClock(), notify=_report_routine)
    routines = len(ledger.registered())
    print(visible(f"loopwright: scheduler {'running what is due' if once else 'started'}: {_overview(store)}"
                  + (f"; {routines} routine(s)" if routines else "")
                  + f"{'' if once else '; Ctrl-C stops it'}"), file=sys.stderr, flush=True)
    stopped = False

    def on_signal() -> None:
        nonlocal stopped
        if stopped:
            os._exit(130)
        stopped = True
        scheduler.stop()
        timer.stop()

    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, on_signal)
    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(lambda: scheduler.serve(once=once))
            tg.start_soon(lambda: timer.serve(once=once))
    finally:
        ledger.close()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.remove_signal_handler(sig)
    return 130 if stopped else 0


def _overview(store: Any) -> str:
    """How many schedules the store holds and which fires next."""
    active = [s for s in store.schedules() if not s.paused and s.next_at is not None]
    if not active:
        return f"no active schedules in {store.path} (add one with `loopwright schedule add`)"
    first = min(active, key=lambda s: s.next_at)
    return (f"{len(active)} active schedule(s) in {store.path}; next: {first.id} at {local_time(first.next_at)}")


def _report(kind: str, run: Any) -> None:
    now = time.strftime("%Y-%m-%d %H:%M:%S")
    at = time.strftime("%H:%M:%S", time.localtime(run.fire_at))
    if kind == "started":
        line = f"▶ {run.schedule_id} · fire {at} · run {run.id}"
    elif kind == "finished":
        line = f"■ {run.schedule_id} · run {run.id} {run.status} · ${run.cost_usd:.4f} · {' '.join(run.note.split())[:80]}"
    else:  # skipped, recovered
        line = f"⤼ {run.schedule_id} · fire {at} {run.status}: {run.note}"
    print(visible(f"{now} {line}"), flush=True)


async def _run_fire(schedule: Any, register: Any, store: Any = None) -> Any:
    from ...telemetry import step

    # a span per fire (telemetry on); the run it starts, in its own process or on a worker, links to it
    with step(os.environ, f"schedule_fire {schedule.id}", {"loopwright.schedule.id": schedule.id,
                                                           "loopwright.schedule.queue": schedule.options.get("queue")
                                                           or ""}) as fired:
        outcome = await _fire(schedule, register, fired.traceparent, store)
        fired.set({"loopwright.schedule.status": outcome.status, "loopwright.schedule.session_id": outcome.session_id,
                   "loopwright.cost_usd": outcome.cost_usd})
        if outcome.status == "error":
            fired.failed(outcome.note[:200])
        return outcome


async def _fire(schedule: Any, register: Any, link: str | None, store: Any = None) -> Any:
    from ...core.errors import UsageError
    from ...proactive.scheduler import FireOutcome

    if not os.path.isdir(schedule.cwd):
        return FireOutcome("error", note=f"the schedule's folder {schedule.cwd} is gone")
    try:
        spec = stored_spec(schedule, store)  # one added by an older release meanwhile: read once, here
    except UsageError as exc:
        return FireOutcome("error", note=str(exc))
    if schedule.options.get("queue"):  # a durable loop on a workers' queue, waited for
        from .schedulequeue import run_queued_fire

        return await run_queued_fire(schedule, spec, register, link)
    # the stored run as `-p` runs it; the sandbox is on as for every run, unless the spec turns it off
    argv = [sys.executable, "-m", "loopwright", "--run-spec", "-"]
    code, out, err = await _fire_process(argv, schedule.cwd, register, link, json.dumps(spec.to_json()))
    return _outcome(code, out, err)


async def _fire_process(argv: list[str], cwd: str, register: Any, link: str | None = None,
                        given: str | None = None) -> tuple[int | None, str, str]:
    """One fire's process, to its end: (exit code, stdout, stderr). Its own process group, so a
    Ctrl-C at the scheduler's terminal reaches it once, from us (`register` is how the scheduler
    interrupts it); and it ends with the scheduler, so a killed scheduler leaves no run going on
    behind its back. Cancelled, it is interrupted and waited for: the run aborts cleanly. `given`:
    its stdin (else none)."""
    from ...telemetry import LINKS

    env = {**os.environ, LINKS: link} if link else None  # the run links to its fire's span
    stdin = subprocess.DEVNULL if given is None else subprocess.PIPE
    proc = await asyncio.create_subprocess_exec(*argv, cwd=cwd, stdin=stdin, stdout=subprocess.PIPE,
                                                stderr=subprocess.PIPE, start_new_session=True,
                                                preexec_fn=_end_with_parent, env=env)

    def interrupt() -> None:
        if proc.returncode is None:
            proc.send_signal(signal.SIGINT)

    register(interrupt)
    try:
        out, err = await proc.communicate(None if given is None else given.encode())
    except BaseException:
        if proc.returncode is None:
            proc.send_signal(signal.SIGINT)
            await asyncio.shield(proc.wait())
        raise
    return proc.returncode, out.decode(errors="replace"), err.decode(errors="replace")


def _end_with_parent() -> None:
    """In the child before exec (Linux): SIGTERM when the scheduler dies; the run then aborts
    cleanly, as on Ctrl-C. Elsewhere nothing is done."""
    if sys.platform.startswith("linux"):
        import ctypes

        PR_SET_PDEATHSIG = 1
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM)


def _report_routine(kind: str, entry: Any, text: str) -> None:
    now = time.strftime("%Y-%m-%d %H:%M:%S")
    line = f"▶ routine {entry.name} · {entry.cwd}" if kind == "started" else f"■ {' '.join(text.split())[:160]}"
    print(visible(f"{now} {line}"), flush=True)


async def _run_routine_fire(entry: Any, register: Any) -> str:
    """One fire of a routine: `loopwright routine run NAME --once` in its folder, its own process
    (ended with the scheduler: its items are then resumed by the next fire); its totals line."""
    if not os.path.isdir(entry.cwd):
        return f"routine {entry.name}: error: its folder {entry.cwd} is gone"
    code, out, err = await _fire_process([sys.executable, "-m", "loopwright", "routine", "run", entry.name, "--once"],
                                         entry.cwd, register)
    lines = out.strip().splitlines()
    if code == 0 and lines:
        return lines[-1]
    return f"routine {entry.name}: error: exit {code}: {err.strip()[-400:] or '(no output)'}"


def _outcome(code: int | None, out: str, err: str) -> Any:
    from ...proactive.scheduler import FireOutcome

    lines = [line for line in out.splitlines() if line.startswith("{")]
    try:
        result = json.loads(lines[-1])
    except (IndexError, ValueError):
        return FireOutcome("interrupted" if code == 130 else "error",
                           note=f"exit {code}, no result: {err.strip()[-500:] or '(no output)'}")
    return FireOutcome.of_result(result, interrupted=code == 130)
