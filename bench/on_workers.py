"""The worker side of bench/many_loops.py (issue 14 part 5): N goal loops put on a DBOS queue in a
fresh PostgreSQL database and drained by W `loopwright worker` processes, each taking up to C
loops at a time. Each loop is what the in-process side runs, as `loopwright -p` runs it: five
tool turns and an answer (six model calls). The tool is Bash (a worker runs the built-in tools
only), counting its own turns in the loop's own folder.

The PostgreSQL cluster is tests/pgcluster.py's private one on 127.0.0.1 (Debian's `postgresql`
package); every worker and the cluster are stopped by their process ids, also on Ctrl-C or an
error."""

from __future__ import annotations

import math
import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path
from urllib.parse import urlsplit

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

PROMPT = "tick until it says done"
# One tick: a line more in the loop's own file, then "tick K of T" (what the script waits for).
TICK = 'echo x >> ticks; echo "tick $(wc -l < ticks) of {turns}"'


def bash_rule(turns: int) -> dict:
    """The simulator's rule for worker loops (their requests offer Bash): a Bash tick each turn;
    the script's rule for "tick T of T" ends them as it ends the in-process ones."""
    return {"match": {"tools_present": "Bash"},
            "responses": [{"tool_use": {"name": "Bash", "input": {"command": TICK.format(turns=turns)}},
                           "repeat": -1}]}


def loop_args(calls: int) -> list[str]:
    return [PROMPT, "--allowedTools", "Bash", "--max-turns", str(calls + 1)]


POLL_S = 1.0  # DBOS's default queue polling interval: a worker with a free slot looks this often


def waves(n: int, workers: int, concurrency: int) -> int:
    return math.ceil(n / (workers * concurrency))


def ideal_wall(n: int, workers: int, concurrency: int, calls: int, delay: float) -> float:
    """W workers of C slots each run the N loops in ceil(N / (W x C)) waves of `calls` model calls
    (no allowance for the queue's polling, the workers' CPU or anything else)."""
    return waves(n, workers, concurrency) * calls * delay


class Cluster:
    """A private PostgreSQL cluster (tests/pgcluster.py) for one bench run; a fresh database each."""

    def __init__(self) -> None:
        from pgcluster import start_cluster

        self.cluster, reason = start_cluster()
        if self.cluster is None:
            raise SystemExit(f"--workers needs PostgreSQL: {reason}")

    def fresh(self) -> str:
        return self.cluster.create_database("bench_" + uuid.uuid4().hex[:12])

    def stop(self) -> None:
        import shutil

        self.cluster.stop()
        shutil.rmtree(self.cluster.root, ignore_errors=True)


def worker_env(base_url: str, home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "LOOPWRIGHT_"))}
    env.update(ANTHROPIC_BASE_URL=base_url, ANTHROPIC_API_KEY="sk-bench", HOME=str(home),
               LOOPWRIGHT_HOME=str(home / ".loopwright"))
    src = Path(__file__).resolve().parent.parent / "src"
    env["PYTHONPATH"] = os.pathsep.join([str(src), *filter(None, [os.environ.get("PYTHONPATH")])])
    return env


def start_workers(store: str, count: int, concurrency: int, env: dict, folder: Path) -> list[subprocess.Popen]:
    procs = []
    for k in range(count):
        log = open(folder / f"worker{k}.log", "w")
        procs.append(subprocess.Popen(
            [sys.executable, "-m", "loopwright", "worker", "--store", store, "--concurrency", str(concurrency),
             "--id", f"w{k}", "--drain", "5"], env=env, cwd=folder, stdout=log, stderr=subprocess.STDOUT))
        log.close()
    return procs


def stop_workers(procs: list[subprocess.Popen]) -> None:
    """SIGINT each (a drain), then SIGKILL whichever is still there; by pid, never by name."""
    for proc in procs:
        if proc.poll() is None:
            proc.send_signal(signal.SIGINT)
    for proc in procs:
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)


def wait_ready(store: str, procs: list[subprocess.Popen], folder: Path, timeout: float = 120) -> None:
    from loopwright.distributed.registry import Registry

    registry = Registry(store)
    try:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for k, proc in enumerate(procs):
                if proc.poll() is not None:
                    raise SystemExit(f"worker w{k} exited ({proc.returncode}):\n"
                                     f"{(folder / f'worker{k}.log').read_text()[-3000:]}")
            if sum(w.state == "alive" for w in registry.workers()) == len(procs):
                return
            time.sleep(0.1)
        raise SystemExit(f"the {len(procs)} workers did not start within {timeout:g} s")
    finally:
        registry.close()


def enqueue_all(store: str, n: int, folder: Path, calls: int) -> tuple[float, list[str]]:
    """N goal loops on the queue, as `loopwright enqueue` puts them there, through one client (a
    folder each, under `folder`); the wall-clock time of the first enqueue, and their workflow ids."""
    from dbos import DBOSClient

    from loopwright.cli.options import parse_options
    from loopwright.distributed.client import WORKFLOW_NAME
    from loopwright.distributed.jobs import new_job
    from loopwright.distributed.worker import APP_NAME, APP_VERSION

    client = DBOSClient(system_database_url=store, application_name=APP_NAME)
    try:
        jobs = []
        for i in range(n):
            cwd = folder / f"L{i}"
            cwd.mkdir(parents=True)
            session_id = str(uuid.uuid4())
            spec = parse_options(["-p", *loop_args(calls)]).run_spec()  # as `loopwright enqueue` stores it
            jobs.append((new_job(spec, str(cwd), session_id, None, f"L{i}"), f"loop-{session_id}"))
        first = time.time()
        for job, workflow_id in jobs:
            client.enqueue({"workflow_name": WORKFLOW_NAME, "queue_name": "loopwright", "workflow_id": workflow_id,
                            "app_version": APP_VERSION}, job)
        return first, [workflow_id for _, workflow_id in jobs]
    finally:
        client.destroy()


def pg_connections(procs: list[subprocess.Popen], port: int) -> list[int]:
    """How many TCP connections each worker process holds to the database's port now (`ss`, from
    the client's side: a worker's DBOS system-database pool and loopwright's own store engine)."""
    out = subprocess.run(["ss", "-Htnp", "state", "established", "dport", f"= :{port}"], capture_output=True,
                         text=True, check=False).stdout
    held = {proc.pid: 0 for proc in procs}
    for line in out.splitlines():
        for part in line.split("pid=")[1:]:
            pid = int(part.split(",")[0])
            if pid in held:
                held[pid] += 1
    return [held[proc.pid] for proc in procs]


def wait_done(store: str, ids: list[str], calls: int, procs: list[subprocess.Popen], timeout: float,
              peak: list[int] | None = None) -> list:
    """Every loop's DBOS status once all have succeeded (a failed loop, or a worker gone, ends the run).
    `peak`, when given, is raised to the most database connections each worker held at a poll."""
    from dbos import DBOSClient

    from loopwright.distributed.client import WORKFLOW_NAME
    from loopwright.distributed.worker import APP_NAME

    client = DBOSClient(system_database_url=store, application_name=APP_NAME)
    try:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            found = client.list_workflows(workflow_ids=ids, name=WORKFLOW_NAME)
            bad = [w for w in found if w.status not in ("ENQUEUED", "PENDING", "SUCCESS")]
            if bad:
                raise SystemExit(f"{len(bad)} loop(s) failed, e.g. {bad[0].workflow_id}: {bad[0].status} {bad[0].error}")
            if len(found) == len(ids) and all(w.status == "SUCCESS" for w in found):
                for w in found:
                    assert w.output["result"] == "done" and w.output["num_turns"] == calls, w.output
                return found
            if any(proc.poll() is not None for proc in procs):
                raise SystemExit("a worker exited during the run (see its log)")
            if peak is not None:
                port = urlsplit(store).port or 5432
                peak[:] = [max(a, b) for a, b in zip(peak, pg_connections(procs, port))]
            time.sleep(0.2)
        raise SystemExit(f"the {len(ids)} loops did not finish within {timeout:g} s")
    finally:
        client.destroy()


def run_on_workers(n: int, base_url: str, folder: Path, *, store: str, workers: int, concurrency: int,
                   calls: int) -> dict:
    """One measured run: W fresh workers on `store` (an empty PostgreSQL database), warmed up by
    W x C loops (imports and first-use set-up are not the loops' cost, as on the in-process side),
    drain N loops. wall: the first enqueue to the last loop's end as DBOS recorded it (`updated_at`)."""
    from loopwright.distributed.dbosinternals import ensure_schema
    from loopwright.distributed.registry import Registry

    ensure_schema(store)
    Registry(store).close()
    procs = start_workers(store, workers, concurrency, worker_env(base_url, folder / "home"), folder)
    try:
        wait_ready(store, procs, folder)
        _, warm = enqueue_all(store, workers * concurrency, folder / "warm-up", calls)
        wait_done(store, warm, calls, procs, timeout=60 + 10 * len(warm) * calls)
        first, ids = enqueue_all(store, n, folder / "loops", calls)
        peak = [0] * workers
        found = wait_done(store, ids, calls, procs, timeout=60 + 10 * n * calls, peak=peak)
    finally:
        stop_workers(procs)
    last = max(w.updated_at for w in found) / 1000
    split: dict[str, int] = {}
    for w in found:
        split[w.executor_id] = split.get(w.executor_id, 0) + 1
    return {"wall": last - first, "split": [split.get(f"w{k}", 0) for k in range(workers)], "connections": peak}
