"""Hooks through the `loopwright` command: settings files and `--settings`, stream-json hook
lines, SessionStart/SessionEnd of a headless run, the block-cap variable, and a Ralph-loop
Stop hook reading the JSONL transcript — real processes against the loopback simulator."""

import json
import os
import shlex
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from loopwright.testing import Simulator

CLI = [sys.executable, "-m", "loopwright"]
HOOKS = Path(__file__).parent / "hooks"


@pytest.fixture
def dirs(tmp_path):
    home, project = tmp_path / "home", tmp_path / "project"
    home.mkdir()
    project.mkdir()
    return home, project


def cli(args, cwd, home, sim_url, env=None):
    e = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "LOOPWRIGHT_", "CLAUDE_"))}
    e.update(HOME=str(home), LOOPWRIGHT_HOME=str(home / ".loopwright"), ANTHROPIC_BASE_URL=sim_url,
             ANTHROPIC_API_KEY="sk-test", **(env or {}))
    return subprocess.run(CLI + args, capture_output=True, text=True, env=e, cwd=cwd, timeout=60)


def sh(script, *args):
    return " ".join(shlex.quote(str(a)) for a in ("sh", HOOKS / script, *args))


def command(cmd, matcher=None):
    g = {"hooks": [{"type": "command", "command": cmd}]}
    return g if matcher is None else {"matcher": matcher, **g}


def lines(out):
    return [json.loads(line) for line in out.stdout.splitlines() if line.strip()]


def test_include_hook_events_adds_started_and_response_lines(dirs, tmp_path):
    home, project = dirs
    settings = {"hooks": {"PreToolUse": [command(sh("reply.sh", tmp_path / "log", "", 1, "warned"), "Bash")],
                          "Stop": [command("true")]}}
    script = [{"tool_use": {"name": "Bash", "input": {"command": "true"}}}, {"text": "ok"}]
    args = ["-p", "go", "--output-format", "stream-json", "--verbose", "--allowedTools", "Bash",
            "--settings", json.dumps(settings)]
    with Simulator(script) as sim:
        quiet = lines(cli(args, project, home, sim.base_url))
    assert not [d for d in quiet if d.get("subtype", "").startswith("hook_")]
    assert any(d.get("subtype") == "informational" and "warned" in d["content"] for d in quiet)  # still visible
    with Simulator(script) as sim:
        out = cli(args + ["--include-hook-events"], project, home, sim.base_url)
    hooks = [d for d in lines(out) if d.get("subtype", "").startswith("hook_")]
    assert [(d["subtype"], d["hook_name"]) for d in hooks] == [
        ("hook_started", "PreToolUse:Bash"), ("hook_response", "PreToolUse:Bash"),
        ("hook_started", "Stop"), ("hook_response", "Stop")]
    started, response = hooks[0], hooks[1]
    assert started["hook_id"] == response["hook_id"] and started["hook_event"] == "PreToolUse"
    assert response["exit_code"] == 1 and response["stderr"] == "warned\n" and response["outcome"] == "error"
    assert hooks[3]["exit_code"] == 0 and hooks[3]["outcome"] == "success"
    assert all(d["session_id"] == lines(out)[-1]["session_id"] for d in hooks)


def test_headless_session_start_and_end(dirs, tmp_path):
    home, project = dirs
    start, end = tmp_path / "start", tmp_path / "end"
    (project / ".claude").mkdir()
    (project / ".claude" / "settings.json").write_text(json.dumps({"hooks": {
        "SessionStart": [command(sh("session_start.sh", start), "startup")],
        "SessionEnd": [command(sh("reply.sh", end))]}}))
    with Simulator([{"text": "ok"}]) as sim:
        out = cli(["-p", "go", "--output-format", "stream-json", "--verbose"], project, home, sim.base_url)
        first = sim.message_requests[0].body["messages"]
    assert out.returncode == 0, out.stderr
    assert "the build command is make check" in first[0]["content"][0]["text"]
    kinds = [(d["type"], d.get("subtype"), d.get("hook_event")) for d in lines(out)]
    # SessionStart's hook lines come without --include-hook-events, before init, as in Claude Code
    assert kinds[:3] == [("system", "hook_started", "SessionStart"), ("system", "hook_response", "SessionStart"),
                         ("system", "init", None)]
    [ended] = [json.loads(line) for line in end.read_text().splitlines()]
    assert ended["reason"] == "other" and ended["hook_event_name"] == "SessionEnd"
    assert ended["session_id"] == lines(out)[-1]["session_id"]


def test_block_cap_variable(dirs, tmp_path):
    home, project = dirs
    settings = {"hooks": {"Stop": [command(sh("stop_always.sh", tmp_path / "log"))]}}
    with Simulator([{"text": "again", "repeat": -1}]) as sim:
        out = cli(["-p", "go", "--output-format", "json", "--settings", json.dumps(settings)], project, home,
                  sim.base_url, env={"LOOPWRIGHT_STOP_HOOK_BLOCK_CAP": "2"})
        calls = len(sim.message_requests)
    result = json.loads(out.stdout)
    assert calls == 3 and result["terminal_reason"] == "stop_hook_cap" and result["subtype"] == "success"
    with Simulator([{"text": "again", "repeat": 4}]) as sim:
        out = cli(["-p", "go", "--output-format", "json", "--settings", json.dumps(settings)], project, home,
                  sim.base_url, env={"CLAUDE_CODE_STOP_HOOK_BLOCK_CAP": "bad"})
    assert out.returncode == 2 and "CLAUDE_CODE_STOP_HOOK_BLOCK_CAP: expected a whole number" in out.stderr


def test_a_stop_hook_block_shows_in_the_verbose_trace(dirs, tmp_path):
    home, project = dirs
    settings = {"hooks": {"Stop": [command(sh("stop_always.sh", tmp_path / "log"))]}}
    with Simulator([{"text": "again", "repeat": -1}]) as sim:
        out = cli(["-p", "go", "--verbose", "--settings", json.dumps(settings)], project, home, sim.base_url,
                  env={"LOOPWRIGHT_STOP_HOOK_BLOCK_CAP": "1"})
    blocked = [ln for ln in out.stderr.splitlines() if "a Stop hook kept the run going" in ln]
    assert blocked == ["  ! a Stop hook kept the run going: Not finished: keep going."], out.stderr


RALPH_STATE = """---
active: true
iteration: 1
session_id: {session}
max_iterations: 0
completion_promise: "ALL TESTS PASS"
started_at: "2026-12-01T10:00:00Z"
---
Make the test suite pass. Say <promise>ALL TESTS PASS</promise> only when it is true.
"""


def ralph_project(project, session):
    claude = project / ".claude"
    claude.mkdir()
    (claude / "settings.json").write_text(json.dumps(
        {"hooks": {"Stop": [{"hooks": [{"type": "command", "command": f"bash {HOOKS / 'ralph_stop.sh'}"}]}]}}))
    (claude / "ralph-loop.local.md").write_text(RALPH_STATE.format(session=session))
    return claude / "ralph-loop.local.md"


def test_ralph_loop_stop_hook_runs_unchanged(dirs):
    home, project = dirs
    session = str(uuid.uuid4())
    state = ralph_project(project, session)
    script = [{"text": "I fixed one test."}, {"tool_use": {"name": "Bash", "input": {"command": "true"}}},
              {"text": "Two more fixed; one still fails."},
              {"content": [{"type": "text", "text": "Everything passes now."},
                           {"type": "text", "text": "<promise>ALL TESTS PASS</promise>"}]}]
    with Simulator(script) as sim:
        out = cli(["-p", "fix the tests", "--output-format", "json", "--session-id", session,
                   "--allowedTools", "Bash"], project, home, sim.base_url)
        bodies = [r.body for r in sim.message_requests]
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout)
    assert len(bodies) == 4 and result["terminal_reason"] == "completed"
    prompt = "Make the test suite pass. Say <promise>ALL TESTS PASS</promise> only when it is true."
    assert bodies[1]["messages"][-1]["content"][0]["text"] == prompt  # the same prompt, re-sent
    assert bodies[3]["messages"][-1]["content"][0]["text"] == prompt
    assert not state.exists()  # the promise ended the loop and the hook cleaned up


def test_ralph_loop_ignores_another_sessions_state(dirs):
    home, project = dirs
    state = ralph_project(project, str(uuid.uuid4()))
    with Simulator([{"text": "done"}]) as sim:
        out = cli(["-p", "go", "--output-format", "json"], project, home, sim.base_url)
        calls = len(sim.message_requests)
    assert out.returncode == 0 and calls == 1 and "iteration: 1" in state.read_text()


def test_session_start_source_on_resume(dirs, tmp_path):
    home, project = dirs
    log = tmp_path / "log"
    settings = json.dumps({"hooks": {"SessionStart": [command(sh("reply.sh", log), "resume|fork")]}})
    with Simulator([{"text": "one"}, {"text": "two"}, {"text": "three"}]) as sim:
        first = cli(["-p", "a", "--settings", settings, "--output-format", "json"], project, home, sim.base_url)
        assert first.returncode == 0 and not log.exists()  # a fresh session is "startup"
        cli(["-p", "b", "--continue", "--settings", settings], project, home, sim.base_url)
        cli(["-p", "c", "--continue", "--fork-session", "--settings", settings], project, home, sim.base_url)
    seen = [json.loads(line) for line in log.read_text().splitlines()]
    assert [s["source"] for s in seen] == ["resume", "fork"]
    assert seen[0]["session_id"] == json.loads(first.stdout)["session_id"] != seen[1]["session_id"]
