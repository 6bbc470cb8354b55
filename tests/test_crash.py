"""Crash safety of a real `loopwright -p` process: killed with SIGKILL during a tool and during a
model stream, then resumed with `-r ID` against a fresh simulator. No tool runs twice, the resumed
conversation passes the simulator's strict validation, and the model learns what is unknown."""

import json
import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

from loopwright.session import NOT_RUN, UNKNOWN_OUTCOME
from loopwright.stores.jsonl import project_name, read_records
from loopwright.testing import Simulator
from procs import kill_orphan

CLI = [sys.executable, "-m", "loopwright"]


def env_for(sim, home):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "LOOPWRIGHT_"))}
    env.update(ANTHROPIC_BASE_URL=sim.base_url, ANTHROPIC_API_KEY="sk-test", LOOPWRIGHT_HOME=str(home))
    return env


def start(args, sim, cwd, home):
    return subprocess.Popen(CLI + args, cwd=cwd, env=env_for(sim, home), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def run(args, sim, cwd, home):
    return subprocess.run(CLI + args, cwd=cwd, env=env_for(sim, home), capture_output=True, text=True, timeout=60)


def wait_for(condition, timeout=30.0):
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out waiting"
        time.sleep(0.02)


def kill9(proc):
    os.kill(proc.pid, signal.SIGKILL)
    proc.communicate(timeout=10)
    assert proc.returncode == -signal.SIGKILL


def transcript(home, cwd, sid):
    return Path(home) / "projects" / project_name(cwd) / f"{sid}.jsonl"


def setup(tmp_path):
    work = tmp_path / "work"
    work.mkdir()
    return work, tmp_path / "home", str(uuid.uuid4())


def bash(command, id=None):
    return {"name": "Bash", "input": {"command": command}, **({"id": id} if id else {})}


def tool_results(request):
    """The tool_result blocks of a request, by tool_use_id."""
    return {b["tool_use_id"]: b for m in request.body["messages"] if m["role"] == "user"
            for b in (m["content"] if isinstance(m["content"], list) else []) if b.get("type") == "tool_result"}


def test_kill_during_a_tool_then_resume_runs_nothing_twice(tmp_path):
    work, home, sid = setup(tmp_path)
    first = [{"tool_use": [bash("echo a >> effects.txt", "toolu_a"),
                           bash("echo b >> effects.txt; echo $$ > tool.pid; sleep 30", "toolu_b"),
                           bash("echo c >> effects.txt", "toolu_c")]}]
    with Simulator(first) as sim:
        proc = start(["-p", "do it", "--session-id", sid, "--allowedTools", "Bash"], sim, work, home)
        wait_for(lambda: (work / "tool.pid").exists() and (work / "tool.pid").read_text().strip())
        kill9(proc)
    kill_orphan(work / "tool.pid")  # the orphaned `sleep` of the killed run, if it was not sandboxed
    records, warnings = read_records(transcript(home, work, sid))
    assert [r["type"] for r in records][-3:] == ["tool_started", "tool_finished", "tool_started"] and not warnings

    # the resumed model checks, then calls the tool that never ran again
    second = [{"tool_use": bash("echo c >> effects.txt", "toolu_c2")}, {"text": "checked and finished"}]
    with Simulator(second) as sim:
        out = run(["-p", "-r", sid, "carry on", "--allowedTools", "Bash", "--output-format", "json"], sim, work, home)
        requests, unmatched = sim.message_requests, sim.unmatched
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["subtype"] == "success" and json.loads(out.stdout)["session_id"] == sid
    assert (work / "effects.txt").read_text() == "a\nb\nc\n"  # every command ran exactly once
    assert unmatched == [] and [r.response_status for r in requests] == [200, 200]
    answers = tool_results(requests[0])
    assert answers["toolu_a"]["content"] == "(no output)" and not answers["toolu_a"].get("is_error")
    assert answers["toolu_b"] == {"type": "tool_result", "tool_use_id": "toolu_b", "is_error": True,
                                  "content": UNKNOWN_OUTCOME.format(name="Bash")}
    assert answers["toolu_c"]["is_error"] and answers["toolu_c"]["content"] == NOT_RUN.format(name="Bash")
    assert "interrupted mid-turn" in out.stderr
    after, _ = read_records(transcript(home, work, sid))
    assert after[:len(records)] == records and after[-1]["subtype"] == "run_result"  # appended, nothing lost


def test_kill_during_a_model_stream_then_resume(tmp_path):
    work, home, sid = setup(tmp_path)
    first = [{"tool_use": bash("echo once >> effects.txt")}, {"delay": 30, "text": "never recorded"}]
    with Simulator(first) as sim:
        proc = start(["-p", "do it", "--session-id", sid, "--allowedTools", "Bash"], sim, work, home)
        wait_for(lambda: len(sim.message_requests) == 2)
        time.sleep(0.2)
        kill9(proc)
    records, warnings = read_records(transcript(home, work, sid))
    assert [r["type"] for r in records] == ["user", "assistant", "tool_started", "tool_finished", "user"]
    assert "never recorded" not in transcript(home, work, sid).read_text() and not warnings

    with Simulator([{"text": "all done"}]) as sim:
        out = run(["-p", "--resume", sid, "carry on", "--output-format", "json"], sim, work, home)
        requests, unmatched = sim.message_requests, sim.unmatched
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["result"] == "all done"
    assert (work / "effects.txt").read_text() == "once\n"
    assert unmatched == [] and [r.response_status for r in requests] == [200]
    texts = [m["content"][0].get("text") or m["content"][0].get("content") for m in requests[0].body["messages"]]
    assert texts == ["do it", None, "(no output)", "carry on"]
    assert "interrupted" not in out.stderr  # the turn had all its results: nothing to make up


def test_a_torn_last_line_is_ignored_with_a_warning_and_nothing_before_it_is_lost(tmp_path):
    work, home, sid = setup(tmp_path)
    with Simulator([{"text": "first answer"}]) as sim:
        assert run(["-p", "one", "--session-id", sid], sim, work, home).returncode == 0
    path = transcript(home, work, sid)
    intact = path.read_bytes()
    path.write_bytes(intact + b'{"type":"user","uuid":"x","message":{"role":"us')
    with Simulator([{"text": "second answer"}]) as sim:
        out = run(["-p", "-r", sid, "two"], sim, work, home)
        body = sim.message_requests[0].body
    assert out.returncode == 0 and out.stdout.strip() == "second answer", out.stderr
    warning = [line for line in out.stderr.splitlines() if "cut off by a crash" in line]
    assert len(warning) == 1 and warning[0].startswith("loopwright: warning:")
    assert [m["content"][0]["text"] for m in body["messages"]] == ["one", "first answer", "two"]
    data = path.read_bytes()
    assert data.startswith(intact) and all(json.loads(line) for line in data.splitlines())


def test_transcript_lines_are_compact_json_that_grep_finds(tmp_path):
    work, home, sid = setup(tmp_path)
    with Simulator([{"tool_use": bash("true")}, {"text": "fine"}]) as sim:
        assert run(["-p", "go", "--session-id", sid, "--allowedTools", "Bash"], sim, work, home).returncode == 0
    path = transcript(home, work, sid)
    found = subprocess.run(["grep", '"role":"assistant"', str(path)], capture_output=True, text=True).stdout
    assert [json.loads(line)["type"] for line in found.splitlines()] == ["assistant", "assistant"]
    for line in path.read_text(encoding="utf-8").splitlines():
        assert line == json.dumps(json.loads(line), ensure_ascii=False, separators=(",", ":"))
