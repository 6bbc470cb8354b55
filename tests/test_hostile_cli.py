"""Hostile input through the real `loopwright` command and the loopback simulator: deep and huge
JSON, lone surrogates, names that are not UTF-8, catastrophic regexes, FIFOs, tools that outlast
the run's limits, SIGTERM during a hung match. Every run ends promptly with a result and a
transcript a resume understands; nothing hangs, nothing prints a traceback."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
import uuid
from pathlib import Path

import pytest

from loopwright.engine.dispatch import DEADLINE_RUNNING, DEADLINE_WAITING
from loopwright.session.records import Record, restore
from loopwright.stores.jsonl import read_records
from loopwright.testing import Simulator
from procs import gone
from test_crash import CLI, env_for, transcript

REDOS_TEXT = "a" * 30 + "!"


def run(args, sim, cwd, home, stdin=None, timeout=90):
    return subprocess.run(CLI + args, cwd=cwd, env=env_for(sim, home), capture_output=True, text=True,
                          input=stdin, timeout=timeout)


def result_of(out):
    assert "Traceback" not in out.stderr, out.stderr
    lines = [json.loads(line) for line in out.stdout.splitlines() if line.strip()]
    assert lines and lines[-1]["type"] == "result", out.stdout + out.stderr
    return lines[-1]


def records(home, cwd, sid):
    """The transcript's records; it must be strict UTF-8, one JSON object a line."""
    path = transcript(home, cwd, sid)
    path.read_bytes().decode("utf-8")
    found, warnings = read_records(path)
    assert not warnings
    return found


def resumable(found):
    """The conversation a resume rebuilds holds no call left without a result."""
    restored = restore([Record.from_json(r) for r in found])
    assert restored.recovered == ()
    return restored.messages


def tool_use(name, **tool_input):
    return {"name": name, "input": tool_input}


@pytest.fixture
def place(tmp_path):
    work = tmp_path / "work"
    work.mkdir()
    return work, tmp_path / "home", str(uuid.uuid4())


# ------------------------------------------------------------ deep, huge and undecodable input


@pytest.mark.parametrize("raw", [
    '{"command": ' + "[" * 100_000 + "]" * 100_000 + "}",
    '{"command": "ls", "x": ' + '{"a":' * 5_000 + "1" + "}" * 5_000 + "}",
])
def test_a_tool_input_nested_far_too_deep_ends_with_a_result(place, raw):
    work, home, sid = place
    script = [{"content": [{"type": "tool_use", "name": "Bash", "partial_json": raw}], "stop_reason": "tool_use"},
              {"text": "done", "repeat": -1}]
    with Simulator(script) as sim:
        out = run(["-p", "go", "--session-id", sid, "--output-format", "json", "--allowedTools", "Bash"], sim, work, home)
    result_of(out)  # what the model is told about the unusable call is the loop's business (LOOP.md)
    found = records(home, work, sid)
    assert found[-1]["subtype"] == "run_result" and "tool_started" not in [r["type"] for r in found]


def test_lone_surrogates_in_tool_input_are_recorded_and_resumed(place):
    work, home, sid = place
    calls = [{"type": "tool_use", "name": "Bash", "partial_json": '{"command": "echo \\ud800 > a.txt"}'},
             {"type": "tool_use", "name": "Write",
              "partial_json": '{"file_path": "b\\udcff.txt", "content": "x\\udfffy"}'}]
    with Simulator([{"content": calls, "stop_reason": "tool_use"}, {"text": "done"}]) as sim:
        out = run(["-p", "go", "--session-id", sid, "--output-format", "stream-json", "--verbose",
                   "--allowedTools", "Bash,Write"], sim, work, home)
    assert result_of(out)["subtype"] == "success"
    found = records(home, work, sid)
    started = [r for r in found if r["type"] == "tool_started"]
    assert [r["input"].get("command") or r["input"]["content"] for r in started] == ["echo \ud800 > a.txt", "x\udfffy"]
    assert b"\\ud800" in transcript(home, work, sid).read_bytes()  # escaped in the file, the same text read back
    with Simulator([{"text": "resumed"}]) as sim:
        again = run(["-p", "more", "-r", sid, "--output-format", "json"], sim, work, home)
        sent = sim.message_requests[0].body
    assert result_of(again)["result"] == "resumed" and len(sent["messages"]) == 5


def test_names_that_are_not_utf8_reach_the_model_escaped(place):
    work, home, sid = place
    name = os.fsdecode(b"caf\xe9.txt")
    (work / name).write_text("needle\n")
    calls = [tool_use("Glob", pattern="*.txt"), tool_use("Grep", pattern="needle", output_mode="content")]
    with Simulator([{"tool_use": calls}, {"text": "done"}]) as sim:
        out = run(["-p", "go", "--session-id", sid, "--output-format", "json"], sim, work, home)
        results = [b["content"] for b in sim.message_requests[1].body["messages"][-1]["content"]]
    assert result_of(out)["subtype"] == "success"
    assert results == [f"{work}/caf\\xe9.txt", f"{work}/caf\\xe9.txt:1:needle"]
    records(home, work, sid)


@pytest.mark.parametrize("line", [
    '{"type": "user", "message": {"role": "user", "content": ' + "[" * 600 + "]" * 600 + "}}",
    "[" * 100_000 + "]" * 100_000,
    '{"type": "user", "message": {"role": "user", "content": [{"type": "text", "text": "x", "y": '
    + '{"a":' * 1000 + "1" + "}" * 1000 + "}]}}",
])
def test_a_deeply_nested_stream_json_line_is_one_clear_error(place, line):
    work, home, _ = place
    with Simulator([{"text": "never"}]) as sim:
        out = run(["-p", "--input-format", "stream-json", "--output-format", "stream-json"], sim, work, home,
                  stdin=line + "\n")
        assert not sim.message_requests
    assert out.returncode == 2 and "Traceback" not in out.stderr
    assert "stdin line 1: nested more than 512 arrays/objects deep (the cap)" in out.stderr


def test_a_huge_stream_json_line_is_refused_by_number_and_cap(place):
    work, home, _ = place
    first = json.dumps({"type": "user", "message": {"role": "user", "content": "hi"}})
    huge = json.dumps({"type": "user", "message": {"role": "user", "content": "x" * (10 * 1024 * 1024)}})
    with Simulator([{"text": "one"}]) as sim:
        out = run(["-p", "--input-format", "stream-json", "--output-format", "stream-json"], sim, work, home,
                  stdin=f"{first}\n{huge}\n")
    assert out.returncode == 2 and "Traceback" not in out.stderr
    assert "stdin line 2 is longer than 10,485,760 characters, the cap for one message" in out.stderr
    assert [json.loads(x)["result"] for x in out.stdout.splitlines() if '"type":"result"' in x] == ["one"]


# ------------------------------------------------------------ regexes and named pipes


@pytest.mark.parametrize("call", [
    tool_use("Grep", pattern="^(a+)+$"),
    tool_use("Grep", pattern="^(a|aa)+$", output_mode="content", multiline=True),
    tool_use("Grep", pattern="a", glob="*a" * 12 + "*b"),
    tool_use("Glob", pattern="*a" * 12 + "*b"),
])
def test_a_redos_pattern_ends_promptly_with_a_result(place, call):
    work, home, _ = place
    (work / REDOS_TEXT).write_text(REDOS_TEXT * 3 + "\n")
    (work / "named-pipe").unlink(missing_ok=True)
    os.mkfifo(work / "named-pipe")
    with Simulator([{"tool_use": call}, {"text": "done"}]) as sim:
        out = run(["-p", "go", "--output-format", "json", "--max-duration", "5s"], sim, work, home)
        answer = sim.message_requests[1].body["messages"][-1]["content"][0]
    result = result_of(out)
    assert result["subtype"] == "success" and result["result"] == "done"
    assert answer["content"] in ("No matches found", "No files found")


def test_a_redos_schema_pattern_checks_the_answer_and_the_run_goes_on(place):
    work, home, _ = place
    schema = {"type": "object", "properties": {"id": {"type": "string", "pattern": "^(a+)+$"}}, "required": ["id"]}
    script = [{"tool_use": tool_use("StructuredOutput", id=REDOS_TEXT * 4)},
              {"tool_use": tool_use("StructuredOutput", id="aaa")}, {"text": "ok"}]
    with Simulator(script) as sim:
        out = run(["-p", "go", "--output-format", "json", "--json-schema", json.dumps(schema), "--max-duration", "5s"],
                  sim, work, home)
        refusal = sim.message_requests[1].body["messages"][-1]["content"][0]
    assert result_of(out)["structured_output"] == {"id": "aaa"}
    assert refusal["is_error"] and "does not match the pattern '^(a+)+$'" in refusal["content"]


def test_a_400_deep_answer_to_a_tree_schema_is_accepted(place):
    work, home, _ = place
    tree = {"$defs": {"n": {"type": "object", "properties": {"v": {"type": "integer"}, "next": {
        "anyOf": [{"$ref": "#/$defs/n"}, {"type": "null"}]}}, "required": ["v"]}}, "$ref": "#/$defs/n"}
    answer: dict | None = None
    for i in range(400):
        answer = {"v": i, "next": answer}
    with Simulator([{"tool_use": {"name": "StructuredOutput", "input": {"value": answer}}}, {"text": "ok"}]) as sim:
        out = run(["-p", "go", "--output-format", "json", "--json-schema", json.dumps(tree)], sim, work, home)
    assert result_of(out)["structured_output"] == answer


@pytest.mark.parametrize(("schema", "said"), [
    ({"$ref": "#"}, "#/$ref: leads back to # without going into a property or an item"),
    ({"$defs": {"a": {"$ref": "#/$defs/b"}, "b": {"allOf": [{"$ref": "#/$defs/a"}]}}, "$ref": "#/$defs/a"},
     "without going into a property or an item"),
    ({"type": "string", "pattern": "(?=a)"}, "#/pattern: uses look-ahead `(?=...)`, which loopwright does not support"),
    ({"type": "object", "properties": {"a": {"minLength": "x"}}}, "expected a whole number >= 0"),
])
def test_a_schema_that_could_hang_or_crash_is_refused_at_start(place, schema, said):
    work, home, _ = place
    with Simulator([{"text": "never"}]) as sim:
        out = run(["-p", "go", "--json-schema", json.dumps(schema)], sim, work, home)
        assert not sim.message_requests
    assert out.returncode == 2 and said in out.stderr and "Traceback" not in out.stderr


# ------------------------------------------------------------ limits during tools


def test_max_duration_stops_a_long_batch_of_tools(place):
    work, home, sid = place
    calls = [tool_use("Bash", command="echo $$ >> started; sleep 2") for _ in range(30)]
    with Simulator([{"tool_use": calls}, {"text": "never", "repeat": -1}]) as sim:
        # --no-sandbox: the test reads the commands' own pids and looks for them on the host (a
        # sandboxed command sees its PID namespace's numbers)
        out = run(["-p", "go", "--session-id", sid, "--output-format", "json", "--allowedTools", "Bash",
                   "--max-duration", "3s", "--no-sandbox"], sim, work, home)
        requests = len(sim.message_requests)
    result = result_of(out)
    assert result["subtype"] == "error_max_duration" and result["terminal_reason"] == "max_duration"
    assert requests == 1
    pids = (work / "started").read_text().split()
    assert 1 <= len(pids) <= 2 and all(gone(int(p)) for p in pids)  # 30 would take a minute
    answers = [b for b in resumable(records(home, work, sid))[-1].content]
    texts = [b.content for b in answers]
    assert len(answers) == 30 and all(b.is_error for b in answers[len(pids) - 1:])
    assert texts[len(pids) - 1] == DEADLINE_RUNNING and set(texts[len(pids):]) == {DEADLINE_WAITING}


def test_a_hung_backtracking_match_ends_at_the_deadline(place):
    work, home, _ = place
    (work / "a.txt").write_text(REDOS_TEXT + "\n")
    with Simulator([{"tool_use": tool_use("Grep", pattern="^(a+)+(?!x)$")}, {"text": "never"}]) as sim:
        out = run(["-p", "go", "--output-format", "json", "--max-duration", "3s"], sim, work, home)
    assert result_of(out)["subtype"] == "error_max_duration"
    assert not grep_workers()


def test_a_response_that_uses_up_the_budget_runs_none_of_its_tools(place):
    work, home, sid = place
    usage = {"input_tokens": 100_000, "output_tokens": 10_000}
    with Simulator([{"tool_use": tool_use("Bash", command="touch ran"), "usage": usage}]) as sim:
        out = run(["-p", "go", "--session-id", sid, "--output-format", "json", "--allowedTools", "Bash",
                   "--max-budget-usd", "0.01"], sim, work, home)
    result = result_of(out)
    assert result["subtype"] == "error_max_budget_usd" and not (work / "ran").exists()
    answer = resumable(records(home, work, sid))[-1].content[0]
    assert answer.is_error and answer.content.startswith("Not run: the response that asked for this call used up")


# ------------------------------------------------------------ SIGTERM during a hung match


def grep_workers(parent: int | None = None) -> list[int]:
    """Live Grep worker processes (of `parent`, if given)."""
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
            ppid = int(Path(f"/proc/{pid}/stat").read_bytes().rpartition(b")")[2].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        if b"grepworker.py" in cmdline and (parent is None or ppid == parent) and not gone(int(pid), within=0):
            found.append(int(pid))
    return found


@pytest.mark.parametrize("pattern, sig", [(r"^(a+)+(?<!x)$", signal.SIGTERM), (r"^(a|a)+(?=$)", signal.SIGTERM),
                                          (r"^(a+)+(?<!x)$", signal.SIGINT)])  # SIGINT: Ctrl-C
def test_sigterm_during_a_hung_match_ends_the_run(place, pattern, sig):
    work, home, sid = place
    (work / "a.txt").write_text(REDOS_TEXT + "\n")
    with Simulator([{"tool_use": tool_use("Grep", pattern=pattern)}, {"text": "never"}]) as sim:
        proc = subprocess.Popen(CLI + ["-p", "go", "--session-id", sid, "--output-format", "stream-json", "--verbose"],
                                cwd=work, env=env_for(sim, home), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                text=True)
        seen = []
        while not any('"tool_use"' in line for line in seen):  # the model asked for the search
            line = proc.stdout.readline()
            assert line, proc.stderr.read()
            seen.append(line)
        deadline = time.monotonic() + 2  # the match is under way: on a worker, or (once) on the event loop
        while not grep_workers(proc.pid) and time.monotonic() < deadline:
            time.sleep(0.05)
        workers = grep_workers(proc.pid)
        proc.send_signal(sig)
        try:
            stdout, stderr = proc.communicate(timeout=30)
        finally:
            proc.kill()
    assert proc.returncode == 130, stderr
    last = json.loads(stdout.splitlines()[-1])
    assert last["type"] == "result" and last["terminal_reason"] == "aborted"
    assert workers and all(gone(w) for w in workers) and "Traceback" not in stderr
    resumable(records(home, work, sid))
