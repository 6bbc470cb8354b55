"""A killed worker's tool processes do not live on. A lone SQLite-backed worker runs a loop whose
Bash command appends to a file every 50 ms (in the foreground, or as a background shell; under
the sandbox and with --no-sandbox); the worker dies by kill -9 mid-command. Its command dies with
it (the lifeline): the file stops growing at once and the command's pid is gone. A command that
leaves a writer the lifeline cannot reach (a child in a session of its own) has it ended by the
next worker before it takes the loop over. Either
way the loop is then finished by the next worker, its interrupted call never run again.

A PostgreSQL store restarted under two busy workers: every statement the restart cut off runs
again on a new connection, and every loop finishes; a store gone for longer than the bound ends
its loops with an error naming it."""

import json
import os
import re
import signal
from pathlib import Path

import pytest

from loopwright.sandbox.bwrap import availability
from loopwright.testing import Simulator
from procs import gone
from test_lifeline import size, wait_growing, wait_stable
from test_workers import JUDGE, all_done, cli, env, no_worker_left, start_worker, statuses, stop, wait_for  # noqa: F401

WRITE = "while :; do echo x >> {out}; sleep 0.05; done"


def tally(scenario, loops, finished, markers):
    """What one run of a scenario came to, for bench/faults.py (LOOPWRIGHT_FAULTS_TALLY names the
    file it reads): loops tried, finished, and tool calls that ran more than once."""
    path = os.environ.get("LOOPWRIGHT_FAULTS_TALLY")
    if path:
        with open(path, "a") as f:
            f.write(json.dumps({"scenario": scenario, "loops": loops, "finished": finished,
                                "twice": sum(1 for n in markers.values() if n > 1)}) + "\n")


def pids_running(token):
    """Host pids of the processes whose command line holds `token` (inside the sandbox's PID
    namespace `$$` would not be the host's pid)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if token.encode() in (entry / "cmdline").read_bytes() and gone(int(entry.name), 0) is False:
                    found.append(int(entry.name))
            except OSError:
                pass
    return found


def cleanup(token):
    for pid in pids_running(token):  # (only when a test failed: what it left running)
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def loop(command, background=False, sandbox=True, answer_delay=0.0):
    """One loop: the Bash call, then an answer; after a takeover the cut-off call's "Outcome
    unknown" is answered too."""
    call = {"command": command, "timeout": 600000, **({"run_in_background": True} if background else {})}
    rules = [{"match": JUDGE, "responses": [{"text": json.dumps({"ok": True, "reason": "ok"}), "repeat": -1}]},
             {"match": {"last_user_contains": "Outcome unknown"}, "responses": [{"text": "checked", "repeat": -1}]},
             {"match": {"last_user_contains": "running in background"}, "responses": [
                 {"text": "started", "delay": answer_delay, "repeat": -1}]},
             {"match": {"last_user_contains": "go F0."}, "responses": [{"tool_use": {"name": "Bash", "input": call},
                                                                       "repeat": -1}]}]
    flags = ["go F0.", "--allowedTools", "Bash", "--max-turns", "4", *([] if sandbox else ["--no-sandbox"])]
    return {"rules": rules}, flags


def first_worker_killed(store, env, project, log, sim_flags, ready):
    """Enqueue the loop, start a worker, wait for `ready`, kill the worker with SIGKILL."""
    cli(["enqueue", "--store", store, *sim_flags], env, project)
    first = start_worker(store, env, project, log)
    ready()
    first.send_signal(signal.SIGKILL)
    assert gone(first.pid, 10)


def finish_after_restart(store, env, project, log):
    again = start_worker(store, env, project, log)
    try:
        wait_for(lambda: all_done(store, 1), 120, "the loop after the restart")
    finally:
        stop(again)


needs_bwrap = pytest.mark.skipif(availability() is not None, reason=f"no sandbox here: {availability()}")


@pytest.fixture
def project(tmp_path):
    folder = tmp_path / "project"
    folder.mkdir()
    return folder


@pytest.mark.timeout(240)
@pytest.mark.parametrize("background", [False, True], ids=["foreground", "background"])
@pytest.mark.parametrize("sandbox", [pytest.param(True, marks=needs_bwrap), False], ids=["sandbox", "no-sandbox"])
def test_a_killed_workers_command_stops_writing(project, env, tmp_path, sandbox, background):
    store, out, token = f"sqlite:///{tmp_path / 'dbos.sqlite'}", project / "out", f"writer-{tmp_path.name}"
    command = f"echo start >> {out}; : {token}; {WRITE.format(out=out)}"
    # a background shell's loop waits for the model's next answer: the worker is killed meanwhile
    script, flags = loop(command, background=background, sandbox=sandbox, answer_delay=60.0)
    try:
        with Simulator(script) as sim, open(tmp_path / "worker.log", "w") as log:
            env["ANTHROPIC_BASE_URL"] = sim.base_url
            pids = []

            def writing():
                wait_growing(out, 90)
                pids.extend(wait_for(lambda: pids_running(token), 30, "the command's processes"))

            first_worker_killed(store, env, project, log, flags, writing)
            assert wait_stable(out), "the killed worker's command kept writing"
            assert all(gone(pid, 10) for pid in pids), [p for p in pids if not gone(p, 0)]
            if not background:  # (a background shell's loop would wait its minute-long answer again)
                finish_after_restart(store, env, project, log)
                tally("kill -9 mid tool call", 1, 1, {"out": out.read_text().count("start")})
                assert out.read_text().count("start") == 1  # the cut-off call was not run again
                assert "Outcome unknown" in json.dumps(sim.message_requests[-1].body)
    finally:
        cleanup(token)


@pytest.mark.timeout(240)
def test_the_next_worker_ends_what_the_signal_cannot_reach_before_it_takes_over(project, env, tmp_path):
    """--no-sandbox (under the sandbox its PID namespace ends them all): the command starts a
    subshell writer in its own process group and a writer in a session of its own (setsid). The
    lifeline's keeper ends the shell's group with the worker, the subshell writer with it; the
    writer that left the group keeps writing until the next worker takes over, which kills it (by
    its mark) before the loop goes on."""
    store, token = f"sqlite:///{tmp_path / 'dbos.sqlite'}", f"writer-{tmp_path.name}"
    in_group, escaped = project / "in_group", project / "escaped"
    command = (f"echo start >> {in_group}; ( : {token}; {WRITE.format(out=in_group)} ) & "
               f"setsid sh -c ': {token}; {WRITE.format(out=escaped)}' & wait")
    script, flags = loop(command, sandbox=False)
    try:
        with Simulator(script) as sim, open(tmp_path / "worker.log", "w") as log:
            env["ANTHROPIC_BASE_URL"] = sim.base_url

            def writing():
                wait_growing(in_group, 90)
                wait_growing(escaped, 30)
                wait_for(lambda: len(pids_running(token)) >= 2, 30, "both writers")

            first_worker_killed(store, env, project, log, flags, writing)
            assert wait_stable(in_group)  # its group ended with the worker
            pids = pids_running(token)
            wait_growing(escaped)  # nobody has ended it yet: it left the group
            finish_after_restart(store, env, project, log)
            assert wait_stable(escaped)
            assert all(gone(pid, 10) for pid in pids)
            assert in_group.read_text().count("start") == 1
            assert "Outcome unknown" in json.dumps(sim.message_requests[-1].body)
        said = (tmp_path / "worker.log").read_text()
        killed = said.index("tool processes (or groups) still running here were killed")
        assert killed < said.index("1 of its loops taken over"), said  # ended before the loop went on
    finally:
        cleanup(token)


@pytest.fixture
def own_cluster():
    """A PostgreSQL cluster of this test's own (it is restarted: the session's must not be)."""
    import shutil

    from pgcluster import start_cluster

    cluster, reason = start_cluster()
    if cluster is None:
        pytest.skip(reason)
    try:
        yield cluster
    finally:
        cluster.stop()
        shutil.rmtree(cluster.root, ignore_errors=True)


def workflow_errors(store):
    """{workflow id: (status, error text)} of every goal loop on the store."""
    from dbos import DBOSClient

    from loopwright.distributed.registry import dbos_url

    client = DBOSClient(system_database_url=dbos_url(store), application_name="loopwright")
    try:
        return {w.workflow_id: (w.status, str(w.error or "")) for w in client.list_workflows()}
    finally:
        client.destroy()


def two_workers_mid_loop(store, env, project, log, sim, n, *more):
    """`n` loops queued (each slow to be answered), two workers taking them; returns the workers
    once both have a loop whose tool call ran and whose answer is awaited."""
    from test_workers import enqueue, loop_number, marker_lines, registry

    env["ANTHROPIC_BASE_URL"] = sim.base_url
    for i in range(n):  # all queued first: each worker takes its share
        enqueue(store, env, project, i)
    workers = [start_worker(store, env, project, log, "--concurrency", str(max(1, n // 2)), "--id", f"p{k}", *more)
               for k in range(2)]
    reg = registry(store)
    try:
        def mid_loop():
            running = reg.executions(running_only=True)
            done = marker_lines(project)
            return {e.executor_id for e in running if done.get(f"L{loop_number(e)}")} == {"p0", "p1"}
        wait_for(mid_loop, 120, "both workers to be mid-loop")
    finally:
        reg.close()
    return workers


@pytest.mark.timeout(180)
def test_loops_on_two_workers_survive_a_database_restart(own_cluster, env, tmp_path):
    """pg_ctl restart while loops run on two workers, each mid-way (its tool call done, its
    answer awaited): the statements the restart cut off are run again on new connections, every
    loop finishes, no tool call ran twice, and no transcript lost or doubled a record. (The long
    form, more loops and more restarts: bench/faults.py.)"""
    from test_workers import marker_lines, script, transcript_users

    store = own_cluster.create_database("restart")
    project = tmp_path / "project"
    (project / "markers").mkdir(parents=True)
    with Simulator(script(2, slow=(0, 1), slow_s=3.0)) as sim, open(tmp_path / "workers.log", "w") as log:
        workers = two_workers_mid_loop(store, env, project, log, sim, 2)
        try:
            own_cluster.restart()
            wait_for(lambda: all_done(store, 2), 120, "every loop after the restart")
        finally:
            for proc in workers:
                stop(proc)
    tally("postgresql restart", 2, list(statuses(store).values()).count("SUCCESS"), marker_lines(project))
    assert marker_lines(project) == {"L0": 1, "L1": 1}
    said = (tmp_path / "workers.log").read_text()
    assert "cannot write the transcript" not in said, said
    assert not re.search(r"is gone; [1-9]", said), said  # nobody was judged dead (their beats were held up too)
    from loopwright.distributed.client import statuses as all_statuses
    for workflow_id in all_statuses(store):  # each transcript whole: no record lost or written twice
        out = cli(["session", "export", workflow_id.removeprefix("loop-"), "--store", store], env, project)
        records = [json.loads(line) for line in out.splitlines()]
        assert len({r["uuid"] for r in records}) == len(records)
        results = [b for r in records if r.get("type") == "user" and isinstance(r["message"]["content"], list)
                   for b in r["message"]["content"] if b.get("type") == "tool_result"]
        assert len(results) == 1 and sum(r.get("type") == "assistant" for r in records) >= 2, records


@pytest.mark.timeout(180)
def test_workers_wait_out_a_store_down_past_the_bound_and_say_so(own_cluster, env, tmp_path):
    """The database stops while loops await their answers and stays down past the bound
    (LOOPWRIGHT_STORE_RETRY_S=1). Each worker says that the store (named) is out of reach; DBOS
    holds each loop where it is (it cannot record a step, nor an end, without its database); once
    the database is back every loop finishes, its tool call run once."""
    from test_workers import marker_lines, script

    store = own_cluster.create_database("gone")
    project = tmp_path / "project"
    (project / "markers").mkdir(parents=True)
    env["LOOPWRIGHT_STORE_RETRY_S"] = "1"
    log_path = tmp_path / "workers.log"
    said = f"the store {own_cluster.url('gone')} is out of reach"
    with Simulator(script(2, slow=(0, 1), slow_s=2.0)) as sim, open(log_path, "w") as log:
        workers = two_workers_mid_loop(store, env, project, log, sim, 2)
        try:
            own_cluster.down()
            wait_for(lambda: log_path.read_text().count(said) >= 2, 60, "both workers to say the store is away")
            own_cluster.up()
            wait_for(lambda: all_done(store, 2), 60, "every loop once the store is back")
        finally:
            for proc in workers:
                stop(proc)
    assert marker_lines(project) == {"L0": 1, "L1": 1}


@pytest.mark.timeout(120)
def test_a_loop_whose_store_is_gone_past_the_bound_ends_with_an_error_naming_it(own_cluster, env, tmp_path):
    """`loopwright -p --store postgresql://…` (no worker: nothing else holds the loop): the
    database stops while the loop awaits its answer and stays down past the bound. The loop's
    next transcript write gives up, and the run ends with an error naming the store; once the
    database is back, the session resumes and finishes, its tool call not run again."""
    import subprocess
    import sys

    from test_workers import loop_flags, marker_lines, script

    store = own_cluster.create_database("local")
    project = tmp_path / "project"
    (project / "markers").mkdir(parents=True)
    env["LOOPWRIGHT_STORE_RETRY_S"] = "1"
    with Simulator(script(1, slow=(0,), slow_s=3.0)) as sim:
        env["ANTHROPIC_BASE_URL"] = sim.base_url
        run = subprocess.Popen([sys.executable, "-m", "loopwright", "-p", "--store", store, "--session-id",
                                "11111111-2222-4333-8444-555555555555", "--output-format", "json", *loop_flags(0)],
                               env=env, cwd=project, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            wait_for(lambda: marker_lines(project).get("L0"), 60, "the loop's tool call")
            own_cluster.down()
            out, err = run.communicate(timeout=60)
        finally:
            if run.poll() is None:
                run.kill()
        own_cluster.up()
        assert run.returncode != 0, (out, err)
        assert f"the store {own_cluster.url('local')} is out of reach" in out + err, (out, err)
        cli(["-p", "--store", store, "--resume", "11111111-2222-4333-8444-555555555555", "--output-format",
             "json", *loop_flags(0)[1:]], env, project)
    assert marker_lines(project) == {"L0": 1}


@pytest.fixture
def small_disk(tmp_path):
    """A 2 MiB tmpfs of this test's own (mounting needs root: skipped with the reason elsewhere)."""
    import subprocess

    disk = tmp_path / "disk"
    disk.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=2m,mode=0700", "tmpfs", str(disk)],
                          capture_output=True, text=True)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a small tmpfs here: {done.stderr.strip() or done.returncode}")
    try:
        yield disk
    finally:
        subprocess.run(["umount", "-l", str(disk)], check=False)


def fill(disk):
    """Take every free byte of `disk` with one file (its path): the next write there fails with ENOSPC."""
    import errno

    filler = disk / "filler"
    with open(filler, "wb", buffering=0) as f:
        for size in (1 << 16, 1):
            try:
                while True:
                    f.write(b"\0" * size)
            except OSError as exc:
                assert exc.errno == errno.ENOSPC, exc
    return filler


@pytest.mark.timeout(180)
def test_a_full_disk_ends_that_workers_loops_clearly_and_they_resume_once_it_is_freed(small_disk, env, tmp_path):
    """Two SQLite-backed workers, each with two loops mid-way; worker A keeps its JSONL
    transcripts on a small tmpfs, worker B on the ordinary disk. A's disk fills up: each of A's
    loops ends in error at its next transcript write, naming the file and ENOSPC, its transcript
    left whole (a record the disk took part of is cut off again); B's loops finish. Once space
    is freed, A's loops are enqueued again with --resume and finish, no tool call run twice."""
    from loopwright.distributed.client import statuses as all_statuses
    from loopwright.stores.jsonl import read_records
    from test_workers import enqueue, loop_flags, marker_lines, script

    project = tmp_path / "project"
    (project / "markers").mkdir(parents=True)
    sides = {"A": (f"sqlite:///{tmp_path / 'a.sqlite'}", small_disk / "home"),
             "B": (f"sqlite:///{tmp_path / 'b.sqlite'}", tmp_path / "home-b")}
    envs = {k: dict(env, LOOPWRIGHT_HOME=str(home)) for k, (_, home) in sides.items()}
    with Simulator(script(4, slow=(0, 1, 2, 3), slow_s=3.0)) as sim, open(tmp_path / "workers.log", "w") as log:
        loops = {}
        for k, (store, _) in sides.items():
            envs[k]["ANTHROPIC_BASE_URL"] = sim.base_url
            for i in ((0, 1) if k == "A" else (2, 3)):
                loops[i] = (k, *enqueue(store, envs[k], project, i))
        workers = [start_worker(store, envs[k], project, log, "--concurrency", "2", "--id", k)
                   for k, (store, _) in sides.items()]
        try:
            try:
                wait_for(lambda: len(marker_lines(project)) == 4, 90, "every loop's tool call")
            except AssertionError as exc:
                raise AssertionError(f"{exc}; markers {marker_lines(project)}; A: {all_statuses(sides['A'][0])}; "
                                     f"B: {all_statuses(sides['B'][0])}\n--- workers.log\n"
                                     + (tmp_path / "workers.log").read_text(errors="replace")[-6000:]) from None
            filler = fill(small_disk)
            wait_for(lambda: set(all_statuses(sides["A"][0]).values()) == {"ERROR"}, 60, "A's loops to fail")
            wait_for(lambda: all_done(sides["B"][0], 2), 60, "B's loops")
            ends = workflow_errors(sides["A"][0])
            for i in (0, 1):
                _, workflow_id, session_id = loops[i]
                status, error = ends[workflow_id]
                transcript = next((small_disk / "home").rglob(f"{session_id}.jsonl"))
                assert f"cannot write the transcript {transcript}" in error and "No space left on device" in error, \
                    error
                records, warnings = read_records(transcript)
                assert warnings == [] and transcript.read_bytes().endswith(b"\n"), warnings
            filler.unlink()  # space freed: the failed loops resume where their transcripts stand
            for i in (0, 1):
                _, _, session_id = loops[i]
                cli(["enqueue", "--store", sides["A"][0], "continue", *loop_flags(i)[1:], "--resume", session_id],
                    envs["A"], project)
            wait_for(lambda: list(all_statuses(sides["A"][0]).values()).count("SUCCESS") == 2, 60,
                     "A's loops after the disk was freed")
        finally:
            for proc in workers:
                stop(proc)
    finished = sum(list(all_statuses(store).values()).count("SUCCESS") for store, _ in sides.values())
    tally("full disk (ENOSPC), resumed", 4, finished, marker_lines(project))
    assert marker_lines(project) == {f"L{i}": 1 for i in range(4)}


@pytest.mark.timeout(180)
def test_a_worker_killed_mid_routine_item_is_replaced_and_each_item_runs_once(env, tmp_path):
    """A routine fired onto a queue (`routine run --once --queue`): its two items run on a lone
    SQLite-backed worker; the worker dies by kill -9 once both tool calls have run, the last
    item mid-way (its answer awaited). A worker started again takes it over: the fire reports both items done,
    the ledger has each done once, and no tool call ran twice. (A routine item killed in a local
    `routine run`: tests/test_routines.py; parallel attempts killed on a worker:
    tests/test_worker_attempts.py.)"""
    import subprocess
    import sys

    from test_workers import marker_lines, script

    project, store = tmp_path / "project", f"sqlite:///{tmp_path / 'dbos.sqlite'}"
    (project / "markers").mkdir(parents=True)
    (project / ".loopwright" / "routines").mkdir(parents=True)
    (project / ".loopwright" / "routines" / "items.yaml").write_text(
        "source: {command: cat items.jsonl}\nprompt: \"go L{id}.\"\nallowed_tools: [Bash]\n")
    (project / "items.jsonl").write_text('{"id": "0"}\n{"id": "1"}\n')
    with Simulator(script(2, slow=(0, 1), slow_s=4.0)) as sim, open(tmp_path / "worker.log", "w") as log:
        env["ANTHROPIC_BASE_URL"] = sim.base_url
        first = start_worker(store, env, project, log, "--concurrency", "2", "--id", "r0")
        fire = subprocess.Popen([sys.executable, "-m", "loopwright", "routine", "run", "items", "--once", "--queue",
                                 "loopwright", "--store", store], env=env, cwd=project, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)
        again = None
        try:
            wait_for(lambda: len(marker_lines(project)) == 2, 90, "both items' tool calls")  # (the last one awaits)
            first.send_signal(signal.SIGKILL)
            assert gone(first.pid, 10)
            again = start_worker(store, env, project, log, "--concurrency", "2", "--id", "r1")
            out, err = fire.communicate(timeout=120)
        finally:
            if fire.poll() is None:
                fire.kill()
            if again is not None:
                stop(again)
    tally("kill -9 mid routine item", 2, out.count(" 2 done,") * 2, marker_lines(project))
    assert "routine items: 2 found, 2 taken, 2 done, 0 failed" in out, (out, err)
    ledger = json.loads(cli(["routine", "items", "items", "--json", "--store", store], env, project))
    assert sorted((i["id"], i["status"], i["tries"]) for i in ledger) == [("0", "done", 1), ("1", "done", 1)], ledger
    assert marker_lines(project) == {"L0": 1, "L1": 1}
    assert re.search(r"r0 is gone; [12] of its loops taken over", (tmp_path / "worker.log").read_text())
