"""`loopwright schedule add|list|pause|resume|rm|runs`: schedules kept in
`<LOOPWRIGHT_HOME>/schedules.db` that survive restarts, served by `loopwright scheduler`
(`scheduler.py`). A schedule keeps the run its flags describe (`-p PROMPT --output-format json
[flags]`) as a `RunSpec`, read once when it is added; each fire runs that spec in the schedule's
folder, as its own process (its own settings, environment and session), and its outcome is recorded."""

from __future__ import annotations

import json
import os
import re
import sys
import time
from typing import TYPE_CHECKING, Any, NoReturn

from ...core.errors import UsageError
from ..parsing import Parser, refuse_subcommand_slip
from ...compose.render import visible

if TYPE_CHECKING:
    from ...compose.runspec import RunSpec

_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")


DASH_HINT = "a prompt that starts with '-' goes as --prompt=TEXT"

# What a release from before schedules kept a spec reads as a schedule's `-p` flags: a flag no
# release knows, so an older scheduler sharing the store fails the fire, naming it, instead of
# running the prompt without the schedule's limits and rules. This release reads the spec only.
FOR_OLDER_RELEASES = ["--stored-by-a-newer-loopwright"]


class ScheduleParser(Parser):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, hint=DASH_HINT, **kwargs)

    def error(self, message: str) -> NoReturn:
        if "--prompt" in message and "unrecognized arguments" not in message:
            message += f" ({DASH_HINT})"
        super().error(message)


def schedule_stores(flag: str | None) -> Any:
    """The stores of `--store` (else LOOPWRIGHT_STORE), passed on to every fire."""
    from ..core import run_stores

    return run_stores(flag, os.getcwd(), pass_on=True)


STORE_HELP = "Where schedules and sessions live (default: $LOOPWRIGHT_STORE, else the home's SQLite file)."


def parser() -> ScheduleParser:
    p = ScheduleParser(prog="loopwright schedule", description="Schedules that survive restarts (served by "
                       "`loopwright scheduler`).")
    sub = p.add_subparsers(dest="action", required=True, parser_class=ScheduleParser)
    add = sub.add_parser("add", help="Add a schedule: PROMPT every INTERVAL in this folder; flags for each "
                         "run go after `--` (runs are sandboxed as every run is; --no-sandbox opts out).")
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
    listing.add_argument("--json", action="store_true", help="A JSON array instead of a table.")
    for name, what in (("pause", "Stop firing it (kept)."), ("resume", "Fire it again."), ("rm", "Delete it "
                       "(its run record stays).")):
        sub.add_parser(name, help=what).add_argument("id", help="The schedule (see `loopwright schedule list`).")
    runs = sub.add_parser("runs", help="The record of fires, newest last.")
    runs.add_argument("id", nargs="?", help="Only this schedule's fires (default: every schedule's).")
    runs.add_argument("--limit", type=int, default=50, help="At most this many, the newest (default 50).")
    runs.add_argument("--json", action="store_true", help="A JSON array instead of a table.")
    for each in sub.choices.values():
        each.add_argument("--store", metavar="URL", help=STORE_HELP)
    return p


def run_schedule(args: list[str]) -> int:
    extra: list[str] = []
    if "--" in args:  # flags for every fire's `loopwright -p`
        args, extra = args[: args.index("--")], args[args.index("--") + 1:]
    opts = parser().parse_args(args)
    if extra and opts.action != "add":
        raise UsageError("flags after `--` go with `schedule add` only")
    store = schedule_stores(opts.store).schedules()
    try:
        if opts.action == "add":
            print(_add(store, opts, extra))
        elif opts.action == "list":
            _print_schedules(migrate(store), opts.json)
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
    from ...core.storeports import Schedule
    from ...policy.cadence import cron_error, cron_next, next_fire
    from ..core import is_loop
    from ...compose.modelcheck import check_flag_models
    from ..options import parse_options

    prompt = _prompt_of(opts)
    if is_loop(prompt):
        raise UsageError("a schedule runs a prompt or a /goal, not a /loop: the schedule is the loop")
    positive(opts.max_runs, "--max-runs")
    grace = parse_duration(opts.grace, "--grace")
    refuse_subcommand_slip(prompt)  # every fire's prompt and flags, checked now, not at 3 a.m.
    flags = parse_options(fire_args(prompt, extra))
    check_flag_models(flags)
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
    options: dict[str, Any] = {"spec": flags.run_spec().to_json(), "args": FOR_OLDER_RELEASES}  # read once
    if opts.queue is not None:
        from .schedulequeue import check_queued

        check_queued(opts.queue, flags)
        options["queue"] = opts.queue
    schedule = Schedule(opts.id or uuid4()[:8], os.getcwd(), prompt, every_s, now, now if opts.now else first,
                        max_runs=opts.max_runs, grace_s=int(grace), options=options, cron=cron)
    try:
        store.add(schedule)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    print(visible(f"loopwright: schedule {schedule.id} ({_cron_of(schedule)}) runs next at "
                  f"{local_time(schedule.next_at)}; schedules fire only while `loopwright scheduler` runs"),
          file=sys.stderr, flush=True)
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


def stored_spec(schedule: Any, store: Any = None) -> RunSpec:
    """The run a schedule fires. One added before schedules kept a `RunSpec` (its `-p` flags as
    `options["args"]`) is read from its flags once, and with `store` written back as a spec.
    `UsageError` naming the schedule when what is stored cannot be run."""
    from ...compose.runspec import RunSpec

    options = dict(schedule.options)
    if "spec" in options:  # its "args", if any, are for older releases
        try:
            return RunSpec.from_json(options["spec"])
        except UsageError as exc:
            raise UsageError(f"schedule {schedule.id!r}: {exc}") from None
    args = options.get("args", [])
    if not isinstance(args, list) or not all(isinstance(a, str) for a in args):
        raise UsageError(f"schedule {schedule.id!r}: field 'args': expected the -p flags of an older release "
                         f"(a list of strings), got {args!r}")
    from ..options import parse_options

    try:
        spec = parse_options(fire_args(schedule.prompt, args)).run_spec()
    except UsageError as exc:
        raise UsageError(f"schedule {schedule.id!r}: its flags {args!r} (stored by an older release): {exc}") from None
    if store is not None:
        store.set_options(schedule.id, {**options, "spec": spec.to_json(), "args": FOR_OLDER_RELEASES})
    return spec


def migrate(store: Any) -> list[Any]:
    """The store's schedules, those stored by an older release (their flags) brought to a spec and
    written back; one that cannot be read is said on stderr and left as it is (its fires fail,
    naming why)."""
    out = []
    for schedule in store.schedules():
        if "spec" not in schedule.options:
            try:
                stored_spec(schedule, store)
                schedule = store.get(schedule.id) or schedule
            except UsageError as exc:
                print(visible(f"loopwright: warning: {exc}"), file=sys.stderr, flush=True)
        out.append(schedule)
    return out


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


def local_time(at: float | None) -> str:
    return "-" if at is None else time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(at))


def _print_schedules(schedules: list[Any], as_json: bool) -> None:
    if as_json:
        print(json.dumps([{"id": s.id, "cwd": s.cwd, "prompt": s.prompt, "every_seconds": s.every_s or None,
                           "cron": _cron_of(s), "next_at": s.next_at, "paused": s.paused,
                           "runs": s.runs, "max_runs": s.max_runs, "grace_seconds": s.grace_s,
                           "spec": s.options.get("spec"), "queue": s.options.get("queue")}
                          for s in schedules]))
        return
    for s in schedules:
        state = "paused" if s.paused else "finished" if s.next_at is None else f"next {local_time(s.next_at)}"
        queue = f"queue {s.options['queue']}  " if s.options.get("queue") else ""
        print(visible(f"{s.id}  {_cron_of(s):<14} {state:<26} runs {s.runs}  {queue}{s.cwd}  {s.prompt[:60]}"))


def _print_runs(runs: list[Any], as_json: bool) -> None:
    if as_json:
        print(json.dumps([{"id": r.id, "schedule_id": r.schedule_id, "fire_at": r.fire_at, "status": r.status,
                           "started": r.started, "ended": r.ended, "session_id": r.session_id,
                           "cost_usd": r.cost_usd, "note": r.note} for r in runs]))
        return
    for r in runs:
        print(visible(f"{r.id:>5}  {r.schedule_id}  {local_time(r.fire_at)}  {r.status:<11} ${r.cost_usd:.4f}  "
                      f"{' '.join(r.note.split())[:70]}"))
