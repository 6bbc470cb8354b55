"""Durable goal loops on DBOS workers, end to end: `loopwright enqueue` puts goal loops on a queue,
`loopwright worker` processes take them (loopback simulator as the model, real shells, real files),
one worker dies by kill -9 mid-run and the survivors take its loops over; every loop finishes once
and no tool call runs twice (each call appends a line to its own marker file). With SQLite-backed
DBOS a lone worker survives its own kill -9 and a restart.

Three workers share LOOPWRIGHT_TEST_LOOPS queued loops (default 200, the issue's number)."""

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from loopwright.testing import Simulator
from procs import gone

LOOPS = int(os.environ.get("LOOPWRIGHT_TEST_LOOPS", "200"))
JUDGE = {"system_contains": "You decide whether an agent has met its goal"}


def loop_rules(i, work_delay=0.2, answer_delay=1.0):
    """Loop i: one Bash call that appends to markers/L{i}, then an answer (after `answer_delay`,
    the window in which a worker is killed)."""
    return [
        {"match": {"last_user_contains": f"[L{i}:S1]"}, "responses": [{"text": f"done L{i}", "delay": answer_delay,
                                                                      "repeat": -1}]},
        {"match": {"last_user_contains": f"go L{i}."}, "responses": [
            {"tool_use": {"name": "Bash", "input": {"command": f"echo x >> markers/L{i}; echo '[L{i}:S1]'"}},
             "delay": work_delay, "repeat": -1}]},
        # anything else in loop i's conversation: a worker killed while the call ran leaves its
        # outcome unknown (the call is not run again), and the model answers from what it has
        {"match": {"first_user_contains": f"go L{i}."}, "responses": [{"text": f"done L{i}", "repeat": -1}]},
    ]


def script(n, slow=(), slow_s=4.0, **delays):
    """`slow`: loops whose answer takes `slow_s` (a worker is stopped or killed while it waits)."""
    rules = [{"match": JUDGE, "responses": [{"text": json.dumps({"ok": True, "reason": "marker written"}),
                                             "repeat": -1}]}]
    for i in range(n):
        rules += loop_rules(i, **(dict(delays, answer_delay=slow_s) if i in slow else delays))
    return {"rules": rules}


@pytest.fixture
def project(tmp_path):
    folder = tmp_path / "project"
    (folder / "markers").mkdir(parents=True)
    return folder


@pytest.fixture
def env(tmp_path):
    home = tmp_path / "home"
    e = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "LOOPWRIGHT_STORE"))}
    e.update(LOOPWRIGHT_HOME=str(home / ".loopwright"), HOME=str(home), ANTHROPIC_API_KEY="sk-test")
    return e


def cli(args, env, cwd, timeout=120):
    out = subprocess.run([sys.executable, "-m", "loopwright", *args], env=env, cwd=cwd, capture_output=True,
                         text=True, timeout=timeout)
    assert out.returncode == 0, out.stderr
    return out.stdout


def loop_flags(i):
    return [f"go L{i}.", "--goal", f"markers/L{i} exists", "--check", f"test -f markers/L{i}", "--allowedTools", "Bash",
            "--max-turns", "6"]


def enqueue(store, env, cwd, i, *more):
    out = cli(["enqueue", "--store", store, *loop_flags(i), *more], env, cwd)
    workflow_id, _, session_id = out.split()
    return workflow_id, session_id


def enqueue_many(store, env, cwd, n):
    """Loop 0 by `loopwright enqueue`, the rest as it enqueues them but in this process and through
    one client (a process per loop would spend most of the test starting Python)."""
    import uuid

    from loopwright.cli.options import parse_options
    from loopwright.distributed.client import enqueue_all
    from loopwright.distributed.jobs import new_job

    first = enqueue(store, env, cwd, 0)
    sessions = [str(uuid.uuid4()) for _ in range(1, n)]
    put = enqueue_all(store, "loopwright", [(new_job(parse_options(["-p", *loop_flags(i)]).run_spec(), str(cwd), s,
                                                     None, f"go L{i}."), f"loop-{s}")
                                            for i, s in enumerate(sessions, 1)])
    return [first, *zip(put, sessions)]


STARTED: list[subprocess.Popen] = []  # every worker a test started: none outlives its test


@pytest.fixture(autouse=True)
def no_worker_left():
    yield
    while STARTED:
        proc = STARTED.pop()
        if proc.poll() is None:  # a test that failed before it stopped its workers
            proc.kill()
            proc.wait(timeout=30)


def start_worker(store, env, cwd, log, *more):
    proc = subprocess.Popen([sys.executable, "-m", "loopwright", "worker", "--store", store, "--dead-after", "8",
                             "--drain", "20", *more], env=env, cwd=cwd, stdout=log, stderr=subprocess.STDOUT)
    STARTED.append(proc)
    return proc


def registry(store):
    from loopwright.distributed.registry import Registry

    return Registry(store)


def wait_for(predicate, timeout, what):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if (value := predicate()):
            return value
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}")


def statuses(store):
    from loopwright.distributed.client import statuses

    return statuses(store)


def all_done(store, n):
    found = statuses(store)
    return len(found) == n and all(s == "SUCCESS" for s in found.values())


def marker_lines(project):
    return {p.name: p.read_text().count("x") for p in (project / "markers").iterdir()}


def stop(proc):
    if proc.poll() is None:
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=60) == 0


def loop_number(execution):
    """The loop an execution runs, from its label ("go L7." is loop 7)."""
    return int(execution.label.split("L")[1].rstrip("."))


def unexplained(loops, executions, store, env, cwd, logs):
    """What a failure needs to be read: each loop's executions and conversation, and the workers' logs' ends."""
    lines = []
    for i in sorted(loops):
        runs = [e for e in executions if loop_number(e) == i]
        lines.append(f"loop {i} ran without its marker: {runs}")
        if runs:
            lines.append(json.dumps(transcript_users(store, env, cwd, runs[0].session_id))[:4000])
    for log in sorted(logs.glob("worker*.log")):
        lines.append(f"--- {log.name} (last lines)\n" + "\n".join(log.read_text(errors="replace").splitlines()[-40:]))
    return "\n".join(lines)


def transcript_users(store, env, cwd, session_id):
    """The user messages of a session, as `loopwright session export` gives its transcript."""
    out = cli(["session", "export", session_id, "--store", store], env, cwd)
    records = [json.loads(line) for line in out.splitlines()]
    return [r["message"]["content"] for r in records if r.get("type") == "user"]


@pytest.mark.timeout(240 + 3 * LOOPS)
def test_three_workers_share_the_queue_and_survive_a_kill(pg_db, project, env, tmp_path):
    store = pg_db
    with Simulator(script(LOOPS)) as sim:
        env["ANTHROPIC_BASE_URL"] = sim.base_url
        jobs = enqueue_many(store, env, project, LOOPS)
        logs = [open(tmp_path / f"worker{k}.log", "w") for k in range(3)]
        workers = [start_worker(store, env, project, logs[k], "--concurrency", "3", "--id", f"w{k}")
                   for k in range(3)]
        try:
            reg = registry(store)
            # mid-run: the victim runs a loop whose tool call has run and whose answer is awaited
            def victim_busy():
                running = [e for e in reg.executions(running_only=True) if e.executor_id == "w0"]
                done = marker_lines(project)
                return [e for e in running if done.get(f"L{loop_number(e)}")]
            taken = wait_for(victim_busy, 120, "worker w0 to be mid-loop")
            workers[0].send_signal(signal.SIGKILL)
            assert gone(workers[0].pid, 10)
            wait_for(lambda: all_done(store, LOOPS), 120 + 3 * LOOPS, "every loop to finish")

            executions = reg.executions()
            by_loop = {}
            for e in executions:
                by_loop.setdefault(e.workflow_id, []).append(e)
            # each loop finished once; the killed worker's loops were finished by a survivor
            assert {w for w, _ in jobs} == set(by_loop)
            for workflow_id, runs in by_loop.items():
                assert [r.status for r in runs].count("done") == 1, runs
            taken_ids = {e.workflow_id for e in taken}
            for workflow_id in taken_ids:
                finisher = [r for r in by_loop[workflow_id] if r.status == "done"][0]
                assert finisher.executor_id in ("w1", "w2")
            assert sum(1 for e in executions if e.executor_id == "w0") >= len(taken_ids)
            # no tool call ran twice; every loop's call ran once, but for one the kill cut off between
            # its start mark and its command (then it answers "outcome unknown", never runs again)
            markers = marker_lines(project)
            assert set(markers.values()) == {1}
            cut_off = {i for i in range(LOOPS) if f"L{i}" not in markers}
            on_victim = {loop_number(e) for e in executions if e.executor_id == "w0"}
            assert cut_off <= on_victim, unexplained(cut_off - on_victim, executions, store, env, project, tmp_path)
            for i in cut_off:
                session = next(e.session_id for e in executions if loop_number(e) == i)
                assert "Outcome unknown" in json.dumps(transcript_users(store, env, project, session))
            # the replayed transcript of a taken-over loop holds its prompt once
            victim = taken[0]  # its loop number and its session, from one execution (the victim may have had three)
            victim_session, i = victim.session_id, loop_number(victim)
            prompts = [u for u in transcript_users(store, env, project, victim_session) if "go L" in json.dumps(u)]
            assert len(prompts) == 1, prompts

            # a session started on the dead worker is resumed by a live one, from the queue
            workflow_id, _ = enqueue(store, env, project, i, "--resume", victim_session)
            wait_for(lambda: statuses(store).get(workflow_id) == "SUCCESS", 120, "the resumed session")
            resumed = [e for e in reg.executions() if e.workflow_id == workflow_id]
            assert [e.executor_id in ("w1", "w2") for e in resumed] == [True]
            users = json.dumps(transcript_users(store, env, project, victim_session))
            assert users.count(f"go L{i}.") == 2  # the first prompt and the resumed one, in one session

            listing = cli(["workers", "--store", store, "--all"], env, project)
            assert "w0  recovered" in listing and "w1  alive" in listing and "w2  alive" in listing
            reg.close()
        finally:
            for proc in workers:
                if proc.poll() is None:
                    stop(proc)
            for log in logs:
                log.close()
    assert not sim.unmatched


def test_a_worker_judged_gone_while_alive_leaves_at_once(project, env, tmp_path):
    """A live worker whose heartbeat came too late (a starved machine) has had its loops taken
    over: it must not run them on beside the survivor. Its next heartbeat finds the claim and it
    exits (75), saying why; the claim is left as the survivor made it."""
    store = f"sqlite:///{tmp_path / 'dbos.sqlite'}"
    with open(tmp_path / "worker.log", "w") as log:
        worker = start_worker(store, env, project, log, "--id", "slow")
        reg = registry(store)
        wait_for(lambda: [w for w in reg.workers() if w.executor_id == "slow"], 60, "the worker to join")
        # what a survivor does when it judges a worker gone (here with a zero wait: the last beat is past)
        wait_for(lambda: reg.claim_recovery("slow", 0.0), 30, "the claim")
        assert worker.wait(timeout=60) == 75
        reg_states = {w.executor_id: w.state for w in reg.workers()}
        reg.close()
    said = (tmp_path / "worker.log").read_text()
    assert "slow was judged gone by the other workers" in said and "nothing runs twice" in said, said
    assert reg_states["slow"] == "recovering"


def test_a_lone_sqlite_worker_survives_its_own_kill_and_restart(project, env, tmp_path):
    store = f"sqlite:///{tmp_path / 'dbos.sqlite'}"
    with Simulator(script(2, answer_delay=2.0)) as sim:
        env["ANTHROPIC_BASE_URL"] = sim.base_url
        jobs = [enqueue(store, env, project, i) for i in range(2)]
        with open(tmp_path / "worker.log", "w") as log:
            first = start_worker(store, env, project, log, "--concurrency", "2")
            wait_for(lambda: len(marker_lines(project)) == 2 and not all_done(store, 2), 60, "both tool calls")
            first.send_signal(signal.SIGKILL)
            assert gone(first.pid, 10)
            again = start_worker(store, env, project, log, "--concurrency", "2")
            try:
                wait_for(lambda: all_done(store, 2), 120, "both loops after the restart")
            finally:
                stop(again)
        assert marker_lines(project) == {"L0": 1, "L1": 1}
        for _, session_id in jobs:
            assert len([u for u in transcript_users(store, env, project, session_id) if "go L" in json.dumps(u)]) == 1
    assert not sim.unmatched
    log_text = (tmp_path / "worker.log").read_text()
    assert "is gone; 2 of its loops taken over" in log_text, log_text


def test_a_job_enqueued_as_flags_by_an_older_release_runs_on_a_sqlite_worker(project, env, tmp_path):
    """Before RunSpec, `loopwright enqueue` stored the run's -p flags (`args`) for the worker to
    parse again. Such a job, left on a queue when the release changed, is read once into a RunSpec
    and runs as any other: its tool call, its goal's check, its session."""
    import uuid

    from loopwright.distributed.client import enqueue as put

    store = f"sqlite:///{tmp_path / 'dbos.sqlite'}"
    session_id = str(uuid.uuid4())
    older = {"args": [*loop_flags(0), "--max-budget-usd", "none"], "cwd": str(project), "session_id": session_id,
             "resume": None, "label": "go L0.", "own_session": False,  # what jobs.new_job wrote before RunSpec
             "trace": {"traceparent": "00-" + "ab" * 16 + "-" + "cd" * 8 + "-01", "links": []}}
    with Simulator(script(1)) as sim:
        env["ANTHROPIC_BASE_URL"] = sim.base_url
        workflow_id = put(store, "loopwright", older, f"loop-{session_id}")
        with open(tmp_path / "worker.log", "w") as log:
            worker = start_worker(store, env, project, log)
            try:
                wait_for(lambda: all_done(store, 1), 120, "the older job to finish")
            finally:
                stop(worker)
        assert marker_lines(project) == {"L0": 1}
        users = transcript_users(store, env, project, session_id)
        assert "go L0." in json.dumps(users) and "test -f markers/L0" in json.dumps(users)  # its prompt, its goal
    assert not sim.unmatched
    log_text = (tmp_path / "worker.log").read_text()
    assert f"loopwright worker: go L0.: goal_met (session {session_id})" in log_text, log_text
    assert workflow_id == f"loop-{session_id}"


def most_at_once(executions):
    """The most executions that overlapped, from their recorded start and end."""
    edges = sorted([(e.started, 1) for e in executions] + [(e.ended, -1) for e in executions])
    now = peak = 0
    for _, step in edges:
        now += step
        peak = max(peak, now)
    return peak


@pytest.mark.timeout(300)
def test_queue_concurrency_holds_across_workers_and_ctrl_c_drains(pg_db, project, env, tmp_path):
    store = pg_db
    with Simulator(script(6, slow=(4, 5), slow_s=10.0)) as sim, open(tmp_path / "workers.log", "w") as log:
        env["ANTHROPIC_BASE_URL"] = sim.base_url
        limits = ("--concurrency", "2", "--queue-concurrency", "2")
        a, b = (start_worker(store, env, project, log, *limits, "--id", name) for name in ("a", "b"))
        try:
            for i in range(4):
                enqueue(store, env, project, i)
            wait_for(lambda: all_done(store, 4), 120, "four loops")
            reg = registry(store)
            assert most_at_once(reg.executions()) <= 2  # two workers could run four; the queue allows two
            stop(b)  # idle: it leaves at once

            # Ctrl-C while a loop runs: no new work is taken, the running loop finishes, then it exits
            slow, session = enqueue(store, env, project, 4)
            wait_for(lambda: reg.executions_of("a"), 60, "worker a to take loop 4")
            listing = cli(["workers", "--store", store], env, project)  # what each live worker runs
            assert listing.startswith("a  alive  queue loopwright") and f"{slow}  session {session}  go L4." in listing
            assert not any(line.startswith("b  ") for line in listing.splitlines())  # b has left
            stop(a)
            assert [(e.executor_id, e.status) for e in reg.executions() if e.workflow_id == slow] == [("a", "done")]
        finally:
            for proc in (a, b):
                if proc.poll() is None:
                    stop(proc)
        # a drain shorter than the loop: the loop is handed back and the next worker finishes it
        quick = start_worker(store, env, project, log, "--drain", "0.3", "--id", "c")
        try:
            handed, _ = enqueue(store, env, project, 5)
            wait_for(lambda: "L5" in marker_lines(project), 60, "loop 5's tool call")
            stop(quick)
        finally:
            if quick.poll() is None:
                stop(quick)
        last = start_worker(store, env, project, log, "--id", "d")
        try:
            wait_for(lambda: statuses(store).get(handed) == "SUCCESS", 60, "the handed-back loop")
        finally:
            stop(last)
        runs = [(e.executor_id, e.status) for e in reg.executions() if e.workflow_id == handed]
        assert runs == [("c", "handed back"), ("d", "done")]
        assert marker_lines(project) == {f"L{i}": 1 for i in range(6)}
        reg.close()
    assert not sim.unmatched


@pytest.mark.timeout(300)
def test_recovered_loops_keep_the_queue_limits(pg_db, project, env, tmp_path):
    """A dead worker's loops go back on their queue: the survivor, busy with a loop of its own,
    takes them one at a time (its --concurrency 1) and never more than the queue's 2 run at once."""
    store = pg_db
    with Simulator(script(3, slow=(0, 1, 2), slow_s=8.0)) as sim, open(tmp_path / "workers.log", "w") as log:
        env["ANTHROPIC_BASE_URL"] = sim.base_url
        limits = ("--concurrency", "1", "--queue-concurrency", "2")
        workers = {name: start_worker(store, env, project, log, *limits, "--id", name) for name in ("v", "s")}
        try:
            for i in range(3):
                enqueue(store, env, project, i)
            reg = registry(store)

            def both_mid_loop():  # each worker's loop has run its tool call and awaits its answer
                running = reg.executions(running_only=True)
                done = marker_lines(project)
                return {e.executor_id for e in running if done.get(e.label.split()[1].rstrip("."))} == {"v", "s"}
            wait_for(both_mid_loop, 120, "both workers to be mid-loop")
            workers["v"].send_signal(signal.SIGKILL)
            assert gone(workers["v"].pid, 10)
            wait_for(lambda: all_done(store, 3), 180, "every loop to finish")
            executions = reg.executions()
            reg.close()
        finally:
            for proc in workers.values():
                if proc.poll() is None:
                    stop(proc)
    assert most_at_once(executions) <= 2
    assert most_at_once([e for e in executions if e.executor_id == "s"]) == 1
    # v's last loop was taken over; on a loaded machine v may have finished one before (and one it
    # finished as it was killed may be finished again by s from its records: the markers show no
    # tool call ran twice)
    on_v = [e.status for e in executions if e.executor_id == "v"]
    assert on_v[-1] == "taken over" and set(on_v[:-1]) <= {"done"}, on_v
    assert {e.status for e in executions if e.executor_id == "s"} == {"done"}
    assert len({e.workflow_id for e in executions if e.status == "done"}) == 3
    assert marker_lines(project) == {f"L{i}": 1 for i in range(3)}
    assert not sim.unmatched


SKEWED_CLOCK = """import os, time
_skew = float(os.environ.get("LW_TEST_CLOCK_SKEW", "0"))
_time, _time_ns = time.time, time.time_ns
time.time = lambda: _time() + _skew
time.time_ns = lambda: _time_ns() + int(_skew * 1e9)
"""


@pytest.mark.timeout(240)
def test_heartbeats_are_judged_on_the_database_clock(pg_db, project, env, tmp_path):
    """Two workers on machines whose clocks disagree by a minute (a sitecustomize shifts each one's
    time.time): neither takes the other for dead, and both take loops."""
    store = pg_db
    (tmp_path / "skew").mkdir()
    (tmp_path / "skew" / "sitecustomize.py").write_text(SKEWED_CLOCK)
    path = os.pathsep.join(p for p in (str(tmp_path / "skew"), env.get("PYTHONPATH")) if p)
    with Simulator(script(4)) as sim, open(tmp_path / "workers.log", "w") as log:
        env["ANTHROPIC_BASE_URL"] = sim.base_url
        workers = [start_worker(store, dict(env, PYTHONPATH=path, LW_TEST_CLOCK_SKEW=skew), project, log,
                                "--concurrency", "1", "--id", name) for name, skew in (("ahead", "30"), ("behind", "-30"))]
        try:
            for i in range(4):
                enqueue(store, env, project, i)
            wait_for(lambda: all_done(store, 4), 120, "every loop to finish")
            reg = registry(store)
            # both have beaten for longer than --dead-after (8 s), as the database's clock counts it
            wait_for(lambda: all(w.beat - w.started > 10 for w in reg.workers()), 60, "a few heartbeats")
            states = {w.executor_id: w.state for w in reg.workers()}
            executions = reg.executions()
            said = (tmp_path / "workers.log").read_text()  # (before they stop: one that left is "gone")
            reg.close()
        finally:
            for proc in workers:
                if proc.poll() is None:
                    stop(proc)
    assert states == {"ahead": "alive", "behind": "alive"}
    assert "is gone" not in said
    assert sorted(e.status for e in executions) == ["done"] * 4
    assert {e.executor_id for e in executions} == {"ahead", "behind"}
    assert not sim.unmatched


def test_enqueue_refuses_a_store_it_cannot_use(project, env):
    out = subprocess.run([sys.executable, "-m", "loopwright", "enqueue", "--store", "mysql://x/y", "go"], env=env,
                         cwd=project, capture_output=True, text=True, timeout=60)
    assert out.returncode != 0
    assert "--store: expected a postgresql://… or sqlite:///… URL, got 'mysql://x/y'" in out.stderr
    attempts = subprocess.run([sys.executable, "-m", "loopwright", "enqueue", "--store", "sqlite:////tmp/x.db",
                               "go", "--attempts", "2"], env=env, cwd=project, capture_output=True, text=True,
                              timeout=60)
    assert attempts.returncode != 0 and "--attempts needs a git repository: " in attempts.stderr  # checked now
    unset = subprocess.run([sys.executable, "-m", "loopwright", "worker"], env=env, cwd=project,
                           capture_output=True, text=True, timeout=60)
    assert unset.returncode != 0 and "--store: a durable store is needed" in unset.stderr
    down = subprocess.run([sys.executable, "-m", "loopwright", "worker", "--store",
                           "postgresql://nobody:secret@127.0.0.1:1/none"], env=env, cwd=project, capture_output=True,
                          text=True, timeout=60)
    assert down.returncode != 0 and down.stderr.startswith(
        "loopwright: error: cannot reach the store postgresql://nobody:***@127.0.0.1:1/none: "), down.stderr
    assert "Traceback" not in down.stderr and "secret" not in down.stderr
    (project / ".loopwright" / "routines").mkdir(parents=True)
    (project / ".loopwright" / "routines" / "r.yaml").write_text('source: {command: "true"}\nprompt: "x"\n')
    local = subprocess.run([sys.executable, "-m", "loopwright", "routine", "run", "r", "--once", "--queue", "q"],
                           env=env, cwd=project, capture_output=True, text=True, timeout=60)
    assert local.returncode != 0 and "--queue: items go to workers through a durable store" in local.stderr


def test_a_tool_call_cut_off_by_a_kill_is_not_run_again(project, env, tmp_path):
    """The worker dies while a tool runs: after the restart the call is answered as the session
    ledger answers a call a crash left running (outcome unknown), never run a second time."""
    store = f"sqlite:///{tmp_path / 'dbos.sqlite'}"
    rules = [{"match": JUDGE, "responses": [{"text": json.dumps({"ok": True, "reason": "ok"}), "repeat": -1}]},
             {"match": {"last_user_contains": "Outcome unknown"}, "responses": [{"text": "checked", "repeat": -1}]},
             {"match": {"last_user_contains": "go L0."}, "responses": [
                 {"tool_use": {"name": "Bash", "input": {"command": "echo x >> markers/L0; sleep 10"}},
                  "repeat": -1}]}]
    with Simulator({"rules": rules}) as sim:
        env["ANTHROPIC_BASE_URL"] = sim.base_url
        _, session_id = enqueue(store, env, project, 0)
        with open(tmp_path / "worker.log", "w") as log:
            first = start_worker(store, env, project, log)
            wait_for(lambda: marker_lines(project), 60, "the tool call to start")
            first.send_signal(signal.SIGKILL)
            assert gone(first.pid, 10)
            again = start_worker(store, env, project, log)
            try:
                wait_for(lambda: all_done(store, 1), 120, "the loop after the restart")
            finally:
                stop(again)
    assert marker_lines(project) == {"L0": 1}
    results = json.dumps(transcript_users(store, env, project, session_id))
    assert "Outcome unknown: the session crashed while this Bash call was running" in results
    assert not sim.unmatched


def test_a_routine_fire_splits_its_items_across_workers(pg_db, project, env, tmp_path):
    store = pg_db
    (project / ".loopwright" / "routines").mkdir(parents=True)
    (project / ".loopwright" / "routines" / "spread.yaml").write_text(
        'source: {command: cat items.jsonl}\nprompt: "go {id}."\nallowed_tools: [Bash]\nsandbox: false\n'
        "concurrency: 4\n")
    (project / "items.jsonl").write_text("".join(f'{{"id": "L{i}"}}\n' for i in range(4)))
    with Simulator(script(4)) as sim, open(tmp_path / "workers.log", "w") as log:
        env["ANTHROPIC_BASE_URL"] = sim.base_url
        workers = [start_worker(store, env, project, log, "--concurrency", "1", "--id", f"r{k}") for k in range(2)]
        try:
            fire = subprocess.run([sys.executable, "-m", "loopwright", "routine", "run", "spread", "--once", "--queue",
                                   "loopwright", "--store", store], env=env, cwd=project, capture_output=True,
                                  text=True, timeout=180)
        finally:
            for proc in workers:
                stop(proc)
    assert "routine spread: 4 found, 4 taken, 4 done, 0 failed" in fire.stdout, fire.stderr
    assert marker_lines(project) == {f"L{i}": 1 for i in range(4)}
    reg = registry(store)
    ran = [(e.executor_id, e.status) for e in reg.executions()]
    reg.close()
    assert len(ran) == 4 and {status for _, status in ran} == {"done"}
    assert {executor for executor, _ in ran} == {"r0", "r1"}  # one at a time each: both took items
    ledger = json.loads(cli(["routine", "items", "spread", "--json", "--store", store], env, project))
    assert [(i["status"], i["tries"]) for i in ledger] == [("done", 1)] * 4
    assert not sim.unmatched


def test_a_recovery_claimed_by_a_survivor_that_died_is_claimed_again(tmp_path):
    """A survivor claims a gone worker's recovery, then dies before it finishes: the claim goes
    stale after --dead-after and another survivor takes it; a fresh claim, or a finished
    recovery, is not taken again."""
    reg = registry(f"sqlite:///{tmp_path / 'workers.db'}")
    try:
        reg.join("w0", "host", 1, "loopwright", 1)
        past = reg.now()
        wait_for(lambda: reg.now() > past, 10, "the database's clock to move")
        assert reg.gone(0.0) == ["w0"] and reg.claim_recovery("w0", 0.0)
        assert reg.gone(60.0) == [] and not reg.claim_recovery("w0", 60.0)  # claimed a moment ago: left alone
        past = reg.now()
        wait_for(lambda: reg.now() > past, 10, "the database's clock to move")
        assert reg.gone(0.0) == ["w0"] and reg.claim_recovery("w0", 0.0)  # the claimant never finished
        reg.recovered("w0")
        assert reg.gone(0.0) == [] and not reg.claim_recovery("w0", 0.0)
        assert [w.state for w in reg.workers()] == ["recovered"]
    finally:
        reg.close()
