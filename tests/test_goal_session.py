"""Goals live in the session: a resume restores an active goal (counters reset; its checks and
protected files as the resuming command line gives them, with the fingerprints kept),
`loopwright goal status|clear` reads and clears it, and the transcript's `goal_status`
attachments read like Claude Code's."""

import json
import os
import subprocess
import sys

import pytest

from loopwright.testing import Simulator

JUDGE = {"system_contains": "You decide whether an agent has met its goal"}


@pytest.fixture
def env(tmp_path):
    home = tmp_path / "home"
    e = {k: v for k, v in os.environ.items() if not k.startswith("ANTHROPIC_")}
    e.update(LOOPWRIGHT_HOME=str(home / ".loopwright"), HOME=str(home), ANTHROPIC_API_KEY="sk-test")
    return e


def cli(args, env, cwd, sim=None, timeout=60):
    e = dict(env, **({"ANTHROPIC_BASE_URL": sim.base_url} if sim else {}))
    return subprocess.run([sys.executable, "-m", "loopwright", *args], env=e, cwd=cwd, capture_output=True,
                          text=True, timeout=timeout)


def transcript(env, session_id):
    root = os.path.join(env["LOOPWRIGHT_HOME"], "projects")
    for folder in os.listdir(root):
        path = os.path.join(root, folder, f"{session_id}.jsonl")
        if os.path.exists(path):
            return path
    raise AssertionError("no transcript")


def test_resume_restores_the_goal_and_status_and_clear_work(tmp_path, env):
    project = tmp_path / "p"
    project.mkdir()
    (project / "tests").mkdir()
    (project / "tests" / "t.txt").write_text("original\n")
    first = {"rules": [{"match": JUDGE, "responses": []},
                       {"responses": [{"tool_use": {"name": "Bash", "input": {"command": "echo changed > tests/t.txt"}}},
                                      {"text": "working", "repeat": -1}]}]}
    with Simulator(first) as sim:
        out = cli(["-p", "--goal", "done.txt exists", "--check", "test -f done.txt", "--protect", "tests/**",
                   "--goal-max-turns", "3", "--allowedTools", "Bash", "--output-format", "json"], env, project, sim)
    result = json.loads(out.stdout)
    assert result["terminal_reason"] == "goal_max_turns", out.stderr
    sid = result["session_id"]

    status = cli(["goal", "status", "--session", sid], env, project)
    assert "Goal (active): done.txt exists" in status.stdout and "test -f done.txt" in status.stdout

    # the goal comes back from the transcript; its check and protected files only because this
    # command line gives them again, and then with the fingerprints taken before the test file
    # was changed, so the change is still caught
    second = {"rules": [{"match": JUDGE, "responses": [{"text": '{"ok": true, "reason": "done.txt exists"}'}]},
                        {"responses": [{"text": "all done"},
                                       {"tool_use": {"name": "Bash",
                                                     "input": {"command": "echo original > tests/t.txt; touch done.txt"}}},
                                       {"text": "restored the test and created done.txt"}]}]}
    with Simulator(second) as sim:
        out = cli(["-p", "-r", sid, "carry on", "--check", "test -f done.txt", "--protect", "tests/**",
                   "--allowedTools", "Bash", "--output-format", "json"], env, project, sim)
        bodies = [r.body for r in sim.message_requests]
    result = json.loads(out.stdout)
    assert result["terminal_reason"] == "goal_met", out.stderr
    feedback = bodies[1]["messages"][-1]["content"]
    text = feedback if isinstance(feedback, str) else " ".join(b.get("text", "") for b in feedback)
    assert "tests/t.txt" in text  # the pre-resume change is still a violation
    assert result["goal"]["iterations"] >= 2

    status = cli(["goal", "status", "--session", sid], env, project)
    assert "Goal (achieved)" in status.stdout
    cleared = cli(["goal", "clear", "--session", sid], env, project)
    assert cleared.stdout.strip() == "No goal set"


def test_goal_clear_on_an_active_goal(tmp_path, env):
    script = {"rules": [{"match": JUDGE, "responses": []}, {"responses": [{"text": "hm", "repeat": -1}]}]}
    with Simulator(script) as sim:
        out = cli(["-p", "/goal the moon is cheese, or stop after 1 turns", "--output-format", "json"], env, tmp_path, sim)
    sid = json.loads(out.stdout)["session_id"]
    assert json.loads(out.stdout)["terminal_reason"] == "goal_max_turns"
    assert "Goal (active)" in cli(["goal", "status"], env, tmp_path).stdout  # latest session by default
    assert cli(["goal", "clear"], env, tmp_path).stdout.strip() == "Goal cleared: the moon is cheese, or stop after 1 turns"
    assert "Goal (cleared)" in cli(["goal", "status", "--session", sid], env, tmp_path).stdout
    with Simulator([{"text": "fine"}]) as sim:  # a resume after clearing runs without the goal
        out = cli(["-p", "-r", sid, "hello", "--output-format", "json"], env, tmp_path, sim)
    assert json.loads(out.stdout)["terminal_reason"] == "completed" and "goal" not in json.loads(out.stdout)


def test_goal_status_records_read_like_claude_codes(tmp_path, env):
    script = {"rules": [{"match": JUDGE, "responses": [{"text": '{"ok": false, "reason": "not yet"}'},
                                                      {"text": '{"ok": true, "reason": "yes"}'}]},
                        {"responses": [{"text": "a"}, {"tool_use": {"name": "Bash", "input": {"command": "true"}}},
                                       {"text": "b"}]}]}
    with Simulator(script) as sim:
        out = cli(["-p", "/goal it is done", "--allowedTools", "Bash", "--output-format", "json"], env, tmp_path, sim)
    sid = json.loads(out.stdout)["session_id"]
    # what a hook script does with a Claude Code transcript: grep, then parse the lines
    lines = subprocess.run(["grep", '"type":"goal_status"', transcript(env, sid)], capture_output=True,
                           text=True).stdout.splitlines()
    statuses = [json.loads(line)["attachment"] for line in lines]
    assert [json.loads(line)["type"] for line in lines] == ["attachment"] * 3
    assert statuses[0]["sentinel"] is True and statuses[0]["met"] is False and statuses[0]["condition"] == "it is done"
    assert statuses[1]["met"] is False and statuses[1]["reason"] == "not yet"
    assert statuses[-1]["met"] is True and statuses[-1]["iterations"] == 2
    assert all({"iterations", "durationMs", "tokens"} <= set(s) for s in statuses)


def test_goal_file_checks_and_stream_json_goal_lines(tmp_path, env):
    (tmp_path / "goal.md").write_text("the file ok.txt exists\ncheck: test -f ok.txt\nprotect: keep.txt\n")
    (tmp_path / "keep.txt").write_text("x")
    script = {"rules": [{"match": JUDGE, "responses": [{"text": '{"ok": true, "reason": "ok.txt is there"}'}]},
                        {"responses": [{"text": "done"},
                                       {"tool_use": {"name": "Bash", "input": {"command": "touch ok.txt"}}},
                                       {"text": "now done"}]}]}
    with Simulator(script) as sim:
        out = cli(["-p", "--goal-file", "goal.md", "--allowedTools", "Bash", "--output-format", "stream-json",
                   "--verbose"], env, tmp_path, sim)
        judged = [r for r in sim.message_requests if "met its goal" in str(r.body.get("system"))]
    lines = [json.loads(line) for line in out.stdout.splitlines()]
    goal_lines = [d for d in lines if d.get("subtype") == "goal_status"]
    assert goal_lines[0]["sentinel"] and goal_lines[0]["condition"] == "the file ok.txt exists"
    assert goal_lines[1]["reason"] == "a check failed" and goal_lines[-1]["met"] is True
    assert lines[-1]["terminal_reason"] == "goal_met" and len(judged) == 1
    assert lines[-1]["goal"]["checks"] == [{"command": "test -f ok.txt", "exit_code": 0, "passed": True,
                                            "timed_out": False}]
    assert "◎ goal · turn" in out.stderr and "$" in out.stderr  # the live line, with the spend


def test_goal_slash_commands_in_a_resumed_session(tmp_path, env):
    script = {"rules": [{"match": JUDGE, "responses": []}, {"responses": [{"text": "hm", "repeat": -1}]}]}
    with Simulator(script) as sim:
        out = cli(["-p", "/goal the sky is green, or stop after 1 turns", "--output-format", "json"], env, tmp_path, sim)
    sid = json.loads(out.stdout)["session_id"]
    shown = cli(["-p", "-r", sid, "/goal"], env, tmp_path)
    assert shown.returncode == 0 and "Goal (active): the sky is green" in shown.stdout
    stopped = cli(["-p", "-r", sid, "/goal stop"], env, tmp_path)  # an alias of clear
    assert stopped.stdout.strip() == "Goal cleared: the sky is green, or stop after 1 turns"
    assert "No goal set" in cli(["-p", "-r", sid, "/goal off"], env, tmp_path).stdout


def test_goal_condition_limit(tmp_path, env):
    out = cli(["-p", "/goal " + "x" * 4001], env, tmp_path)
    assert out.returncode == 2 and "limited to 4000 characters (got 4001)" in out.stderr
