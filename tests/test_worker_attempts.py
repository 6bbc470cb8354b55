"""Parallel attempts on workers, end to end: `loopwright enqueue --attempts N` puts one parent
workflow on the queue; a worker runs each attempt as a child goal loop in its own git worktree
(the simulator plays the attempts, told apart by their approach line, and the judge); the
judge's winner lands once in the project's working tree. A worker killed mid-attempts is
restarted and finishes the run with no tool call run twice (each call appends a line to a marker
file outside the worktrees) and no model call of a finished attempt made again."""

import json
import signal
import subprocess
import sys

import pytest

from loopwright.testing import Simulator
from procs import gone
from test_attempts import aenv, git  # noqa: F401  (aenv is a fixture: the workers' env with a TMPDIR of its own)
from test_workers import cli, env, most_at_once, no_worker_left, start_worker, stop, wait_for  # noqa: F401  (fixtures)

JUDGE = {"system_contains": "reviewer of several independent attempts"}
VERDICT = {"text": json.dumps({"attempts": [{"label": "A", "defects": [], "verdict": "acceptable"}],
                               "winner": "A", "reasons": "its check passes"}), "repeat": -1}


@pytest.fixture
def repo(tmp_path):
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    (repo / "answer.txt").write_text("none\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "start")
    (tmp_path / "markers").mkdir()
    return repo


def attempt_rules(k, markers, word, answer_delay):
    """Attempt k: one Bash call (a marker line outside the worktree, `word` into answer.txt), then
    its answer after `answer_delay` (the window in which a worker is killed)."""
    return [
        {"match": {"last_user_contains": f"[A{k}:S1]"}, "responses": [{"text": f"done A{k}", "delay": answer_delay,
                                                                      "repeat": -1}]},
        {"match": {"last_user_contains": f"approach {k}"}, "responses": [
            {"tool_use": {"name": "Bash", "input": {"command": (f"echo x >> {markers}/A{k}; " if markers else "")
                                                    + f"echo {word} > answer.txt; echo '[A{k}:S1]'"}},
             "delay": 0.2, "repeat": -1}]},
    ]


def script(markers, delays=(0.2, 0.2)):
    """Attempt 1 writes the answer the check wants, attempt 2 another: only 1 is shown to the judge."""
    rules = [{"match": JUDGE, "responses": [VERDICT]}]
    rules += attempt_rules(1, markers, "good", delays[0]) + attempt_rules(2, markers, "bad", delays[1])
    return {"rules": rules}


def enqueue_attempts(store, env, repo, tmp_path):
    ways = tmp_path / "ways.txt"
    ways.write_text("approach 1\napproach 2\n")
    out = cli(["enqueue", "--store", store, "fix answer.txt.", "--attempts", "2", "--attempt-instructions", str(ways),
               "--check", "grep -q good answer.txt", "--allowedTools", "Bash", "--no-sandbox", "--max-turns", "4", "--add-dir", str(tmp_path / "markers")],
              env, repo)
    workflow_id, word, n = out.split()
    assert word == "attempts" and n == "2"
    return workflow_id


def outcome(store, workflow_id):
    from dbos import DBOSClient

    client = DBOSClient(system_database_url=store, application_name="loopwright")
    try:
        found = client.list_workflows(workflow_ids=[workflow_id])
        return (found[0].status, found[0].output) if found else (None, None)
    finally:
        client.destroy()


def status_of(store, workflow_id):
    from loopwright.distributed.client import statuses

    status = statuses(store, [workflow_id], name=None).get(workflow_id)
    assert status not in ("ERROR", "CANCELLED", "MAX_RECOVERY_ATTEMPTS_EXCEEDED"), f"{workflow_id}: {status}"
    return status


def markers(tmp_path):
    return {p.name: p.read_text().count("x") for p in (tmp_path / "markers").iterdir()}


def first_turns(sim, k):
    return [r for r in sim.message_requests if f"approach {k}" in json.dumps(r.body.get("messages", [])[-1:])
            and "[A" not in json.dumps(r.body.get("messages", [])[-1:])]


def check_landed(store, workflow_id, repo, tmp_path):
    status, result = outcome(store, workflow_id)
    assert status == "SUCCESS", result
    assert result["subtype"] == "success" and result["attempts"]["winner"] == 1 and result["attempts"]["applied"]
    rows = {row["attempt"]: row for row in result["attempts"]["attempts"]}
    assert rows[1]["eligible"] and rows[2]["why_not"] == "its checks failed: grep -q good answer.txt"
    assert (repo / "answer.txt").read_text() == "good\n"  # the winner's change, in the project
    assert markers(tmp_path) == {"A1": 1, "A2": 1}  # each attempt's tool call ran once
    assert git(repo, "worktree", "list").count("\n") == 1  # the worktrees are gone
    assert len(git(repo, "branch", "--list", "loopwright/*").split()) == 2  # their branches stay


def test_attempts_enqueued_are_run_by_a_worker_and_the_winner_lands(repo, aenv, tmp_path):
    env = aenv
    store = f"sqlite:///{tmp_path / 'dbos.sqlite'}"
    with Simulator(script(tmp_path / "markers")) as sim, open(tmp_path / "worker.log", "w") as log:
        env["ANTHROPIC_BASE_URL"] = sim.base_url
        workflow_id = enqueue_attempts(store, env, repo, tmp_path)
        worker = start_worker(store, env, repo, log)
        try:
            wait_for(lambda: status_of(store, workflow_id) == "SUCCESS", 120, "the attempts")
        finally:
            stop(worker)
        judged = [r for r in sim.message_requests if "reviewer of several" in json.dumps(r.body.get("system"))]
    check_landed(store, workflow_id, repo, tmp_path)
    assert len(judged) == 1
    assert {status_of(store, f"{workflow_id}-a{k}") for k in (1, 2)} == {"SUCCESS"}  # the child workflows
    assert not sim.unmatched, (tmp_path / "worker.log").read_text()
    listed = json.loads(cli(["sessions", "--all", "--json"], env, repo))  # each attempt's session says so
    assert sorted((r["attempt"]["number"], r["attempt"]["of"], r["attempt"]["run"]) for r in listed if r["attempt"]) == [
        (1, 2, workflow_id), (2, 2, workflow_id)]


def loops_of(store):
    """The executions of goal loops (the attempts; a run of attempts has no session of its own)."""
    from loopwright.distributed.registry import Registry

    reg = Registry(store)
    try:
        return [e for e in reg.executions() if e.session_id]
    finally:
        reg.close()


def test_each_attempt_counts_as_one_loop_against_the_concurrency(repo, aenv, tmp_path):
    """A worker of --concurrency 1 runs a run of 2 attempts one attempt at a time (the run itself,
    waiting for them, takes no slot: it would leave none for its attempts)."""
    env = aenv
    store = f"sqlite:///{tmp_path / 'dbos.sqlite'}"
    with Simulator(script(tmp_path / "markers")) as sim, open(tmp_path / "worker.log", "w") as log:
        env["ANTHROPIC_BASE_URL"] = sim.base_url
        workflow_id = enqueue_attempts(store, env, repo, tmp_path)
        worker = start_worker(store, env, repo, log, "--concurrency", "1")
        try:
            wait_for(lambda: status_of(store, workflow_id) == "SUCCESS", 120, "the attempts")
        finally:
            stop(worker)
    check_landed(store, workflow_id, repo, tmp_path)
    attempts = loops_of(store)
    assert sorted(e.workflow_id for e in attempts) == [f"{workflow_id}-a1", f"{workflow_id}-a2"]
    assert most_at_once(attempts) == 1
    assert not sim.unmatched


@pytest.mark.timeout(300)
def test_a_recovered_attempt_waits_for_a_busy_survivor(repo, aenv, tmp_path, pg_db):
    """Two workers of --concurrency 1 each run one attempt; the one running attempt 2 is killed
    while the other still runs attempt 1: attempt 2 goes back on the queue and the survivor takes
    it once attempt 1 is done, never two at once, and carries it on from its recorded steps."""
    env, store = aenv, pg_db
    with Simulator(script(tmp_path / "markers", delays=(8.0, 8.0))) as sim, \
            open(tmp_path / "worker.log", "w") as log:
        env["ANTHROPIC_BASE_URL"] = sim.base_url
        workflow_id = enqueue_attempts(store, env, repo, tmp_path)
        workers = {name: start_worker(store, env, repo, log, "--concurrency", "1", "--id", name)
                   for name in ("w0", "w1")}
        try:
            wait_for(lambda: markers(tmp_path) == {"A1": 1, "A2": 1}, 60, "both attempts' tool calls")
            victim = running(store, f"{workflow_id}-a2")
            survivor = next(name for name in workers if name != victim)
            assert running(store, f"{workflow_id}-a1") == survivor  # one attempt each: the survivor is busy
            workers[victim].send_signal(signal.SIGKILL)
            assert gone(workers[victim].pid, 10)
            wait_for(lambda: status_of(store, workflow_id) == "SUCCESS", 120, "the attempts after the kill")
        finally:
            for proc in workers.values():
                if proc.poll() is None:
                    stop(proc)
        assert len(first_turns(sim, 1)) == 1 and len(first_turns(sim, 2)) == 1  # no attempt began again
    check_landed(store, workflow_id, repo, tmp_path)
    attempts = loops_of(store)
    assert most_at_once([e for e in attempts if e.executor_id == survivor]) == 1
    assert finisher(store, f"{workflow_id}-a2") == survivor
    assert not sim.unmatched


@pytest.mark.parametrize("kind", ["sqlite-restart", "pg-survivor"])
def test_a_worker_killed_mid_attempts_is_replaced_and_nothing_runs_twice(kind, repo, aenv, tmp_path, request):
    """Attempt 1 has finished and attempt 2 waits for its answer when the worker running them dies;
    a restarted worker (SQLite) or the surviving one (PostgreSQL) replays attempt 1 from its
    record, carries attempt 2 on, then judges and lands once."""
    env = aenv
    store = f"sqlite:///{tmp_path / 'dbos.sqlite'}" if kind == "sqlite-restart" else request.getfixturevalue("pg_db")
    with Simulator(script(tmp_path / "markers", delays=(0.2, 4.0))) as sim, \
            open(tmp_path / "worker.log", "w") as log:
        env["ANTHROPIC_BASE_URL"] = sim.base_url
        workflow_id = enqueue_attempts(store, env, repo, tmp_path)
        names = ["w0"] if kind == "sqlite-restart" else ["w0", "w1"]
        workers = {name: start_worker(store, env, repo, log, "--id", name) for name in names}
        try:
            wait_for(lambda: status_of(store, f"{workflow_id}-a1") == "SUCCESS" and "A2" in markers(tmp_path), 60,
                     "attempt 1 to finish while attempt 2 waits")
            victim = running(store, workflow_id)
            workers[victim].send_signal(signal.SIGKILL)
            assert gone(workers[victim].pid, 10)
            if kind == "sqlite-restart":
                workers["w2"] = start_worker(store, env, repo, log, "--id", "w2")
            wait_for(lambda: status_of(store, workflow_id) == "SUCCESS", 120, "the attempts after the kill")
        finally:
            for proc in workers.values():
                if proc.poll() is None:
                    stop(proc)
        assert len(first_turns(sim, 1)) == 1 and len(first_turns(sim, 2)) == 1  # no attempt began again
        answers_of_1 = [r for r in sim.message_requests if "[A1:S1]" in json.dumps(r.body.get("messages", [])[-1:])]
        assert len(answers_of_1) == 1  # the finished attempt replayed from its record
    check_landed(store, workflow_id, repo, tmp_path)
    assert finisher(store, workflow_id) != victim
    assert not sim.unmatched
    assert f"{victim} is gone; " in (tmp_path / "worker.log").read_text()


def running(store, workflow_id):
    """The worker running `workflow_id` now."""
    from loopwright.distributed.registry import Registry

    reg = Registry(store)
    try:
        return next(e.executor_id for e in reg.executions(running_only=True) if e.workflow_id == workflow_id)
    finally:
        reg.close()


def finisher(store, workflow_id):
    from loopwright.distributed.registry import Registry

    reg = Registry(store)
    try:
        return next(e.executor_id for e in reg.executions() if e.workflow_id == workflow_id and e.status == "done")
    finally:
        reg.close()


def test_a_routine_of_attempts_fired_onto_a_queue_runs_as_one_workflow(repo, aenv, tmp_path):
    env, store = aenv, f"sqlite:///{tmp_path / 'dbos.sqlite'}"
    (repo / ".loopwright" / "routines").mkdir(parents=True)
    (repo / ".loopwright" / "routines" / "tries.yaml").write_text(
        'source: {command: cat items.jsonl}\ngoal: "answer.txt says good for {id}."\n'
        'check: "grep -q good answer.txt"\nattempts: 2\nattempt_instructions: ways.txt\n'
        "allowed_tools: [Bash]\nsandbox: false\n")
    (repo / "items.jsonl").write_text('{"id": "one"}\n')
    (repo / "ways.txt").write_text("approach 1\napproach 2\n")
    evaluator = {"match": {"system_contains": "You decide whether an agent has met its goal"},
                 "responses": [{"text": json.dumps({"ok": True, "reason": "it says good"}), "repeat": -1}]}
    rules = [{"match": JUDGE, "responses": [VERDICT]}, evaluator]
    rules += attempt_rules(1, None, "good", 0.2) + attempt_rules(2, None, "good", 0.2)
    with Simulator({"rules": rules}) as sim, open(tmp_path / "worker.log", "w") as log:
        env["ANTHROPIC_BASE_URL"] = sim.base_url
        worker = start_worker(store, env, repo, log)
        try:
            fire = subprocess.run([sys.executable, "-m", "loopwright", "routine", "run", "tries", "--once", "--queue",
                                   "loopwright", "--store", store], env=env, cwd=repo, capture_output=True, text=True,
                                  timeout=180)
        finally:
            stop(worker)
    assert "routine tries: 1 found, 1 taken, 1 done, 0 failed" in fire.stdout, fire.stderr
    ledger = json.loads(cli(["routine", "items", "tries", "--json", "--store", store], env, repo))
    assert [(i["status"], i["tries"]) for i in ledger] == [("done", 1)]
    parent = f"item-{ledger[0]['session_id']}"
    status, result = outcome(store, parent)
    assert status == "SUCCESS" and result["attempts"]["applied"] and result["attempts"]["winner"] in (1, 2)
    assert {status_of(store, f"{parent}-a{k}") for k in (1, 2)} == {"SUCCESS"}
    assert (repo / "answer.txt").read_text() == "good\n"
    assert not sim.unmatched
