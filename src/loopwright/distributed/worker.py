"""`loopwright worker`: one DBOS executor that takes goal loops from a queue. It beats in
`lw_workers` every second; every beat it also looks for workers that left or stopped beating and,
when it wins the claim on one, has DBOS recover that executor's workflows: they go back, ENQUEUED,
on the queue they came from, and the queue hands them out again under its limits (a recovered
loop counts against `--concurrency` and `--queue-concurrency` as any other). SIGINT/SIGTERM
drain: no new work is taken, what runs may finish within the drain time, and what is still
running then is handed back to the others.

A run of attempts (`enqueue --attempts N`) waits on the queue's companion, `runs_queue(queue)`,
which has no limits: the run only prepares, waits and judges, while each of its attempts is a goal
loop enqueued on the queue itself, so each counts as one loop against the limits (the run
holding a slot of its own while it waits would deadlock a queue of concurrency 1)."""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import sys
import threading
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable

from .registry import Registry, dbos_url, open_registry

if TYPE_CHECKING:
    from ..compose.runspec import RunSpec

APP_NAME = "loopwright"
# One version for every worker, so any of them may recover any other's workflows (DBOS's default
# is a hash of the workflow code, which would split workers of different installs).
APP_VERSION = "loopwright-1"
FENCED_EXIT = 75  # EX_TEMPFAIL: judged gone by the others while alive; a supervisor may start it again


@dataclass
class WorkerConfig:
    store: str
    queue: str = "loopwright"
    concurrency: int = 4
    queue_concurrency: int | None = None
    beat_s: float = 1.0
    poll_s: float = 0.2  # how often the queue is asked for work (DBOS's default, 1 s, leaves slots idle)
    dead_after_s: float = 10.0
    drain_s: float = 30.0
    executor_id: str = ""
    # reads the -p flags a job enqueued by an older release stores (jobs.job_spec); given by the CLI
    # that starts the worker, so that this package imports nothing of the CLI
    read_argv: Callable[[list[str]], RunSpec] | None = None


def runs_queue(queue: str) -> str:
    """The queue the runs of attempts of `queue` wait on (their attempts run on `queue`)."""
    return f"{queue}.runs"


def dbos_config(store: str, executor_id: str | None = None) -> dict[str, Any]:
    config: dict[str, Any] = {"name": APP_NAME, "system_database_url": dbos_url(store), "application_version": APP_VERSION,
                              "log_level": "WARNING", "run_admin_server": False}
    if executor_id:
        config["executor_id"] = executor_id
    return config


@dataclass
class Worker:
    config: WorkerConfig
    registry: Registry
    stop: threading.Event = field(default_factory=threading.Event)

    async def started(self, workflow_id: str, label: str, session_id: str) -> float:
        return await asyncio.to_thread(self.registry.started, workflow_id, self.config.executor_id, label, session_id)

    async def ended(self, workflow_id: str, started: float, status: str) -> None:
        await asyncio.to_thread(self.registry.ended, workflow_id, self.config.executor_id, started, status)

    def watch(self) -> None:
        """Heartbeats and the recovery of gone workers, until `stop` is set."""
        from .dbosinternals import recover

        me = self.config.executor_id
        judge_from = 0.0  # (monotonic) no one is judged gone before: this worker's own beats were held up
        while not self.stop.wait(self.config.beat_s):
            try:
                began = time.monotonic()
                try:
                    # (waits, within its bound, while the store is out of reach)
                    if not self.registry.beat_alive(me):
                        self._fenced()
                finally:
                    if time.monotonic() - began > self.config.dead_after_s / 2:
                        # the store was away long enough to hold the others' beats up as well:
                        # each gets as long as a dead one has to beat again before it is judged
                        judge_from = time.monotonic() + self.config.dead_after_s
                if time.monotonic() < judge_from:
                    continue
                for gone in self.registry.gone(self.config.dead_after_s):
                    if gone != me and self.registry.claim_recovery(gone, self.config.dead_after_s):
                        # what its tools left running here ends first: its loops must not go on
                        # while its old commands still write to the same files
                        self._end_left_behind(gone)
                        # its executions closed first: no survivor starts one before it is closed
                        self.registry.taken_over(gone)
                        count = recover(gone)
                        self.registry.recovered(gone)
                        print(f"loopwright worker: {gone} is gone; {count} of its loops taken over",
                              file=sys.stderr, flush=True)
            except Exception as exc:  # a database hiccup: said, and tried again at the next beat
                judge_from = time.monotonic() + self.config.dead_after_s
                print(f"loopwright worker: warning: heartbeat failed: {exc}", file=sys.stderr, flush=True)


    def _fenced(self) -> None:
        """The others judged this worker gone (its heartbeats came too late, e.g. on a starved
        machine) and a survivor took its loops over: going on would run them twice. It leaves at
        once, as a killed worker would; the survivor has ended its tools' processes."""
        print(f"loopwright worker: {self.config.executor_id} was judged gone by the other workers (no heartbeat "
              f"within {self.config.dead_after_s:g}s) and its loops were taken over; leaving now so that nothing "
              "runs twice (raise --dead-after if this machine is often this slow)", file=sys.stderr, flush=True)
        os._exit(FENCED_EXIT)

    def _end_left_behind(self, gone: str) -> None:
        from .leftovers import end_left_behind

        if ended := end_left_behind(self.registry, gone):
            print(f"loopwright worker: {gone} is gone; {ended} of its tool processes (or groups) still running "
                  "here were killed", file=sys.stderr, flush=True)


def default_executor_id() -> str:
    from ..core.ids import uuid4

    return f"{socket.gethostname()}-{os.getpid()}-{uuid4()[:8]}"


def run_worker(config: WorkerConfig) -> int:
    from dbos import DBOS

    from .durable import use_registry
    from . import attempts  # noqa: F401  (the attempts' workflow and steps, registered)
    from .jobs import use_worker  # and with it the workflow and its steps are registered

    signals = threading.Event()  # handled from the start: a Ctrl-C while DBOS starts its threads
    for sig in (signal.SIGINT, signal.SIGTERM):  # would leave them holding the process
        signal.signal(sig, lambda *_: _on_signal(signals))
    registry = open_registry(config.store)
    use_registry(registry)
    from .leftovers import Recorder, mark_children

    mark_children(config.executor_id)  # its tools' processes name it, and their groups are recorded
    recorder = Recorder(registry, config.executor_id)
    worker = Worker(config, registry)
    use_worker(worker)
    DBOS(config=dbos_config(config.store, config.executor_id))  # type: ignore[arg-type]
    DBOS.listen_queues([config.queue, runs_queue(config.queue)])
    DBOS.launch()
    DBOS.register_queue(config.queue, worker_concurrency=config.concurrency, global_concurrency=config.queue_concurrency,
                        polling_interval_sec=config.poll_s, on_conflict="always_update")
    DBOS.register_queue(runs_queue(config.queue), polling_interval_sec=config.poll_s, on_conflict="always_update")
    registry.join(config.executor_id, socket.gethostname(), os.getpid(), config.queue, config.concurrency)
    print(f"loopwright worker: {config.executor_id} takes goal loops from queue {config.queue!r} "
          f"({config.concurrency} at a time)", file=sys.stderr, flush=True)
    watcher = threading.Thread(target=worker.watch, name="loopwright-heartbeat", daemon=True)
    watcher.start()
    while not signals.wait(0.5):  # a signal may land on one of DBOS's threads: the main thread must
        pass                      # wake now and then for Python to run its handler
    _drain(worker, registry, recorder)
    return 0


def _on_signal(signals: threading.Event) -> None:
    if signals.is_set():
        os._exit(130)  # a second signal: leave now (what runs is recovered as a dead worker's)
    signals.set()


def _drain(worker: Worker, registry: Registry, recorder: Any) -> None:
    """Take no more work; let what runs finish within the drain time; hand back the rest, and
    end whatever its tools still run (a job a command left behind, a child that left its group)."""
    from dbos import DBOS

    from .dbosinternals import stop_taking_work
    from .leftovers import end_left_behind

    me = worker.config.executor_id
    registry.beat(me, "draining")
    print(f"loopwright worker: draining (up to {worker.config.drain_s:g}s; again to leave now)",
          file=sys.stderr, flush=True)
    deadline = time.monotonic() + worker.config.drain_s
    stop_taking_work()
    while time.monotonic() < deadline and registry.executions_of(me):
        registry.beat(me)
        time.sleep(0.2)
    left = registry.executions_of(me)
    worker.stop.set()
    DBOS.destroy()  # what still runs stops here, before anyone else may take it
    recorder.close()
    end_left_behind(registry, me)
    for workflow_id, started in left:
        registry.ended(workflow_id, me, started, "handed back")
    registry.beat(me, "left")  # the others recover at once what was still running here
    if left:
        print(f"loopwright worker: handed back {len(left)} running loop(s)", file=sys.stderr, flush=True)

