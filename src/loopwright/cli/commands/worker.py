"""`loopwright worker` (take goal loops from a queue), `loopwright enqueue` (put one there) and
`loopwright workers` (who runs what), on a durable store named by `--store` or LOOPWRIGHT_STORE:
PostgreSQL for many workers on many machines, SQLite for one machine."""

from __future__ import annotations

import math
import os
from typing import TYPE_CHECKING

from ...core.errors import UsageError
from ..parsing import Parser
from ...compose.render import visible

if TYPE_CHECKING:
    from ...compose.runspec import RunSpec

STORE_HELP = "The durable store: postgresql://… (many workers) or sqlite:///path (one machine); " \
             "default $LOOPWRIGHT_STORE."


def _store(given: str | None) -> str:
    store = given or os.environ.get("LOOPWRIGHT_STORE", "")
    if not store:
        raise UsageError("--store: a durable store is needed (postgresql://… or sqlite:///path), "
                         "or set LOOPWRIGHT_STORE")
    return durable_libs(store)


def durable_libs(store: str) -> str:
    """`store` once its URL is one workers take and the libraries they need are installed (else a
    UsageError naming what to install)."""
    from ...distributed.registry import engine_url

    engine_url(store)
    import importlib.util

    wanted = ["dbos", "sqlalchemy"] + (["psycopg"] if not store.startswith("sqlite") else [])
    if missing := [m for m in wanted if importlib.util.find_spec(m) is None]:
        raise UsageError(f"workers need {', '.join(missing)}: pip install 'loopwright[durable]'")
    return store


def queue_name(value: str, flag: str = "--queue") -> str:
    """A queue's name: not blank (a queue of no name is one no worker is told to take from), and
    not ending in `.runs`, the suffix of each queue's companion (where runs of attempts wait)."""
    if not value.strip() or value != value.strip():
        raise UsageError(f"{flag}: expected a queue name (not blank, no spaces around it), got {value!r}")
    if value.endswith(".runs"):
        raise UsageError(f"{flag}: a queue name may not end in '.runs' (each queue's companion for runs of "
                         f"attempts is named QUEUE.runs), got {value!r}")
    return value


MOST_AT_ONCE = 10_000  # loops a worker or a queue runs at once: more is a typo (and no INTEGER column holds any)


def _positive(value: str, flag: str, whole: bool = True) -> float:
    """A count (`whole`: 1 to MOST_AT_ONCE) or a number of seconds (finite, above 0)."""
    try:
        number = int(value) if whole else float(value)
    except ValueError:
        number = 0
    if not 0 < number < math.inf or (whole and number > MOST_AT_ONCE):
        expected = f"a whole number from 1 to {MOST_AT_ONCE}" if whole else "a number of seconds above 0"
        raise UsageError(f"{flag}: expected {expected}, got {value!r}")
    return number


def worker_parser() -> Parser:
    p = Parser(prog="loopwright worker", description="Take goal loops from a queue and run them durably.")
    p.add_argument("--store", metavar="URL", help=STORE_HELP)
    p.add_argument("--queue", metavar="NAME", default="loopwright",
                        help="The queue to take work from (default loopwright).")
    p.add_argument("--concurrency", metavar="N", default="4",
                        help=f"Loops this worker runs at once, 1 to {MOST_AT_ONCE} (default 4).")
    p.add_argument("--queue-concurrency", metavar="N", help="Loops of the queue running at once across all "
                        "workers (default: no limit beyond each worker's).")
    p.add_argument("--id", help="This worker's executor id (default: host-pid-random).")
    p.add_argument("--dead-after", metavar="SECONDS", default="10", help="Seconds without a heartbeat before "
                        "a worker counts as dead and its loops are taken over (default 10).")
    p.add_argument("--drain", metavar="SECONDS", default="30", help="Seconds Ctrl-C waits for running loops "
                        "before handing them back; a second Ctrl-C leaves at once (default 30).")
    return p


def run_worker_command(args: list[str]) -> int:
    opts = worker_parser().parse_args(args)
    if opts.id is not None and (not opts.id.strip() or opts.id != opts.id.strip()):
        raise UsageError(f"--id: expected a name for this worker (not blank, no spaces around it), got {opts.id!r}")
    from ...distributed.worker import WorkerConfig, default_executor_id, run_worker

    config = WorkerConfig(
        store=_store(opts.store), queue=queue_name(opts.queue), concurrency=int(_positive(opts.concurrency, "--concurrency")),
        queue_concurrency=int(_positive(opts.queue_concurrency, "--queue-concurrency"))
        if opts.queue_concurrency else None,
        dead_after_s=_positive(opts.dead_after, "--dead-after", whole=False),
        drain_s=_positive(opts.drain, "--drain", whole=False), executor_id=opts.id or default_executor_id(),
        read_argv=read_job_flags)
    return run_worker(config)


def read_job_flags(argv: list[str]) -> RunSpec:
    """The -p flags a job enqueued by an older release stores, read as this release's RunSpec."""
    from ..options import parse_options

    return parse_options(argv).run_spec()


def enqueue_parser() -> Parser:
    p = Parser(prog="loopwright enqueue", usage="loopwright enqueue [--store URL] [--queue NAME] "
                    "[--label TEXT] PROMPT [FLAGS]",
                    description="Put a goal loop on a queue and print its workflow id. FLAGS "
                    "are those of `loopwright -p` (--goal, --check, --protect, --max-turns, --resume ID, "
                    "--attempts N, …).")
    p.add_argument("--store", metavar="URL", help=STORE_HELP)
    p.add_argument("--queue", metavar="NAME", default="loopwright", help="The queue (default loopwright).")
    p.add_argument("--label", metavar="TEXT", help="A name for the loop in `loopwright workers` "
                        "(default: the prompt).")
    return p


def run_enqueue(args: list[str]) -> int:
    opts, rest = enqueue_parser().parse_known_args(args)
    from ...core.ids import uuid4
    from ...compose.goals import goal_from_options
    from ..options import parse_options

    run = parse_options(["-p", *rest])  # the run's flags, checked now rather than on a worker (a typo first)
    queue_name(opts.queue)
    store = _store(opts.store)
    if run.session_id or run.continue_session or run.fork_session:
        raise UsageError("enqueue: --session-id, --continue and --fork-session are not for queued loops; "
                         "a new loop gets its own session id, --resume ID continues one")
    if run.input_format == "stream-json" or (run.prompt or "").lstrip().startswith("/loop"):
        raise UsageError("enqueue: /loop and --input-format stream-json do not run on workers yet; "
                         "expected a prompt or a goal loop (--goal, --check, limits, --resume, --attempts N)")
    if not (run.prompt or run.goal or run.goal_file):
        raise UsageError("enqueue: no prompt: give one (loopwright enqueue \"…\") or a --goal")
    if run.attempts is not None:  # without a goal, --check and --protect are for the judge
        _check_attempts(run)
    if run.attempts is None or run.goal or run.goal_file or (run.prompt or "").lstrip().startswith("/goal"):
        goal_from_options(run, run.prompt, resuming=run.resuming)
    if run.resume:
        _check_resumable(store, run.resume)
    from ...distributed.client import enqueue
    from ...distributed.jobs import new_job

    session_id = uuid4()
    label = opts.label or (run.prompt or run.goal or run.goal_file or "")[:60]
    job = new_job(run.run_spec(), os.getcwd(), session_id, run.resume, label)
    if run.attempts is not None:  # one parent workflow; each attempt gets a session of its own
        job["attempts"] = run.attempts
        workflow_id = enqueue(store, opts.queue, job, f"attempts-{session_id}")
        print(f"{workflow_id} attempts {run.attempts}")
        return 0
    workflow_id = enqueue(store, opts.queue, job, f"loop-{session_id}")
    print(f"{workflow_id} session {run.resume or session_id}")
    return 0


def _check_resumable(store: str, session_id: str) -> None:
    """--resume names a session the store holds (PostgreSQL: the one every worker reads; SQLite: the
    transcripts under this home, which the workers of this machine share)."""
    from ...stores import open_store

    stores = open_store(store, os.getcwd())
    if not stores.sessions.exists(session_id):
        raise UsageError(f"--resume {session_id}: no such session in the store {stores.url} "
                         "(see `loopwright sessions --all`); a new loop needs no --resume")


def _check_attempts(run: object) -> None:
    """--attempts on a queue: the same limits as `loopwright -p --attempts`, from a git repository."""
    from pathlib import Path

    from ...workflows import worktrees
    from ..attempts import check_attempts

    check_attempts(run)  # type: ignore[arg-type]
    worktrees.repo_root(Path.cwd())


def workers_parser() -> Parser:
    p = Parser(prog="loopwright workers", description="The workers of a store and what each runs.")
    p.add_argument("--store", metavar="URL", help=STORE_HELP)
    p.add_argument("--all", action="store_true", help="Also workers that left or died.")
    return p


def run_workers(args: list[str]) -> int:
    opts = workers_parser().parse_args(args)
    from ...distributed.registry import open_registry

    registry = open_registry(_store(opts.store))
    try:
        workers, running, now = registry.workers(), registry.executions(running_only=True), registry.now()
    finally:
        registry.close()
    shown = [w for w in workers if opts.all or w.state in ("alive", "draining")]
    if not shown:
        print("No workers")
        return 0
    for w in shown:
        mine = [e for e in running if e.executor_id == w.executor_id]
        loops = [e for e in mine if e.session_id]  # a run of attempts waits; its attempts are the loops
        print(f"{w.executor_id}  {w.state}  queue {w.queue}  pid {w.pid} on {w.host}  "
              f"beat {max(0.0, now - w.beat):.0f}s ago  running {len(loops)}/{w.concurrency}")
        if w.state in ("alive", "draining"):
            for e in mine:
                session = f"session {e.session_id}  " if e.session_id else ""  # a run of attempts: none
                print(f"  {e.workflow_id}  {session}{visible(e.label)}  "
                      f"for {max(0.0, now - e.started):.0f}s")
    return 0

