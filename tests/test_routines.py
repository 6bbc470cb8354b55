"""Proactive routines end to end: real `loopwright routine …` processes against the simulator, real
routine files, sources, marker files written by real Bash calls, and the ledger they leave."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from loopwright.session import UNKNOWN_OUTCOME
from loopwright.testing import Simulator


def env_for(tmp_path, sim=None):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "LOOPWRIGHT_"))}
    env.update(ANTHROPIC_API_KEY="sk-test", LOOPWRIGHT_HOME=str(tmp_path / "home"), HOME=str(tmp_path / "fakehome"))
    if sim is not None:
        env["ANTHROPIC_BASE_URL"] = sim.base_url
    return env


def cli(args, tmp_path, sim=None):
    return subprocess.run([sys.executable, "-m", "loopwright", *args], cwd=tmp_path / "project",
                          env=env_for(tmp_path, sim), capture_output=True, text=True, timeout=90)


def project(tmp_path, name, text):
    root = tmp_path / "project"
    (root / ".loopwright" / "routines").mkdir(parents=True, exist_ok=True)
    (root / ".loopwright" / "routines" / f"{name}.yaml").write_text(text)
    return root


def items(tmp_path, name):
    out = cli(["routine", "items", name, "--json"], tmp_path)
    assert out.returncode == 0, out.stderr
    return {i["id"]: i for i in json.loads(out.stdout)}


def bash(command):
    return {"name": "Bash", "input": {"command": command}}


COMMAND_ROUTINE = """\
source:
  command: cat items.jsonl
prompt: "Handle report {id}: {title}"
allowed_tools: [Bash]
sandbox: false
"""


def test_command_items_run_once_across_two_fires(tmp_path):
    root = project(tmp_path, "triage", COMMAND_ROUTINE)
    (root / "items.jsonl").write_text('{"id": "r1", "title": "crash on start"}\n{"id": 2, "title": "typo"}\n')
    script = [{"tool_use": bash("echo r1 >> marks.txt")}, {"text": "r1 fixed"}, {"text": "2 is not a bug"}]
    with Simulator(script) as sim:
        first = cli(["routine", "run", "triage", "--once"], tmp_path, sim)
        second = cli(["routine", "run", "triage", "--once"], tmp_path, sim)
        requests = len(sim.message_requests)
    assert first.returncode == 0 and second.returncode == 0, first.stderr + second.stderr
    assert "routine triage: 2 found, 2 taken, 2 done, 0 failed, spend $" in first.stdout
    assert "routine triage: 2 found, 0 taken, 0 done, 0 failed, spend $0.0000" in second.stdout
    assert requests == 3 and (root / "marks.txt").read_text() == "r1\n"
    ledger = items(tmp_path, "triage")
    assert {k: (v["status"], v["tries"]) for k, v in ledger.items()} == {"r1": ("done", 1), "2": ("done", 1)}
    assert ledger["r1"]["outcome"] == "r1 fixed" and ledger["r1"]["cost_usd"] > 0 and ledger["r1"]["session_id"]


JUDGE = {"system_contains": "You decide whether an agent has met its goal"}


def test_folder_items_run_as_goals_and_a_changed_file_is_a_new_item(tmp_path):
    root = project(tmp_path, "inbox", """\
every: 1h
source: {folder: inbox}
goal: "The report in {path} is answered (it says: {content})"
check: test -s answered.txt
allowed_tools: [Bash]
sandbox: false
""")
    (root / "inbox").mkdir()
    (root / "inbox" / "a.txt").write_text("the app crashes")
    (root / "inbox" / "b.txt").write_text("a typo")
    worker = [{"tool_use": bash("echo answered >> answered.txt")}, {"text": "answered"}]
    ok = {"text": json.dumps({"ok": True, "reason": "the check passes and the report is answered"})}
    script = {"rules": [{"match": JUDGE, "responses": [{**ok, "repeat": -1}]}, {"responses": worker * 3}]}
    with Simulator(script) as sim:
        first = cli(["routine", "run", "inbox", "--once"], tmp_path, sim)
        (root / "inbox" / "b.txt").write_text("a typo, and another")
        second = cli(["routine", "run", "inbox", "--once"], tmp_path, sim)
        worked = [r.body for r in sim.message_requests if "met its goal" not in str(r.body.get("system", ""))]
        unmatched = sim.unmatched
    assert first.returncode == 0 and second.returncode == 0, first.stderr + second.stderr
    assert unmatched == []
    assert "routine inbox: 2 found, 2 taken, 2 done, 0 failed" in first.stdout
    assert "routine inbox: 2 found, 1 taken, 1 done, 0 failed" in second.stdout  # only the changed file
    assert "The report in inbox/a.txt is answered (it says: the app crashes)" in json.dumps(worked[0])
    assert "a typo, and another" in json.dumps(worked[-2])
    ledger = items(tmp_path, "inbox")
    assert len(ledger) == 3 and all(i["status"] == "done" for i in ledger.values())
    assert sorted(k.split("#")[0] for k in ledger) == ["inbox/a.txt", "inbox/b.txt", "inbox/b.txt"]


def test_a_failed_item_is_retried_on_a_later_fire_then_given_up(tmp_path):
    project(tmp_path, "flaky", """\
source: {command: 'echo ''{"id": "x1"}'''}
prompt: "Do {id}"
allowed_tools: [Bash]
sandbox: false
retry_failed: 1
limits: {item: {max_turns: 1}}
""")
    with Simulator([{"tool_use": bash("echo try >> tries.txt"), "repeat": -1}]) as sim:
        fires = [cli(["routine", "run", "flaky", "--once"], tmp_path, sim) for _ in range(3)]
        requests = len(sim.message_requests)
    assert [f.returncode for f in fires] == [0, 0, 0], fires[0].stderr
    assert [f.stdout.split(", spend")[0] for f in fires] == [
        "routine flaky: 1 found, 1 taken, 0 done, 1 failed", "routine flaky: 1 found, 1 taken, 0 done, 1 failed",
        "routine flaky: 1 found, 0 taken, 0 done, 0 failed"]
    assert requests == 2 and (tmp_path / "project" / "tries.txt").read_text() == "try\ntry\n"
    (row,) = items(tmp_path, "flaky").values()
    assert row["status"] == "failed" and row["tries"] == 2
    assert "maximum number of turns (1)" in row["outcome"] and row["outcome"].endswith("(given up after 2 tries)")


def test_kill_9_mid_item_then_the_next_run_resumes_its_session_and_runs_no_tool_twice(tmp_path):
    root = project(tmp_path, "long", COMMAND_ROUTINE)
    (root / "items.jsonl").write_text('{"id": "k1", "title": "slow one"}\n')
    first = [{"tool_use": bash("echo a >> marks.txt")},
             {"tool_use": bash("echo b >> marks.txt; echo $$ > tool.pid; sleep 30")}]
    with Simulator(first) as sim:
        proc = subprocess.Popen([sys.executable, "-m", "loopwright", "routine", "run", "long", "--once"], cwd=root,
                                env=env_for(tmp_path, sim), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        deadline = time.monotonic() + 60
        while not ((root / "tool.pid").exists() and (root / "tool.pid").read_text().strip()):
            assert time.monotonic() < deadline and proc.poll() is None, proc.communicate()
            time.sleep(0.02)
        os.kill(proc.pid, signal.SIGKILL)
        proc.communicate(timeout=10)
    os.killpg(int((root / "tool.pid").read_text()), signal.SIGKILL)  # the orphaned `sleep` of the killed run
    (before,) = items(tmp_path, "long").values()
    assert before["status"] == "running" and before["tries"] == 1

    with Simulator([{"text": "checked: both steps ran; finished"}]) as sim:
        second = cli(["routine", "run", "long", "--once"], tmp_path, sim)
        requests = [r.body for r in sim.message_requests]
    assert second.returncode == 0, second.stderr
    assert "k1: its process died mid-run; resuming its session" in second.stderr
    assert "routine long: 1 found, 1 taken, 1 done, 0 failed" in second.stdout
    assert (root / "marks.txt").read_text() == "a\nb\n"  # every Bash call ran exactly once
    (after,) = items(tmp_path, "long").values()
    assert after["status"] == "done" and after["tries"] == 1 and after["session_id"] == before["session_id"]
    sent = json.dumps(requests[0]["messages"])
    assert "Handle report k1: slow one" in sent and json.dumps(UNKNOWN_OUTCOME.format(name="Bash"))[1:-1] in sent
    assert "This run was interrupted" in sent


THREE = """\
source: {command: cat items.jsonl}
prompt: "Do {id}"
sandbox: false
"""


def three(tmp_path, name, more):
    root = project(tmp_path, name, THREE + more)
    (root / "items.jsonl").write_text('{"id": "a"}\n{"id": "b"}\n{"id": "c"}\n')
    return root


def test_a_fire_takes_at_most_max_items_and_the_next_fire_takes_the_rest(tmp_path):
    three(tmp_path, "some", "limits: {fire: {max_items: 2}}\n")
    with Simulator([{"text": "done", "repeat": -1}]) as sim:
        first = cli(["routine", "run", "some", "--once"], tmp_path, sim)
        second = cli(["routine", "run", "some", "--once"], tmp_path, sim)
    assert "routine some: 3 found, 2 taken, 2 done, 0 failed, 1 left for a later fire" in first.stdout, first.stderr
    assert "stopped taking items: the fire's limit of 2 item(s) was reached" in first.stderr
    assert "routine some: 3 found, 1 taken, 1 done, 0 failed" in second.stdout
    assert {i["status"] for i in items(tmp_path, "some").values()} == {"done"}


def test_a_fire_budget_stops_taking_items_once_spent(tmp_path):
    three(tmp_path, "budget", "limits: {fire: {max_budget_usd: 0.006}}\n")
    with Simulator([{"text": "done", "repeat": -1}]) as sim:
        first = cli(["routine", "run", "budget", "--once"], tmp_path, sim)
    assert first.returncode == 0, first.stderr
    # a is done ($0.0042 of $0.006): b is taken with what is left; then the budget is spent and c waits
    assert "routine budget: 3 found, 2 taken, 2 done, 0 failed, 1 left for a later fire" in first.stdout
    assert "stopped taking items: the fire's budget of $0.006 was spent" in first.stderr
    assert [i["status"] for i in items(tmp_path, "budget").values()] == ["done", "done", "pending"]


def test_an_item_over_its_own_budget_fails_and_the_others_still_run(tmp_path):
    three(tmp_path, "dear", "allowed_tools: [Bash]\nlimits: {item: {max_budget_usd: 0.005}}\n")
    script = {"rules": [{"match": {"last_user_contains": "Do a"}, "responses": [{"text": "a is easy"}]},
                        {"match": {"last_user_contains": "Do c"}, "responses": [{"text": "c is easy"}]},
                        {"responses": [{"tool_use": bash("echo more >> b.txt"), "repeat": -1}]}]}
    with Simulator(script) as sim:
        out = cli(["routine", "run", "dear", "--once"], tmp_path, sim)
    assert "routine dear: 3 found, 3 taken, 2 done, 1 failed" in out.stdout, out.stderr
    ledger = items(tmp_path, "dear")
    assert [ledger[k]["status"] for k in "abc"] == ["done", "failed", "done"]
    assert "budget" in ledger["b"]["outcome"] and ledger["b"]["cost_usd"] >= 0.005
