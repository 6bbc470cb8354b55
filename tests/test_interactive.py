"""`loopwright` at a terminal, driven through a real pseudo-terminal against the simulator: a
prompt answered, a tool call asked about and allowed or refused, commands, Ctrl-D to leave.
Waits are bounded (a wait for text fails the test with what was seen); no time is asserted."""

from __future__ import annotations

import codecs
import json
import os
import pty
import select
import subprocess
import sys
import time
from pathlib import Path

import pytest

from loopwright.testing import Simulator


class Terminal:
    def __init__(self, tmp_path, sim, args=(), cwd=None, env=None):
        """`cwd`: the folder to start in (default `tmp_path`); `env`: variables to add."""
        self.master, slave = pty.openpty()
        environment = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_",))}
        environment.update(ANTHROPIC_API_KEY="sk-test", ANTHROPIC_BASE_URL=sim.base_url,
                           HOME=str(tmp_path / "fakehome"), TERM="dumb")
        environment.update(env or {})
        self.proc = subprocess.Popen([sys.executable, "-m", "loopwright", *args], stdin=slave, stdout=slave,
                                     stderr=slave, cwd=cwd or tmp_path, env=environment, close_fds=True)
        os.close(slave)
        self.seen, self.pos = "", 0  # expect() looks only after the last thing it found
        self.decoder = codecs.getincrementaldecoder("utf-8")("replace")  # a read may end mid-character

    def expect(self, text, within=60.0):
        deadline = time.monotonic() + within
        while text not in self.seen[self.pos:]:
            left = deadline - time.monotonic()
            if left <= 0:
                raise AssertionError(f"never saw {text!r}; the terminal showed:\n{self.seen}")
            ready, _, _ = select.select([self.master], [], [], min(left, 0.5))
            if ready:
                try:
                    self.seen += self.decoder.decode(os.read(self.master, 4096))
                except OSError:  # the other side closed
                    if text not in self.seen[self.pos:]:
                        raise AssertionError(f"closed before {text!r}:\n{self.seen}") from None
        self.pos = self.seen.index(text, self.pos) + len(text)
        return self

    def send(self, line):
        os.write(self.master, line.encode() + b"\n")
        return self

    def close(self):
        try:
            code = self.proc.wait(timeout=30)
        finally:
            self.proc.kill()
            os.close(self.master)
        return code


@pytest.fixture
def terminal(tmp_path):
    opened = []

    def start(script, args=()):
        sim = Simulator(script).start()
        t = Terminal(tmp_path, sim, args)
        opened.append((t, sim))
        return t, sim

    yield start
    for t, sim in opened:
        t.proc.kill()
        sim.stop()


def test_a_prompt_is_answered_and_exit_leaves(terminal):
    t, sim = terminal([{"text": "hello from the model"}])
    t.expect("› ").send("say hello").expect("hello from the model").expect("› ")
    assert t.seen.count("hello from the model") == 1, t.seen  # the answer is shown once, not again at the end
    assert "1 turn ·" in t.seen and "1 turns" not in t.seen, t.seen
    t.send("/cost").expect("this session").expect("› ").send("/exit")
    assert t.close() == 0 and len(sim.message_requests) == 1


def test_a_tool_call_is_asked_about_and_runs_when_allowed(terminal, tmp_path):
    t, sim = terminal([{"tool_use": {"name": "Bash", "input": {"command": "touch marker"}}}, {"text": "made it"}])
    t.expect("› ").send("make a marker").expect("allow? [y]es / [n]o / [a]lways")
    t.send("y").expect("made it").expect("› ")
    t.send("/exit")
    assert t.close() == 0 and (tmp_path / "marker").exists()


def test_a_refused_tool_call_never_runs_and_the_model_is_told(terminal, tmp_path):
    t, sim = terminal([{"tool_use": {"name": "Bash", "input": {"command": "touch marker"}}}, {"text": "understood"}])
    t.expect("› ").send("make a marker").expect("allow?").send("n").expect("understood").expect("› ")
    os.write(t.master, b"\x04")  # Ctrl-D
    assert t.close() == 0 and not (tmp_path / "marker").exists()
    answer = sim.message_requests[1].body["messages"][-1]["content"][0]
    assert answer["type"] == "tool_result" and answer.get("is_error")


def test_an_initial_prompt_runs_first_and_help_lists_the_commands(terminal):
    t, _ = terminal([{"text": "first answer"}], args=("start here",))
    t.expect("first answer").expect("› ").send("/help").expect("/goal CONDITION").send("/exit")
    assert t.close() == 0


def test_ctrl_c_stops_the_running_turn_not_the_session(terminal):
    import signal

    t, sim = terminal([{"text": "slow", "delay": 30}, {"text": "still here"}])
    t.expect("› ").send("take your time")
    deadline = time.monotonic() + 30
    while not sim.message_requests and time.monotonic() < deadline:
        time.sleep(0.05)
    t.proc.send_signal(signal.SIGINT)
    t.expect("Interrupted by you").expect("› ").send("are you there?").expect("still here").expect("› ").send("/exit")
    assert t.close() == 0


def test_esc_stops_the_running_turn_in_plain_lines_and_what_was_typed_waits(terminal):
    t, sim = terminal([{"tool_use": {"name": "Bash", "input": {"command": "sleep 30"}}}, {"text": "after the stop"}],
                      args=("--allowedTools", "Bash(sleep *)"))
    t.expect("› ").send("wait a while").expect("sleep 30")
    os.write(t.master, b"still ")  # typed while the turn runs
    os.write(t.master, b"\x1b")
    t.expect("Interrupted by you").expect("› still ")  # the typed words wait in the next prompt
    t.send("here").expect("after the stop").expect("› ").send("/exit")
    assert t.close() == 0
    last = sim.message_requests[-1].body["messages"]
    assert "still here" in str(last[-1]["content"])
    answered = last[-2]["content"]  # the interrupted call is answered: the conversation stays valid
    assert any(b.get("type") == "tool_result" for b in answered if isinstance(b, dict)), last


def test_a_line_typed_and_ended_during_a_turn_is_the_next_prompt(terminal):
    t, sim = terminal([{"text": "first done", "delay": 2}, {"text": "second done"}])
    t.expect("› ").send("first")
    deadline = time.monotonic() + 30
    while not sim.message_requests and time.monotonic() < deadline:
        time.sleep(0.05)
    os.write(t.master, b"second\r")  # typed and ended while the first turn runs
    t.expect("queued").expect("first done").expect("second done").expect("› ").send("/exit")
    assert t.close() == 0
    prompts = [r.body["messages"][-1]["content"] for r in sim.message_requests]
    assert len(prompts) == 2 and "second" in str(prompts[1]) and "first" not in str(prompts[1][-1])


# ---------------------------------------------------------------- workspace trust


HOOKED = ("SessionStart", "UserPromptSubmit", "PreToolUse", "PostToolUse", "Stop", "SessionEnd")


def project_hook(folder):
    """A project whose hooks leave a marker each (`hook-SessionStart`, …): the code a cloned
    repository would run. Returns SessionStart's marker."""
    (folder / ".claude").mkdir(exist_ok=True)
    hooks = {event: [{"hooks": [{"type": "command", "command": f"touch hook-{event}"}]}] for event in HOOKED}
    (folder / ".claude/settings.json").write_text(json.dumps({
        "hooks": hooks, "permissions": {"allow": ["Bash(touch *)"]}, "env": {"FROM_PROJECT": "1"}}))
    return folder / "hook-SessionStart"


def hooks_ran(folder):
    """The project hooks that ran in `folder`, by event."""
    return sorted(p.name.removeprefix("hook-") for p in folder.glob("hook-*"))


def loopwright(tmp_path, *args):
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANTHROPIC_")}  # the terminal's LOOPWRIGHT_HOME
    env.update(HOME=str(tmp_path / "fakehome"))
    return subprocess.run([sys.executable, "-m", "loopwright", *args], capture_output=True, text=True, cwd=tmp_path,
                          env=env, timeout=60)


def test_the_trust_question_comes_first_and_a_declined_folder_runs_no_project_hook(terminal, tmp_path):
    project_hook(tmp_path)
    t, sim = terminal([{"tool_use": {"name": "Bash", "input": {"command": "touch by-tool"}}}, {"text": "first"}])
    t.expect("hooks SessionStart, UserPromptSubmit").expect("allow rules Bash(touch *); env FROM_PROJECT")
    t.expect(f"Trust {tmp_path}?").expect("[y]es / [n]o")
    assert hooks_ran(tmp_path) == []
    t.send("n").expect("not trusted").expect("› ").send("go")
    t.expect("allow?").send("n").expect("first").expect("› ").send("/exit")  # no project allow rule either
    assert t.close() == 0 and hooks_ran(tmp_path) == [] and not (tmp_path / "by-tool").exists()
    store = Path(os.environ["LOOPWRIGHT_HOME"]) / "trust.json"  # the test session's loopwright home
    assert store.stat().st_mode & 0o777 == 0o600 and store.parent.stat().st_mode & 0o777 == 0o700
    # restarted: the answer was remembered, so no question and still no project hook of any event
    t, _ = terminal([{"tool_use": {"name": "Bash", "input": {"command": "touch by-tool"}}}, {"text": "again"}])
    t.expect("not trusted").expect("› ").send("hi").expect("allow?").send("n").expect("again").expect("› ")
    t.send("/exit")
    assert t.close() == 0 and "Trust " not in t.seen and hooks_ran(tmp_path) == []


def test_a_trusted_folder_is_not_asked_again_and_runs_its_hooks(terminal, tmp_path):
    project_hook(tmp_path)
    touch = {"tool_use": {"name": "Bash", "input": {"command": "touch by-tool"}}}
    t, _ = terminal([touch, {"text": "first"}])
    t.expect("[y]es / [n]o")
    assert hooks_ran(tmp_path) == []  # asked before any project hook ran
    t.send("y").expect("› ").send("hi").expect("first").expect("› ").send("/exit")
    assert t.close() == 0 and hooks_ran(tmp_path) == sorted(HOOKED) and (tmp_path / "by-tool").exists()
    for marker in tmp_path.glob("hook-*"):
        marker.unlink()
    t, _ = terminal([touch, {"text": "second"}])
    t.expect("› ").send("hi").expect("second").expect("› ").send("/exit")
    assert t.close() == 0 and "[y]es / [n]o" not in t.seen and hooks_ran(tmp_path) == sorted(HOOKED)


def test_loopwright_trust_decides_ahead_and_revoke_asks_again(terminal, tmp_path):
    marker = project_hook(tmp_path)
    out = loopwright(tmp_path, "trust")
    assert out.returncode == 0 and f"Trusted {tmp_path}" in out.stdout, out.stderr
    assert "trusted " in loopwright(tmp_path, "trust", "--list").stdout
    t, _ = terminal([{"text": "ok"}])
    t.expect("› ").send("hi").expect("ok").expect("› ").send("/exit")
    assert t.close() == 0 and "[y]es / [n]o" not in t.seen and marker.exists()
    assert f"Forgot {tmp_path}" in loopwright(tmp_path, "trust", "--revoke", str(tmp_path)).stdout
    t, _ = terminal([{"text": "ok"}])
    t.expect("[y]es / [n]o").send("n").expect("› ").send("/exit")
    assert t.close() == 0
    assert loopwright(tmp_path, "trust", "/no/such/folder").returncode == 2


def test_a_folder_with_nothing_to_trust_is_not_asked_about(terminal, tmp_path):
    (tmp_path / ".claude").mkdir()
    (tmp_path / ".claude/settings.json").write_text(json.dumps({"permissions": {"deny": ["WebFetch"]},
                                                                "model": "haiku"}))
    t, _ = terminal([{"text": "ok"}])
    t.expect("› ").send("hi").expect("ok").expect("› ").send("/exit")
    assert t.close() == 0 and "[y]es / [n]o" not in t.seen


def test_a_projects_mcp_servers_wait_for_trust(terminal, tmp_path):
    """A cloned repository's `.mcp.json` starts programs: declined, none of them runs."""
    toolbox = Path(__file__).parent / "mcpservers" / "toolbox.py"
    start = f"touch mcp-ran; exec {sys.executable} {toolbox}"
    (tmp_path / ".mcp.json").write_text(json.dumps({"mcpServers": {"tb": {"command": "sh", "args": ["-c", start]}}}))
    t, sim = terminal([{"text": "no servers"}])
    t.expect(".mcp.json: MCP servers tb").expect("[y]es / [n]o").send("n").expect("not trusted")
    t.expect("› ").send("go").expect("no servers").expect("› ").send("/exit")
    assert t.close() == 0 and not (tmp_path / "mcp-ran").exists()
    assert not [x for x in sim.message_requests[0].body["tools"] if x["name"].startswith("mcp__")]
    assert loopwright(tmp_path, "trust", str(tmp_path)).returncode == 0
    t, sim = terminal([{"text": "with servers"}])
    t.expect("› ").send("go").expect("with servers").expect("› ").send("/exit")
    assert t.close() == 0 and (tmp_path / "mcp-ran").exists()
    assert "mcp__tb__add" in [x["name"] for x in sim.message_requests[0].body["tools"]]


def test_an_unknown_command_is_said_and_the_session_goes_on(terminal):
    t, sim = terminal([{"text": "answered"}])
    t.expect("› ").send("/nope now").expect("nknown command /nope").expect("› ")
    t.send("hello").expect("answered").expect("› ").send("/exit")
    assert t.close() == 0 and len(sim.message_requests) == 1
