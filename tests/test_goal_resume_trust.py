"""Commands come from the user, never from a transcript: a resumed goal keeps its condition, but
its checks and protected paths are armed only as this command line gives them; checks a
transcript records and the user did not give are named in a warning and never run. And a home
inside a writable root is said at start. Real processes against the loopback simulator."""

from __future__ import annotations

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
    e = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "LOOPWRIGHT_"))}
    e.update(LOOPWRIGHT_HOME=str(home / ".loopwright"), HOME=str(home), ANTHROPIC_API_KEY="sk-test")
    return e


def cli(args, env, cwd, sim=None):
    e = dict(env, **({"ANTHROPIC_BASE_URL": sim.base_url} if sim else {}))
    return subprocess.run([sys.executable, "-m", "loopwright", *args], env=e, cwd=cwd, capture_output=True,
                          text=True, timeout=90)


def transcript(env, session_id):
    root = os.path.join(env["LOOPWRIGHT_HOME"], "projects")
    for folder in os.listdir(root):
        path = os.path.join(root, folder, f"{session_id}.jsonl")
        if os.path.exists(path):
            return path
    raise AssertionError("no transcript")


def plant(path, checks, protect=()):
    """What a model with write access to the transcript would do: rewrite the goal's recorded
    checks (and protected paths) in place."""
    records = [json.loads(line) for line in open(path)]
    for r in records:
        saved = r.get("attachment", {}).get("loopwright")
        if saved:
            saved["spec"]["checks"], saved["spec"]["protect"] = list(checks), list(protect)
    with open(path, "w") as f:
        f.writelines(json.dumps(r) + "\n" for r in records)


def start_goal(project, env, *flags):
    script = {"rules": [{"match": JUDGE, "responses": []}, {"responses": [{"text": "working", "repeat": -1}]}]}
    with Simulator(script) as sim:
        out = cli(["-p", "--goal", "report.txt says done", "--goal-max-turns", "1", *flags,
                   "--output-format", "json"], env, project, sim)
    result = json.loads(out.stdout)
    assert result["terminal_reason"] == "goal_max_turns", out.stderr
    return result["session_id"]


def resume(project, env, sid, *flags, verdict='{"ok": true, "reason": "it says done"}'):
    script = {"rules": [{"match": JUDGE, "responses": [{"text": verdict, "repeat": -1}]},
                        {"responses": [{"text": "carried on", "repeat": -1}]}]}
    with Simulator(script) as sim:
        out = cli(["-p", "-r", sid, "carry on", *flags, "--output-format", "json"], env, project, sim)
        judged = [r.body for r in sim.message_requests if "met its goal" in json.dumps(r.body.get("system", ""))]
    return out, json.loads(out.stdout), judged


def test_a_check_planted_in_the_transcript_is_named_and_never_run(tmp_path, env):
    project = tmp_path / "p"
    project.mkdir()
    sid = start_goal(project, env, "--check", "test -f report.txt")
    plant(transcript(env, sid), [f"touch {tmp_path}/pwned", "test -f report.txt"])
    out, result, judged = resume(project, env, sid, "--permission-mode", "plan")  # as reported: plan mode did not help
    assert not (tmp_path / "pwned").exists()
    assert f"touch {tmp_path}/pwned" in out.stderr and "not run" in out.stderr
    # the goal itself goes on (its condition is text, as the conversation is), with no checks
    assert result["terminal_reason"] == "goal_met" and result["goal"]["checks"] == []
    assert "GOAL: report.txt says done" in json.dumps(judged[0]["messages"][0]["content"])


def test_checks_given_again_run_and_a_matching_transcript_says_nothing(tmp_path, env):
    project = tmp_path / "p"
    project.mkdir()
    check = "echo ran >> checks.log"
    sid = start_goal(project, env, "--check", check)
    before = (project / "checks.log").read_text().count("ran")
    out, result, _ = resume(project, env, sid, "--check", check)
    assert "warning" not in out.stderr and result["terminal_reason"] == "goal_met"
    assert [c["command"] for c in result["goal"]["checks"]] == [check]
    assert (project / "checks.log").read_text().count("ran") == before + 1


def test_checks_that_differ_from_the_transcript_are_reported_and_the_users_win(tmp_path, env):
    project = tmp_path / "p"
    project.mkdir()
    sid = start_goal(project, env, "--check", "echo old >> old.log")
    before = (project / "old.log").read_text()
    out, result, _ = resume(project, env, sid, "--check", "echo new >> new.log")
    assert "echo old >> old.log" in out.stderr and "echo new" not in out.stderr
    assert (project / "old.log").read_text() == before and (project / "new.log").read_text() == "new\n"
    assert [c["command"] for c in result["goal"]["checks"]] == ["echo new >> new.log"]


def test_protected_paths_come_from_this_command_line_too(tmp_path, env):
    project = tmp_path / "p"
    (project / "tests").mkdir(parents=True)
    (project / "tests" / "t.txt").write_text("original\n")
    sid = start_goal(project, env, "--protect", "tests/**")
    (project / "tests" / "t.txt").write_text("changed before the resume\n")
    not_given, result, judged = resume(project, env, sid)
    assert "tests/**" in not_given.stderr and "--protect" in not_given.stderr  # not given again: not armed, and said
    assert result["terminal_reason"] == "goal_met"
    sid = start_goal(project, env, "--protect", "tests/**")
    (project / "tests" / "t.txt").write_text("changed again\n")
    given, result, judged = resume(project, env, sid, "--protect", "tests/**")
    # given again: armed, with the fingerprints taken when the goal was set, so the change still counts
    assert "warning" not in given.stderr and result["terminal_reason"] != "goal_met" and not judged
    sid = start_goal(project, env, "--protect", "tests/**")
    plant(transcript(env, sid), [], ["nothing/**"])  # the model tries to move the protection away
    planted, result, judged = resume(project, env, sid, "--protect", "tests/**")
    assert "nothing/**" in planted.stderr


def test_a_resumed_goal_without_checks_recorded_needs_no_flags(tmp_path, env):
    project = tmp_path / "p"
    project.mkdir()
    sid = start_goal(project, env)
    out, result, judged = resume(project, env, sid)
    assert "warning" not in out.stderr and result["terminal_reason"] == "goal_met" and len(judged) == 1


def test_check_flags_on_a_resume_without_a_goal_are_refused(tmp_path, env):
    project = tmp_path / "p"
    project.mkdir()
    with Simulator([{"text": "hi"}]) as sim:
        first = json.loads(cli(["-p", "hello", "--output-format", "json"], env, project, sim).stdout)
    out = cli(["-p", "-r", first["session_id"], "again", "--check", "true"], env, project)
    assert out.returncode == 2 and "need a goal" in out.stderr


@pytest.mark.parametrize(("where", "warned"), [
    ("inside", True), ("inside-added", True), ("protected", False), ("outside", False)])
def test_a_home_inside_a_writable_root_is_said_at_start(tmp_path, env, where, warned):
    project, other = tmp_path / "p", tmp_path / "other"
    project.mkdir()
    other.mkdir()
    home = {"inside": project / "state", "inside-added": other / "state", "protected": project / ".loopwright",
            "outside": tmp_path / "elsewhere"}[where]
    with Simulator([{"text": "hi"}]) as sim:
        out = cli(["-p", "hello", "--add-dir", str(other)], dict(env, LOOPWRIGHT_HOME=str(home)), project, sim)
    assert out.returncode == 0, out.stderr
    said = f"loopwright's home {home}" in out.stderr and "inside a writable root" in out.stderr
    assert said is warned, out.stderr
