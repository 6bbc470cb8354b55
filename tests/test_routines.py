"""Proactive routines end to end: real `loopwright routine …` processes against the simulator, real
routine files, sources, marker files written by real Bash calls, and the ledger they leave."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from procs import kill_mid_tool

from loopwright.session import UNKNOWN_OUTCOME
from loopwright.testing import Simulator
from storekinds import any_store  # noqa: F401  (a fixture)


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
    assert "routine triage: 2 found, 0 taken, 0 done, 0 failed, 2 already done, spend $0.0000" in second.stdout
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
        kill_mid_tool(["routine", "run", "long", "--once"], root, env_for(tmp_path, sim), root / "tool.pid")
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


def test_malformed_lines_and_missing_fields_are_skipped_with_reasons_the_rest_run_and_all_are_reported(tmp_path):
    root = project(tmp_path, "mixed", """\
source: {command: cat items.jsonl}
prompt: "Answer {id} about {topic}"
sandbox: false
report: cat >> outcomes.jsonl
""")
    (root / "items.jsonl").write_text('{"id": "ok1", "topic": "login"}\nnot json at all\n{"title": "no id"}\n'
                                      '{"id": "ok2", "topic": "billing"}\n{"id": "bare"}\n[1, 2]\n')
    with Simulator([{"text": "answered", "repeat": -1}]) as sim:
        first = cli(["routine", "run", "mixed", "--once"], tmp_path, sim)
        second = cli(["routine", "run", "mixed", "--once"], tmp_path, sim)
        requests = len(sim.message_requests)
    assert first.returncode == 0, first.stderr
    assert "routine mixed: 3 found, 2 taken, 2 done, 0 failed, 4 skipped" in first.stdout
    assert requests == 2 and "0 taken" in second.stdout
    assert "skipped: line 2: not JSON" in first.stderr and "line 3: no `id` field" in first.stderr
    ledger = items(tmp_path, "mixed")
    assert ledger["ok1"]["status"] == ledger["ok2"]["status"] == "done"
    assert ledger["bare"]["status"] == "skipped"
    assert ledger["bare"]["outcome"] == "the prompt names {topic}, which this item does not have (its fields: id)"
    skipped = sorted(v["outcome"] for k, v in ledger.items() if k.startswith("malformed:"))
    assert len(skipped) == 3 and skipped[0].startswith("line 2: not JSON")
    assert skipped[1] == 'line 3: no `id` field (each item needs one: a string or a number): {"title": "no id"}'
    assert skipped[2] == "line 6: expected a JSON object with an `id`, got list: [1, 2]"
    reported = [json.loads(line) for line in (root / "outcomes.jsonl").read_text().splitlines()]
    assert [(o["item_id"], o["status"], o["outcome"]) for o in reported] == [("ok1", "done", "answered"),
                                                                             ("ok2", "done", "answered")]
    assert reported[0]["item"] == {"id": "ok1", "topic": "login"} and reported[0]["session_id"]
    assert reported[0]["cost_usd"] > 0 and reported[0]["routine"] == "mixed" and reported[0]["tries"] == 1


def test_dry_run_lists_what_a_fire_would_take_and_runs_nothing(tmp_path):
    root = three(tmp_path, "peek", "limits: {fire: {max_items: 2}}\n")
    with Simulator([{"text": "done", "repeat": -1}]) as sim:
        cli(["routine", "run", "peek", "--once"], tmp_path, sim)
        with (root / "items.jsonl").open("a") as f:
            f.write('{"id": "d"}\n{"id": "e"}\n')
        out = cli(["routine", "run", "peek", "--dry-run"], tmp_path, sim)
        requests = len(sim.message_requests)
    assert out.returncode == 0 and requests == 2, out.stderr
    assert out.stdout.splitlines() == ["routine peek: 5 found; would take 2", "  c", "  d"]
    assert [i["status"] for i in items(tmp_path, "peek").values()] == ["done", "done", "pending"]  # d, e unrecorded


@pytest.mark.parametrize("text, needle", [
    ("prompt: hi\n", "source: expected a mapping with one key, `command:` (prints items as JSON lines), "
                     "`folder:` (each file an item) or `http: true` (items POSTed to `loopwright serve`)"),
    ("source: {command: x}\n", "prompt: expected exactly one of `prompt:` or `goal:`"),
    ("source: {command: x}\nprompt: a\ngoal: b\n", "prompt: expected exactly one of `prompt:` or `goal:`"),
    ("source: {web: x}\nprompt: a\n", "source: expected a mapping with one key"),
    ("source: {command: x}\nprompt: a\nevery: sometimes\n", "every: expected an interval such as 5m, 2h or 1d, "
                                                            "got 'sometimes'"),
    ("source: {command: x}\nprompt: a\ncron: 61 * * * *\n", "cron: the minute field '61'"),
    ("source: {command: x}\nprompt: 'Do {item.name}'\n", "prompt: expected placeholders that are plain field "
                                                         "names such as {id} or {title}, got '{item.name}'"),
    ("source: {command: x}\nprompt: a\nlimits: {item: {max_turns: 0}}\n",
     "limits.item.max_turns: expected a whole number of at least 1, got 0"),
    ("source: {command: x}\nprompt: a\nlimits: {fire: {max_budget: 1}}\n",
     "limits.fire.max_budget: expected one of the keys max_items, max_budget_usd"),
    ("source: {command: x}\nprompt: a\nconcurency: 2\n", "concurency: expected one of the keys every, cron"),
    ("source: {command: x}\nprompt: a\ncheck: pytest\n", "check: expected a `goal:`"),
    ("source: {command: x}\nprompt: a\npermission_mode: yolo\n", "permission_mode: expected one of default,"),
    ("source: [x\n", "not YAML"),
    ("source: {command: x}\nprompt: a\nattempts: 9\n", "attempts: expected a whole number from 1 to 8, got 9"),
    ("source: {command: x}\nprompt: a\nskill: 'fix bug'\n", "skill: expected a skill's name such as fix-bug"),
    ("source: {command: x}\nprompt: a\nattempt_instructions: ways.txt\n",
     "attempt_instructions: expected `attempts:` of 2 or more"),
    ("source: {http: 1}\nprompt: a\n", "source.http: expected true (items are POSTed to `loopwright serve`"),
])
def test_a_bad_routine_file_is_an_error_naming_the_file_and_key(tmp_path, text, needle):
    root = project(tmp_path, "bad", text)
    out = cli(["routine", "run", "bad", "--once"], tmp_path)
    assert out.returncode == 2 and out.stdout == ""
    lines = out.stderr.strip().splitlines()
    assert lines[0].startswith(f"loopwright: error: {root / '.loopwright' / 'routines' / 'bad.yaml'}: ")
    assert needle in out.stderr, out.stderr
    if "not YAML" not in needle:
        assert len(lines) == 1, out.stderr


def test_every_problem_of_a_routine_file_at_once_with_the_key_meant(tmp_path):
    # before: only the first problem, and an unknown key listed all keys with no hint
    root = project(tmp_path, "bad", "source: {command: x}\npromt: a\nevery: sometimes\nconcurrency: 0\n"
                                    "permission_mode: yolo\n")
    out = cli(["routine", "run", "bad", "--once"], tmp_path)
    assert out.returncode == 2
    path = root / ".loopwright" / "routines" / "bad.yaml"
    lines = out.stderr.strip().splitlines()
    assert lines[0].startswith(f"loopwright: error: {path}: ")
    text = out.stderr
    assert "promt: expected one of the keys" in text and "(did you mean `prompt:`?)" in text
    assert "every: expected an interval such as 5m" in text
    assert "concurrency: expected a whole number of at least 1, got 0" in text
    assert "permission_mode: expected one of default," in text
    assert "prompt: expected exactly one of `prompt:` or `goal:`" in text
    assert len(lines) == 5, text


def test_a_routine_file_that_is_not_yaml_keeps_the_caret_under_the_spot(tmp_path):
    project(tmp_path, "bad", "source: {command: x}\nprompt: [a\n")
    out = cli(["routine", "run", "bad", "--once"], tmp_path)
    assert out.returncode == 2 and "not YAML:" in out.stderr
    lines = out.stderr.splitlines()
    caret = next(i for i, line in enumerate(lines) if line.strip() == "^")
    assert "line" in " ".join(lines[:caret]) and lines[caret - 1].strip(), out.stderr


def test_list_show_pause_and_rm(tmp_path):
    three(tmp_path, "tidy", "every: 2h\n")
    (tmp_path / "project" / ".loopwright" / "routines" / "broken.yaml").write_text("prompt: x\n")
    with Simulator([{"text": "done", "repeat": -1}]) as sim:
        cli(["routine", "run", "tidy", "--once"], tmp_path, sim)
    listed = cli(["routine", "list"], tmp_path).stdout.splitlines()
    assert listed[0].startswith("broken  invalid: ") and "source: expected" in listed[0]
    assert listed[1] == "tidy  0 */2 * * *    command: cat items.jsonl  done 3"
    assert cli(["routine", "pause", "tidy"], tmp_path).returncode == 0
    shown = cli(["routine", "show", "tidy"], tmp_path).stdout
    assert "trigger: 0 */2 * * *" in shown and "items: 3 done" in shown and "paused:" in shown
    assert cli(["routine", "resume", "tidy"], tmp_path).returncode == 0
    assert "paused" not in cli(["routine", "show", "tidy"], tmp_path).stdout
    assert cli(["routine", "rm", "tidy"], tmp_path).returncode == 0
    gone = cli(["routine", "show", "tidy"], tmp_path)
    assert gone.returncode == 2 and "no routine 'tidy': expected a file .loopwright/routines/tidy.yaml" in gone.stderr


def test_the_scheduler_fires_an_added_routine_beside_schedules(tmp_path):
    three(tmp_path, "hourly", "every: 1h\n")
    with Simulator([{"text": "done", "repeat": -1}]) as sim:
        added = cli(["routine", "add", "hourly", "--now"], tmp_path)
        assert added.returncode == 0, added.stderr
        served = cli(["scheduler", "--once"], tmp_path, sim)
        again = cli(["scheduler", "--once"], tmp_path, sim)  # the next fire is an hour away
        requests = len(sim.message_requests)
    assert "loopwright: routine hourly (0 * * * *) fires next at " in added.stderr
    assert served.returncode == 0 and again.returncode == 0, served.stderr
    assert "1 routine(s)" in served.stderr and "▶ routine hourly" in served.stdout
    assert "■ routine hourly: 3 found, 3 taken, 3 done, 0 failed" in served.stdout
    assert requests == 3 and "routine hourly" not in again.stdout
    assert "scheduler: next fire at " in cli(["routine", "show", "hourly"], tmp_path).stdout
    refused = cli(["routine", "add", "nope"], tmp_path)
    assert refused.returncode == 2 and "no routine 'nope'" in refused.stderr


def test_two_runs_at_once_take_each_item_once(tmp_path):
    root = project(tmp_path, "pair", "source: {command: cat items.jsonl}\nprompt: \"Do {id}\"\nsandbox: false\n"
                                     "concurrency: 2\n")
    (root / "items.jsonl").write_text("".join(f'{{"id": "i{n}"}}\n' for n in range(6)))
    with Simulator([{"text": "done", "delay": 0.2, "repeat": -1}]) as sim:
        procs = [subprocess.Popen([sys.executable, "-m", "loopwright", "routine", "run", "pair", "--once"], cwd=root,
                                  env=env_for(tmp_path, sim), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                  text=True) for _ in range(2)]
        outs = [p.communicate(timeout=90) for p in procs]
        requests = len(sim.message_requests)
    assert [p.returncode for p in procs] == [0, 0], outs
    taken = [int(out.split(" taken")[0].rsplit(", ", 1)[1]) for out, _ in outs]
    assert sum(taken) == 6 and requests == 6
    assert {(i["status"], i["tries"]) for i in items(tmp_path, "pair").values()} == {("done", 1)}


def wait_for_file(path, proc, timeout=60.0):
    deadline = time.monotonic() + timeout
    while not (path.exists() and path.read_text().strip()):
        assert time.monotonic() < deadline and proc.poll() is None, proc.communicate()
        time.sleep(0.02)


SLOW = [{"tool_use": bash("echo a >> marks.txt")},
        {"tool_use": bash("echo b >> marks.txt; echo $$ > tool.pid; sleep 30")}]


def test_ctrl_c_interrupts_an_item_and_the_next_fire_resumes_it(tmp_path):
    root = project(tmp_path, "calm", COMMAND_ROUTINE)
    (root / "items.jsonl").write_text('{"id": "c1", "title": "slow"}\n{"id": "c2", "title": "later"}\n')
    with Simulator(SLOW) as sim:
        proc = subprocess.Popen([sys.executable, "-m", "loopwright", "routine", "run", "calm", "--once"], cwd=root,
                                env=env_for(tmp_path, sim), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        wait_for_file(root / "tool.pid", proc)
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=30)
    assert proc.returncode == 130, err
    assert "routine calm: 2 found, 1 taken, 0 done, 0 failed, 1 interrupted" in out
    ledger = items(tmp_path, "calm")
    assert ledger["c1"]["status"] == "interrupted" and ledger["c2"]["status"] == "pending"
    with Simulator([{"text": "c1 finished"}, {"text": "c2 finished"}]) as sim:
        again = cli(["routine", "run", "calm", "--once"], tmp_path, sim)
    assert "routine calm: 2 found, 2 taken, 2 done, 0 failed" in again.stdout, again.stderr
    assert "c1: resuming session " + ledger["c1"]["session_id"] in again.stderr
    assert (root / "marks.txt").read_text() == "a\nb\n"


def test_a_killed_scheduler_leaves_the_item_to_be_resumed_by_the_next_fire(tmp_path):
    root = project(tmp_path, "nightly", "every: 1d\n" + COMMAND_ROUTINE)
    (root / "items.jsonl").write_text('{"id": "n1", "title": "overnight"}\n')
    with Simulator(SLOW) as sim:
        assert cli(["routine", "add", "nightly", "--now"], tmp_path).returncode == 0
        proc = subprocess.Popen([sys.executable, "-m", "loopwright", "scheduler"], cwd=root,
                                env=env_for(tmp_path, sim), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            wait_for_file(root / "tool.pid", proc)
            os.kill(proc.pid, signal.SIGKILL)
            proc.communicate(timeout=10)
        finally:
            proc.kill()
        deadline = time.monotonic() + 30  # the fire's process ends with its scheduler and records the item
        while items(tmp_path, "nightly")["n1"]["status"] == "running" and time.monotonic() < deadline:
            time.sleep(0.1)
    with Simulator([{"text": "n1 finished"}]) as sim:
        assert cli(["routine", "add", "nightly", "--now"], tmp_path).returncode == 0
        served = cli(["scheduler", "--once"], tmp_path, sim)
        sent = json.dumps([r.body["messages"] for r in sim.message_requests])
    assert "■ routine nightly: 1 found, 1 taken, 1 done, 0 failed" in served.stdout, served.stderr
    assert (root / "marks.txt").read_text() == "a\nb\n" and "Handle report n1: overnight" in sent
    (row,) = items(tmp_path, "nightly").values()
    assert row["status"] == "done" and row["tries"] == 1


def test_an_item_whose_process_died_before_its_session_began_starts_again_in_that_session(tmp_path):
    import socket
    import uuid

    from loopwright.stores.ledger import SqliteLedger

    root = project(tmp_path, "early", COMMAND_ROUTINE)
    (root / "items.jsonl").write_text('{"id": "e1", "title": "early death"}\n')
    dead = subprocess.Popen(["true"])
    dead.wait()
    sid, key = str(uuid.uuid4()), str(root / ".loopwright" / "routines" / "early.yaml")
    ledger = SqliteLedger(tmp_path / "home" / "schedules.db")
    ledger.note(key, "e1", 1.0)
    assert ledger.claim(key, "e1", owner=f"{socket.gethostname()}:{dead.pid}", session_id=sid, now=2.0,
                        retry_failed=0) == (sid, False)
    ledger.close()
    with Simulator([{"text": "handled"}]) as sim:
        out = cli(["routine", "run", "early", "--once"], tmp_path, sim)
        sent = json.dumps(sim.message_requests[0].body["messages"])
    assert "routine early: 1 found, 1 taken, 1 done, 0 failed" in out.stdout, out.stderr
    assert "Handle report e1: early death" in sent and "interrupted" not in sent
    (row,) = items(tmp_path, "early").values()
    assert row["status"] == "done" and row["tries"] == 1 and row["session_id"] == sid


def test_an_item_past_its_duration_fails(tmp_path):
    root = project(tmp_path, "timed", COMMAND_ROUTINE + "limits: {item: {max_duration: 1s}}\n")
    (root / "items.jsonl").write_text('{"id": "t1", "title": "slow"}\n')
    with Simulator([{"tool_use": bash("sleep 3"), "repeat": -1}]) as sim:
        out = cli(["routine", "run", "timed", "--once"], tmp_path, sim)
    assert "routine timed: 1 found, 1 taken, 0 done, 1 failed" in out.stdout, out.stderr
    (row,) = items(tmp_path, "timed").values()
    assert row["status"] == "failed" and "duration" in row["outcome"], row


def test_the_ledger_gives_an_item_to_one_claimant_and_never_takes_a_done_one(any_store, tmp_path):
    from loopwright.stores import open_store

    one, two = open_store(any_store, tmp_path).ledger(), open_store(any_store, tmp_path).ledger()
    one.note("r", "x", 1.0)
    two.note("r", "x", 1.5)  # seen again: the row stays as it was
    claims = [one.claim("r", "x", owner="h:1", session_id="s1", now=2.0, retry_failed=3),
              two.claim("r", "x", owner="h:2", session_id="s2", now=2.0, retry_failed=3)]
    assert claims == [("s1", False), None]
    one.finish("r", "x", "done", cost_usd=0.5, outcome="ok", now=3.0)
    assert two.claim("r", "x", owner="h:2", session_id="s3", now=4.0, retry_failed=3) is None
    row = two.get("r", "x")
    assert (row.status, row.tries, row.session_id, row.cost_usd, row.created) == ("done", 1, "s1", 0.5, 1.0)
    one.close()
    two.close()


def test_the_source_command_runs_without_loopwrights_keys_and_a_failing_one_takes_nothing(tmp_path):
    root = project(tmp_path, "envy", "source: {command: env > seen-env.txt}\nprompt: \"Do {id}\"\n")
    out = cli(["routine", "run", "envy", "--once"], tmp_path)
    assert out.returncode == 0 and "routine envy: 0 found, 0 taken" in out.stdout, out.stderr
    seen = (root / "seen-env.txt").read_text()
    assert "LOOPWRIGHT_HOME=" in seen and "ANTHROPIC_API_KEY" not in seen
    project(tmp_path, "broken", "source: {command: echo nope >&2; exit 3}\nprompt: \"Do {id}\"\n")
    failed = cli(["routine", "run", "broken", "--once"], tmp_path)
    assert failed.returncode == 1
    assert failed.stdout.strip() == "routine broken: the source failed: the source command exited 3: nope"


def test_run_without_once_fires_then_waits_for_the_trigger_until_ctrl_c(tmp_path):
    root = three(tmp_path, "watch", "every: 1d\n")
    with Simulator([{"text": "done", "repeat": -1}]) as sim:
        proc = subprocess.Popen([sys.executable, "-m", "loopwright", "routine", "run", "watch"], cwd=root,
                                env=env_for(tmp_path, sim), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        first = proc.stdout.readline()
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=30)
    assert first.startswith("routine watch: 3 found, 3 taken, 3 done, 0 failed") and proc.returncode == 130
    assert "watch: next fire at " in err
    listed = cli(["routine", "items", "watch"], tmp_path).stdout.splitlines()
    assert [line.split()[:4] for line in listed] == [[i, "done", "tries", "1"] for i in "abc"]


def test_skill_starts_each_items_turn_with_the_filled_prompt_as_its_arguments(tmp_path):
    root = project(tmp_path, "fix", "source: {command: cat items.jsonl}\nskill: fix-bug\n"
                                    "prompt: \"{id} {title}\"\nsandbox: false\n")
    (root / ".claude" / "skills" / "fix-bug").mkdir(parents=True)
    (root / ".claude" / "skills" / "fix-bug" / "SKILL.md").write_text(
        "---\ndescription: Fix one bug\n---\nFIX-BODY: reproduce $0, then fix it\n")
    (root / "items.jsonl").write_text('{"id": "b7", "title": "crash on start"}\n')
    with Simulator([{"text": "fixed"}]) as sim:
        out = cli(["routine", "run", "fix", "--once"], tmp_path, sim)
        sent = sim.message_requests[0].body["messages"][-1]["content"]
    assert out.returncode == 0, out.stderr
    prompt = sent if isinstance(sent, str) else "".join(b.get("text", "") for b in sent)
    assert "<command-name>/fix-bug</command-name>\n<command-args>b7 crash on start</command-args>" in prompt
    assert "FIX-BODY: reproduce b7, then fix it" in prompt
    assert items(tmp_path, "fix")["b7"]["status"] == "done"


def test_attempts_do_each_item_as_judged_attempts_and_the_winner_lands(tmp_path):
    root = project(tmp_path, "fix", "source: {command: cat items.jsonl}\nprompt: \"Fix {title}\"\nattempts: 2\n"
                                    "permission_mode: acceptEdits\nsandbox: false\n")
    (root / "app.py").write_text("def add(a, b):\n    return 0\n")
    (root / "items.jsonl").write_text('{"id": "b1", "title": "add returns 0"}\n')
    for args in (["init", "-q", "-b", "main"], ["add", "-A"], ["commit", "-q", "-m", "start"]):
        subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *args], cwd=root, check=True)
    right = "def add(a, b):\n    return a + b\n"
    fix = {"tool_use": {"name": "Write", "input": {"file_path": "app.py", "content": right}}, "repeat": -1}
    verdict = {"attempts": [{"label": "A", "defects": [], "verdict": "acceptable"},
                            {"label": "B", "defects": [], "verdict": "acceptable"}], "winner": "A", "reasons": "ok"}
    rules = [{"match": {"system_contains": "reviewer of several independent attempts"},
              "responses": [{"text": json.dumps(verdict)}]},
             {"match": {"last_user_contains": "Fix add returns 0"}, "responses": [fix]},
             {"responses": [{"text": "fixed", "repeat": -1}]}]
    (tmp_path / "tmp").mkdir()
    with Simulator({"rules": rules}) as sim:
        out = subprocess.run([sys.executable, "-m", "loopwright", "routine", "run", "fix", "--once"], cwd=root,
                             env=dict(env_for(tmp_path, sim), TMPDIR=str(tmp_path / "tmp")),
                             capture_output=True, text=True, timeout=90)
        judged = [r for r in sim.message_requests if "reviewer of several" in json.dumps(r.body.get("system"))]
    assert out.returncode == 0, out.stderr
    assert "2 attempts started" in out.stderr and len(judged) == 1
    assert (root / "app.py").read_text() == right
    assert items(tmp_path, "fix")["b1"]["status"] == "done"


def test_an_items_run_is_the_routines_keys_as_a_spec_and_its_session_replays_from_it(tmp_path):
    """No flags are made up from the routine's keys and parsed again: the item's session keeps the
    `RunSpec` the keys describe (a title that looks like a flag stays text), and a replay runs it."""
    root = project(tmp_path, "triage", COMMAND_ROUTINE + "model: claude-sonnet-4-5\nlimits: {item: {max_turns: 3}}\n")
    (root / "items.jsonl").write_text('{"id": "r1", "title": "--max-turns=1 --no-sandbox"}\n')
    with Simulator([{"tool_use": bash("echo r1 >> marks.txt")}, {"text": "r1 fixed"}]) as sim:
        fired = cli(["routine", "run", "triage", "--once"], tmp_path, sim)
        assert not sim.unmatched and not sim.remaining(), fired.stderr
    assert "1 done" in fired.stdout, fired.stderr
    sid = items(tmp_path, "triage")["r1"]["session_id"]
    (transcript,) = (tmp_path / "home").rglob(f"{sid}.jsonl")
    first = json.loads(transcript.read_text().splitlines()[0])
    assert "argv" not in first and first["spec"] == {
        "version": 1, "session_id": sid, "model": "claude-sonnet-4-5", "max_turns": 3, "allowed": ["Bash"],
        "sandbox": False}
    (root / "marks.txt").unlink()
    replayed = cli(["replay", sid, "--json"], tmp_path)
    report = json.loads(replayed.stdout)
    assert replayed.returncode == 0 and not report["diverged"], replayed.stdout[-3000:] + replayed.stderr
    assert report["commands"][0][:2] == ["--run-spec", json.dumps({"version": 1, "model": "claude-sonnet-4-5",
                                                                    "max_turns": 3, "allowed": ["Bash"],
                                                                    "sandbox": False})]
