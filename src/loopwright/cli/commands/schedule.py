"""`loopwright schedule add|list|pause|resume|rm|runs` and `loopwright scheduler`: schedules
kept in `<LOOPWRIGHT_HOME>/schedules.db` that survive restarts. Each fire runs
`loopwright -p PROMPT --output-format json [flags]` in the schedule's folder, as its own process
(its own settings, environment and session), and its outcome is recorded."""

from __future__ import annotations

import asyncio
import json
import os
import re
import signal
import subprocess
import sys
import time
from typing import Any, NoReturn

from ...core.errors import UsageError
from ..parsing import Parser, refuse_subcommand_slip
from ..render import visible

_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")


DASH_HINT = "a prompt that starts with '-' goes as --prompt=TEXT"


class _Parser(Parser):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, hint=DASH_HINT, **kwargs)

    def error(self, message: str) -> NoReturn:
        if "--prompt" in message and "unrecognized arguments" not in message:
            message += f" ({DASH_HINT})"
        super().error(message)


def _stores(flag: str | None) -> Any:
    """The stores of `--store` (else LOOPWRIGHT_STORE), passed on to every fire."""
    from ..core import cli_stores

    return cli_stores(flag, os.getcwd(), pass_on=True)


STORE_HELP = "Where schedules and sessions live (default: $LOOPWRIGHT_STORE, else the home's SQLite file)."


def run_schedule(args: list[str]) -> int:
    extra: list[str] = []
    if "--" in args:  # flags for every fire's `loopwright -p`
        args, extra = args[: args.index("--")], args[args.index("--") + 1:]
    p = _Parser(prog="loopwright schedule", description="Schedules that survive restarts (served by "
                "`loopwright scheduler`).")
    sub = p.add_subparsers(dest="action", required=True, parser_class=_Parser)
    add = sub.add_parser("add", help="Add a schedule: PROMPT every INTERVAL in this folder; flags for each "
                         "run go after `--` (runs get --sandbox where bubblewrap works; --no-sandbox opts out).")
    add.add_argument("prompt", nargs="?", help="What each run is asked (or a /goal).")
    add.add_argument("--prompt", dest="prompt_flag", metavar="TEXT", help="The prompt, when it starts with '-' "
                     "(--prompt=-TEXT).")
    when = add.add_mutually_exclusive_group(required=True)
    when.add_argument("--every", help="Such as 5m, 2h or 1d (kept as a clean cron step).")
    when.add_argument("--cron", help='Five cron fields in local time, such as "0 9 * * 1-5" (weekdays at 9).')
    add.add_argument("--id", help="A name for it (default: 8 random hex digits).")
    add.add_argument("--now", action="store_true", help="Also fire at once, not only at the next step.")
    add.add_argument("--max-runs", type=int, help="Finish after this many runs.")
    add.add_argument("--queue", metavar="NAME", help="Each fire goes to this workers' queue as a durable loop "
                     "(needs --store postgresql://… or sqlite:///PATH; see `loopwright worker`).")
    add.add_argument("--grace", default="5m", help="How late a fire may still run (default 5m); later "
                     "ones (the scheduler was down) are skipped.")
    listing = sub.add_parser("list", help="The schedules.")
    listing.add_argument("--json", action="store_true")
    for name, what in (("pause", "Stop firing it (kept)."), ("resume", "Fire it again."), ("rm", "Delete it "
                       "(its run record stays).")):
        sub.add_parser(name, help=what).add_argument("id")
    runs = sub.add_parser("runs", help="The record of fires, newest last.")
    runs.add_argument("id", nargs="?")
    runs.add_argument("--limit", type=int, default=50)
    runs.add_argument("--json", action="store_true")
    for each in sub.choices.values():
        each.add_argument("--store", metavar="URL", help=STORE_HELP)
    opts = p.parse_args(args)
    if extra and opts.action != "add":
        raise UsageError("flags after `--` go with `schedule add` only")
    store = _stores(opts.store).schedules()
    try:
        if opts.action == "add":
            print(_add(store, opts, extra))
        elif opts.action == "list":
            _print_schedules(store.schedules(), opts.json)
        elif opts.action in ("pause", "resume", "rm"):
            done = store.remove(opts.id) if opts.action == "rm" else store.set_paused(opts.id, opts.action == "pause")
            if not done:
                raise UsageError(f"no schedule with id {opts.id!r} (see `loopwright schedule list`)")
        else:
            _print_runs(store.runs(opts.id, opts.limit), opts.json)
    finally:
        store.close()
    return 0


def _add(store: Any, opts: Any, extra: list[str]) -> str:
    from ...config import parse_duration, positive
    from ...core.ids import uuid4
    from ...core.ports import Schedule
    from ...policy.cadence import cron_error, cron_next, next_fire
    from ..core import is_loop
    from ..modelcheck import check_flag_models
    from ..options import parse_options

    prompt = _prompt_of(opts)
    if is_loop(prompt):
        raise UsageError("a schedule runs a prompt or a /goal, not a /loop: the schedule is the loop")
    positive(opts.max_runs, "--max-runs")
    grace = parse_duration(opts.grace, "--grace")
    refuse_subcommand_slip(prompt)  # every fire's prompt and flags, checked now, not at 3 a.m.
    check_flag_models(parse_options(fire_args(prompt, extra)))
    if opts.id is not None and not _ID.fullmatch(opts.id):
        raise UsageError(f"--id: expected letters, digits, '.', '_' or '-' (at most 64), got {opts.id!r}")
    now, every_s, cron = time.time(), 0, ""
    if opts.cron is not None:
        if (problem := cron_error(opts.cron)) is not None:
            raise UsageError(f"--cron: {problem}")
        cron, first = opts.cron, cron_next(opts.cron, now)
    else:
        every_s = _every(opts.every)
        first = next_fire(every_s, now)
    options: dict[str, Any] = {"args": extra}
    if opts.queue is not None:
        from .schedulequeue import check_queued

        check_queued(opts.queue, fire_args(prompt, extra)[1:])
        options["queue"] = opts.queue
    schedule = Schedule(opts.id or uuid4()[:8], os.getcwd(), prompt, every_s, now, now if opts.now else first,
                        max_runs=opts.max_runs, grace_s=int(grace), options=options, cron=cron)
    try:
        store.add(schedule)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    print(visible(f"loopwright: schedule {schedule.id} ({_cron_of(schedule)}) runs next at {_when(schedule.next_at)}; "
                  "schedules fire only while `loopwright scheduler` runs"), file=sys.stderr, flush=True)
    return schedule.id  # alone on stdout, for scripts


def _prompt_of(opts: Any) -> str:
    if opts.prompt is not None and opts.prompt_flag is not None:
        raise UsageError("schedule add: give the prompt once (as the argument or as --prompt)")
    prompt = opts.prompt if opts.prompt is not None else opts.prompt_flag
    if prompt is None:
        raise UsageError(f"schedule add: give the prompt ({DASH_HINT})")
    if not prompt.strip():
        raise UsageError("schedule add: the prompt is empty")
    return prompt


def fire_args(prompt: str, extra: list[str]) -> list[str]:
    """The arguments of one fire's `loopwright`: the prompt last, after `--`, so no text of it is
    ever read as a flag (`--goal-file=…`, `-c`, `--settings=…` stay the prompt)."""
    return ["-p", "--output-format", "json", *extra, "--", prompt]


def _every(value: str) -> int:
    from ...policy.cadence import cadence, parse_interval

    try:
        every = parse_interval(value)
    except ValueError as exc:
        raise UsageError(f"--every: {exc}") from None
    if every is None:
        raise UsageError(f"--every: expected an interval such as 5m, 2h or 1d, got {value!r}")
    steps = cadence(every)
    if steps.note:
        print(f"loopwright: note: {steps.note}", file=sys.stderr)
    return steps.every_s


def _cron_of(schedule: Any) -> str:
    from ...policy.cadence import cadence

    return schedule.cron or cadence(schedule.every_s).cron


def _when(at: float | None) -> str:
    return "-" if at is None else time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(at))


def _print_schedules(schedules: list[Any], as_json: bool) -> None:
    if as_json:
        print(json.dumps([{"id": s.id, "cwd": s.cwd, "prompt": s.prompt, "every_seconds": s.every_s or None,
                           "cron": _cron_of(s), "next_at": s.next_at, "paused": s.paused,
                           "runs": s.runs, "max_runs": s.max_runs, "grace_seconds": s.grace_s,
                           "args": list(s.options.get("args", [])), "queue": s.options.get("queue")}
                          for s in schedules]))
        return
    for s in schedules:
        state = "paused" if s.paused else "finished" if s.next_at is None else f"next {_when(s.next_at)}"
        queue = f"queue {s.options['queue']}  " if s.options.get("queue") else ""
        print(visible(f"{s.id}  {_cron_of(s):<14} {state:<26} runs {s.runs}  {queue}{s.cwd}  {s.prompt[:60]}"))


def _print_runs(runs: list[Any], as_json: bool) -> None:
    if as_json:
        print(json.dumps([{"id": r.id, "schedule_id": r.schedule_id, "fire_at": r.fire_at, "status": r.status,
                           "started": r.started, "ended": r.ended, "session_id": r.session_id,
                           "cost_usd": r.cost_usd, "note": r.note} for r in runs]))
        return
    for r in runs:
        print(visible(f"{r.id:>5}  {r.schedule_id}  {_when(r.fire_at)}  {r.status:<11} ${r.cost_usd:.4f}  "
                      f"{' '.join(r.note.split())[:70]}"))


# ---------------------------------------------------------------- serving


def run_scheduler(args: list[str]) -> int:
    p = _Parser(prog="loopwright scheduler", description="Serve the schedules: fire each when due, until "
                "Ctrl-C. Several schedulers may share the store; each fire runs once.")
    p.add_argument("--once", action="store_true", help="Run what is due now, wait for it, and exit.")
    p.add_argument("--max-concurrent", type=int, default=4, help="Fires running at once (default 4).")
    p.add_argument("--store", metavar="URL", help=STORE_HELP)
    opts = p.parse_args(args)
    from ...config import positive

    positive(opts.max_concurrent, "--max-concurrent")
    stores = _stores(opts.store)
    store = stores.schedules()
    try:
        return asyncio.run(_serve(store, stores.ledger(), opts.once, opts.max_concurrent))
    finally:
        store.close()


async def _serve(store: Any, ledger: Any, once: bool, max_concurrent: int) -> int:
    from ...core.clock import SystemClock
    from ...core.owners import owner_alive, this_owner
    from ...proactive.scheduler import Scheduler
    from ...sandbox.unattended import unattended_note

    if (note := unattended_note()) is not None:
        print(f"loopwright: warning: {note}", file=sys.stderr, flush=True)
    import anyio

    from ...proactive.routinetimer import RoutineTimer

    scheduler = Scheduler(store, _run_fire, SystemClock(), owner=this_owner(),
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
    return (f"{len(active)} active schedule(s) in {store.path}; next: {first.id} at {_when(first.next_at)}")


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


async def _run_fire(schedule: Any, register: Any) -> Any:
    from ...proactive.scheduler import FireOutcome

    if not os.path.isdir(schedule.cwd):
        return FireOutcome("error", note=f"the schedule's folder {schedule.cwd} is gone")
    if schedule.options.get("queue"):  # a durable loop on a workers' queue, waited for
        from .schedulequeue import run_queued_fire

        return await run_queued_fire(schedule, register)
    from ...sandbox.unattended import unattended_args

    # the sandbox unless the schedule's flags say --no-sandbox (or --sandbox)
    argv = [sys.executable, "-m", "loopwright",
            *fire_args(schedule.prompt, unattended_args(schedule.options.get("args", [])))]
    code, out, err = await _fire_process(argv, schedule.cwd, register)
    return _outcome(code, out, err)


async def _fire_process(argv: list[str], cwd: str, register: Any) -> tuple[int | None, str, str]:
    """One fire's process, to its end: (exit code, stdout, stderr). Its own process group, so a
    Ctrl-C at the scheduler's terminal reaches it once, from us (`register` is how the scheduler
    interrupts it); and it ends with the scheduler, so a killed scheduler leaves no run going on
    behind its back. Cancelled, it is interrupted and waited for: the run aborts cleanly."""
    proc = await asyncio.create_subprocess_exec(*argv, cwd=cwd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                                stderr=subprocess.PIPE, start_new_session=True,
                                                preexec_fn=_end_with_parent)
    register(lambda: proc.returncode is None and proc.send_signal(signal.SIGINT))
    try:
        out, err = await proc.communicate()
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
    status = ("interrupted" if result.get("terminal_reason") == "aborted" or code == 130 else
              "error" if result.get("is_error") else "success")
    note = "; ".join(result.get("errors") or []) if result.get("is_error") else str(result.get("result", ""))
    return FireOutcome(status, str(result.get("session_id", "")), float(result.get("total_cost_usd") or 0.0), note)
