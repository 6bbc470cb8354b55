"""A killed worker's tool processes do not live on. A lone SQLite-backed worker runs a loop whose
Bash command appends to a file every 50 ms (in the foreground, or as a background shell; under
the sandbox and with --no-sandbox); the worker dies by kill -9 mid-command. Its command dies with
it (the parent-death signal): the file stops growing at once and the command's pid is gone. A
command that leaves writers the signal cannot reach (a subshell in its group, a child in a
session of its own) has them ended by the next worker before it takes the loop over. Either
way the loop is then finished by the next worker, its interrupted call never run again."""

import json
import os
import signal
from pathlib import Path

import pytest

from loopwright.sandbox.bwrap import availability
from loopwright.testing import Simulator
from procs import gone
from test_lifeline import size, wait_growing, wait_stable
from test_workers import JUDGE, all_done, cli, env, no_worker_left, start_worker, stop, wait_for  # noqa: F401

WRITE = "while :; do echo x >> {out}; sleep 0.05; done"


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
                assert out.read_text().count("start") == 1  # the cut-off call was not run again
                assert "Outcome unknown" in json.dumps(sim.message_requests[-1].body)
    finally:
        cleanup(token)


@pytest.mark.timeout(240)
def test_the_next_worker_ends_what_the_signal_cannot_reach_before_it_takes_over(project, env, tmp_path):
    """--no-sandbox (under the sandbox its PID namespace ends them all): the command starts a
    subshell writer in its own process group and a writer in a session of its own (setsid). The
    parent-death signal ends the shell only; both writers keep writing until the next worker
    takes over, which kills them (by the recorded group, and by its mark) before the loop goes on."""
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
            pids = pids_running(token)
            wait_growing(in_group)  # nobody has ended them yet: the signal reached the shell only
            wait_growing(escaped)
            finish_after_restart(store, env, project, log)
            assert wait_stable(in_group) and wait_stable(escaped)
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


# Found by this test, not fixed yet: a loop whose transcript write meets the restart ends in
# error ("cannot write the transcript …: terminating connection due to administrator command")
# instead of retrying, so not every loop finishes. It waits out its bound when it fails (~4 min),
# so it runs only when asked for (LOOPWRIGHT_TEST_PG_RESTART=1).
@pytest.mark.skipif(os.environ.get("LOOPWRIGHT_TEST_PG_RESTART") != "1", reason="set LOOPWRIGHT_TEST_PG_RESTART=1")
@pytest.mark.xfail(strict=True, reason="the session store does not retry a write cut off by a database restart")
@pytest.mark.timeout(300)
def test_loops_on_two_workers_survive_a_database_restart(own_cluster, env, tmp_path):
    """pg_ctl restart while four loops run on two workers, each loop mid-way (its tool call done,
    its answer awaited): every loop finishes, and no tool call ran twice."""
    from test_workers import loop_number, marker_lines, registry, script, enqueue

    store = own_cluster.create_database("restart")
    project = tmp_path / "project"
    (project / "markers").mkdir(parents=True)
    with Simulator(script(4, slow=(0, 1, 2, 3), slow_s=6.0)) as sim, open(tmp_path / "workers.log", "w") as log:
        env["ANTHROPIC_BASE_URL"] = sim.base_url
        for i in range(4):  # all queued first: each worker takes two
            enqueue(store, env, project, i)
        workers = [start_worker(store, env, project, log, "--concurrency", "2", "--id", f"p{k}") for k in range(2)]
        try:
            reg = registry(store)

            def mid_loop():  # loops whose tool call ran and whose answer is awaited, on both workers
                running = reg.executions(running_only=True)
                done = marker_lines(project)
                return {e.executor_id for e in running if done.get(f"L{loop_number(e)}")} == {"p0", "p1"}
            wait_for(mid_loop, 120, "both workers to be mid-loop")
            reg.close()
            own_cluster.restart()
            wait_for(lambda: all_done(store, 4), 180, "every loop after the restart")
        finally:
            for proc in workers:
                if proc.poll() is None:
                    stop(proc)
    assert marker_lines(project) == {f"L{i}": 1 for i in range(4)}
