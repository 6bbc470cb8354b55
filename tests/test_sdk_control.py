"""The stream-json control channel line by line, as a host that misbehaves would drive it: an
unanswered can_use_tool times out and is withdrawn, an interrupt withdraws what is pending
before it is answered, SIGTERM interrupts, stdin's end lets the running turn finish."""

import json
import os
import queue
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from loopwright.testing import Simulator

SRC = Path(__file__).resolve().parent.parent / "src"
ARGS = ["--output-format", "stream-json", "--verbose", "--system-prompt", ""]
TOUCH = {"name": "Bash", "input": {"command": "touch proof.txt && echo created"}}


class Host:
    """loopwright started as the SDK starts it, its stdout read in a thread."""

    def __init__(self, sim, tmp_path, flags=(), env=None):
        work, home = tmp_path / "work", tmp_path / "home"
        work.mkdir()
        home.mkdir()
        self.work = work
        e = {k: v for k, v in os.environ.items() if not k.startswith("ANTHROPIC_")}
        e.update(ANTHROPIC_BASE_URL=sim.base_url, ANTHROPIC_API_KEY="sk-test", HOME=str(home),
                 LOOPWRIGHT_HOME=str(home / ".lw"), PYTHONPATH=str(SRC), **(env or {}))
        self.proc = subprocess.Popen([sys.executable, "-m", "loopwright", *ARGS, *flags, "--input-format", "stream-json"],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                     env=e, cwd=work)
        self.frames: queue.Queue = queue.Queue()
        self.seen: list[dict] = []
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        for line in self.proc.stdout:
            self.frames.put(json.loads(line))
        self.frames.put(None)

    def send(self, obj):
        self.proc.stdin.write(json.dumps(obj) + "\n")
        self.proc.stdin.flush()

    def user(self, text):
        self.send({"type": "user", "session_id": "", "message": {"role": "user", "content": text},
                   "parent_tool_use_id": None})

    def until(self, test, timeout=30):
        """Frames up to and including the first that passes `test`."""
        got = []
        while True:
            frame = self.frames.get(timeout=timeout)
            assert frame is not None, f"stdout ended before the awaited frame; stderr: {self.proc.stderr.read()}"
            got.append(frame)
            self.seen.append(frame)
            if test(frame):
                return got

    def finish(self, timeout=30):
        self.proc.stdin.close()
        return self.proc.wait(timeout)


def is_request(subtype):
    return lambda f: f["type"] == "control_request" and f["request"]["subtype"] == subtype


def is_result(f):
    return f["type"] == "result"


def initialize(host):
    host.send({"type": "control_request", "request_id": "req_1", "request": {"subtype": "initialize", "hooks": None}})
    host.until(lambda f: f["type"] == "control_response")


def test_an_unanswered_can_use_tool_times_out_withdrawn_and_denied(tmp_path):
    with Simulator([{"tool_use": TOUCH}, {"text": "Could not."}]) as sim:
        host = Host(sim, tmp_path, ["--permission-prompt-tool", "stdio"], {"LOOPWRIGHT_SDK_REQUEST_TIMEOUT": "1"})
        initialize(host)
        host.user("Create proof.txt")
        asked = host.until(is_request("can_use_tool"))[-1]
        frames = host.until(is_result)
        assert host.finish() == 0
    cancels = [f["request_id"] for f in frames if f["type"] == "control_cancel_request"]
    assert cancels == [asked["request_id"]] and not (host.work / "proof.txt").exists()
    assert [d["tool_name"] for d in frames[-1]["permission_denials"]] == ["Bash"]
    results = [b for f in frames if f["type"] == "user" for b in f["message"]["content"] if b["type"] == "tool_result"]
    assert "no answer to can_use_tool" in json.dumps(results)


def test_an_interrupt_withdraws_the_pending_question_first_and_the_session_goes_on(tmp_path):
    with Simulator([{"tool_use": TOUCH}, {"text": "Still here."}]) as sim:
        host = Host(sim, tmp_path, ["--permission-prompt-tool", "stdio"])
        initialize(host)
        host.user("Create proof.txt")
        asked = host.until(is_request("can_use_tool"))[-1]
        host.send({"type": "control_request", "request_id": "req_2", "request": {"subtype": "interrupt"}})
        frames = host.until(is_result)
        host.user("Are you still there?")
        second = host.until(is_result)[-1]
        code = host.finish()
    kinds = [(f["type"], f.get("request_id") or f.get("response", {}).get("request_id")) for f in frames]
    assert kinds.index(("control_cancel_request", asked["request_id"])) < kinds.index(("control_response", "req_2"))
    assert frames[-1]["subtype"] == "error_during_execution" and frames[-1]["is_error"] is True
    assert second["result"] == "Still here." and code == 0


def test_sigterm_interrupts_the_turn_and_ends_the_process(tmp_path):
    slow = {"name": "Bash", "input": {"command": "sleep 30"}}
    with Simulator([{"tool_use": slow}]) as sim:
        host = Host(sim, tmp_path, ["--allowedTools", "Bash"])
        host.user("Sleep")
        host.until(lambda f: f["type"] == "assistant")
        host.proc.send_signal(signal.SIGTERM)
        result = host.until(is_result, timeout=10)[-1]
        code = host.proc.wait(10)
    assert result["is_error"] is True and result["terminal_reason"] == "aborted" and code == 1


def test_stdin_end_lets_the_running_turn_finish(tmp_path):
    work = {"name": "Bash", "input": {"command": "sleep 1 && echo done"}}
    with Simulator([{"tool_use": work}, {"text": "Finished."}]) as sim:
        host = Host(sim, tmp_path, ["--allowedTools", "Bash"])
        host.user("Work")
        code = host.finish()
        frames = host.until(is_result)
    assert frames[-1]["result"] == "Finished." and code == 0


@pytest.mark.parametrize("answer", [{"subtype": "error", "error": "callback exploded"},
                                    {"subtype": "success", "response": {}}])
def test_a_hook_callback_is_asked_and_a_failed_one_does_not_end_the_run(tmp_path, answer):
    hooks = {"Stop": [{"matcher": None, "hookCallbackIds": ["hook_0"]}]}
    with Simulator([{"text": "Done."}]) as sim:
        host = Host(sim, tmp_path)
        host.send({"type": "control_request", "request_id": "req_1", "request": {"subtype": "initialize", "hooks": hooks}})
        init = host.until(lambda f: f["type"] == "control_response")[-1]
        host.user("Go")
        asked = host.until(is_request("hook_callback"))[-1]
        host.send({"type": "control_response", "response": {"request_id": "nobody", "subtype": "success"}})  # stray
        host.send({"type": "control_response", "response": {**answer, "request_id": asked["request_id"]}})
        result = host.until(is_result)[-1]
        code = host.finish()
    assert init["response"]["response"]["hooks_applied"] is True
    assert asked["request"]["callback_id"] == "hook_0" and asked["request"]["input"]["hook_event_name"] == "Stop"
    assert result["result"] == "Done." and not result["is_error"] and code == 0


def test_stdin_read_after_the_session_ended_is_dropped_without_a_traceback():
    """Regression: a bad line ends the session while the reader thread still reads the rest of
    stdin; its hand-off to the closed event loop printed a thread traceback (seen in CI)."""
    import asyncio
    import io

    from loopwright.cli.sdk.mode import read_stdin

    loop = asyncio.new_event_loop()
    loop.close()
    errors = []
    server = type("Ended", (), {"on_line": lambda self, line: None, "on_eof": lambda self: None})()
    thread = threading.Thread(target=lambda: _catching(errors, read_stdin, loop, server, io.StringIO("late line\n")))
    thread.start()
    thread.join(10)
    assert not thread.is_alive() and errors == []


def _catching(errors, fn, *args):
    try:
        fn(*args)
    except BaseException as exc:  # noqa: BLE001 - the test asserts that nothing escapes
        errors.append(exc)


def test_an_interrupt_stops_a_slash_workflow_and_the_session_goes_on(tmp_path):
    rules = {"rules": [{"match": {"last_user_contains": "SLOW"}, "responses": [{"text": "late", "delay": 30}]},
                       {"responses": [{"text": "Still here.", "repeat": -1}]}]}
    with Simulator(rules) as sim:
        host = Host(sim, tmp_path)
        folder = host.work / ".loopwright" / "workflows"
        folder.mkdir(parents=True)
        (folder / "slow.py").write_text("async def main(wf, args):\n    return await wf.agent('SLOW ' + ' '.join(args))\n")
        initialize(host)
        host.user("/slow one")
        host.until(lambda f: f["type"] == "system" and f["subtype"] == "workflow_status" and f["running"] == 1)
        host.send({"type": "control_request", "request_id": "req_2", "request": {"subtype": "interrupt"}})
        stopped = host.until(is_result, timeout=15)[-1]
        host.user("Are you still there?")
        second = host.until(is_result)[-1]
        code = host.finish()
    assert stopped["is_error"] is True and stopped["terminal_reason"] == "aborted", stopped
    assert second["result"] == "Still here." and code == 0


def test_every_control_request_gets_exactly_one_answer_and_a_malformed_one_an_error_naming_the_field(tmp_path):
    def request(rid, body):
        line = {"type": "control_request", "request": body}
        if rid is not None:
            line["request_id"] = rid
        return line

    sent = [
        request("r1", {"subtype": "set_permission_mode", "mode": "plan"}),  # before any initialize
        request(None, {"subtype": "initialize", "hooks": None}),
        request("r2", {"subtype": "initialize", "hooks": {"PreToolUse": "nope"}}),
        request("r3", {"subtype": "initialize", "hooks": {"PreToolUse": [{"matcher": "Bash", "hookCallbackIds": [1]}]}}),
        request("r4", "initialize"),
        request("r5", {"subtype": "no_such_request"}),
        request("r6", {"subtype": "initialize", "hooks": None}),
        request("r7", {"subtype": "initialize", "hooks": None}),  # a second one: success again, as Claude Code
        request("r8", {"subtype": "mcp_status"}),
    ]
    with Simulator([]) as sim:
        host = Host(sim, tmp_path)
        for line in sent:
            host.send(line)
        assert host.finish() == 0
        stderr = host.proc.stderr.read()
    frames = []
    while (frame := host.frames.get(timeout=10)) is not None:
        frames.append(frame)
    answers = [f["response"] for f in frames if f["type"] == "control_response"]
    assert [a["request_id"] for a in answers] == [f"r{i}" for i in range(1, 9)]
    by_id = {a["request_id"]: a for a in answers}
    assert [by_id[f"r{i}"]["subtype"] for i in (1, 6, 7, 8)] == ["success"] * 4
    assert by_id["r2"]["subtype"] == "error" and "hooks.PreToolUse: expected a list" in by_id["r2"]["error"]
    assert "hooks.PreToolUse[0].hookCallbackIds: expected a list of strings" in by_id["r3"]["error"]
    assert "request: expected an object" in by_id["r4"]["error"]
    assert by_id["r5"]["error_code"] == "unsupported_request"
    assert "has no request_id" in stderr and "cannot be answered" in stderr
    assert "Traceback" not in stderr
