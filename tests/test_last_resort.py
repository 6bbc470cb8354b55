"""The last resort: an exception nobody expected ends the run with an `error_during_execution`
result (`terminal_reason: internal_error`) whose error line names a crash log holding the
traceback; tool calls it cut short are answered, so the transcript is one a resume continues;
SessionEnd still fires; the terminal never shows a traceback. Library runs through the loopback
simulator, and the real `loopwright` process with a bug planted in it."""

from __future__ import annotations

import json
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from loopwright import Agent, Session
from loopwright.core.events import AssistantMessage, ToolStarted
from loopwright.core.ports import NO_HOOK_RESULT
from loopwright.engine.dispatch import CRASH_RUNNING, CRASH_WAITING
from loopwright.permissions.rules import PermissionRules
from loopwright.providers.anthropic import AnthropicModel
from loopwright.session import open_session
from loopwright.session.records import Record, restore
from loopwright.stores.crashlog import write_crash_log
from loopwright.stores.jsonl import JsonlStore, read_records
from loopwright.testing import Simulator
from test_crash import env_for, transcript

pytestmark = [pytest.mark.anyio, pytest.mark.usefixtures("http_library")]
TWO_CALLS = [{"tool_use": [{"name": "Bash", "input": {"command": "echo one > one.txt"}},
                           {"name": "Bash", "input": {"command": "echo two > two.txt"}}]},
             {"text": "never"}]


class RaisingHooks:
    """A hook runner (the `HookRunner` port) with a bug: it fails on one event."""

    def __init__(self, event: str) -> None:
        self.event = event

    async def run(self, event, payload, *, match=None):
        if event == self.event:
            raise KeyError("planted hook-runner bug")
        return NO_HOOK_RESULT


def failing_on(kind):
    def on_event(event):
        if isinstance(event, kind):
            raise RuntimeError("planted renderer bug")
    return on_event


async def crashed_run(tmp_path, *, on_event=None, hooks=None):
    work, home = tmp_path / "work", tmp_path / "home"
    work.mkdir()
    session = open_session(JsonlStore(home, work), str(work))
    with Simulator(TWO_CALLS) as sim:
        agent = Agent(model_client=AnthropicModel(base_url=sim.base_url, api_key="sk-test"), cwd=work,
                      permissions=PermissionRules(allow=("Bash",)), hooks=hooks,
                      crash_log=lambda exc: write_crash_log(exc, {"LOOPWRIGHT_HOME": str(home)}))
        try:
            result = await agent.run("go", on_event=on_event, session=Session.opened(session))
        finally:
            session.close()
    records, _ = read_records(Path(session.transcript_path))
    return result, records, work, home


@pytest.mark.parametrize(("on_event", "hooks", "bug", "answered"), [
    (failing_on(ToolStarted), None, "RuntimeError: planted renderer bug", CRASH_RUNNING),
    (failing_on(AssistantMessage), None, "RuntimeError: planted renderer bug", CRASH_WAITING),
    (None, RaisingHooks("PreToolUse"), "KeyError: 'planted hook-runner bug'", CRASH_RUNNING),
])
async def test_an_unexpected_exception_ends_the_run_with_a_result(tmp_path, on_event, hooks, bug, answered):
    result, records, work, home = await crashed_run(tmp_path, on_event=on_event, hooks=hooks)
    assert (result.subtype, result.terminal_reason, result.is_error) == ("error_during_execution", "internal_error", True)
    error = result.errors[0]
    assert error.startswith(f"Internal error: {bug} (a bug in loopwright; the traceback is in {home}/logs/crash-")
    log = Path(error.rsplit("the traceback is in ", 1)[1].rstrip(")"))
    assert "Traceback (most recent call last)" in log.read_text() and bug.split(": ")[1] in log.read_text()
    assert oct(log.stat().st_mode & 0o777) == "0o600"
    assert not (work / "one.txt").exists() and not (work / "two.txt").exists()  # nothing ran after the bug
    assert records[-1]["subtype"] == "run_result" and records[-1]["terminalReason"] == "internal_error"
    restored = restore([Record.from_json(r) for r in records])
    assert restored.recovered == ()  # a resume finds every call answered, nothing to guess
    assert [b.content for b in restored.messages[-1].content] == [answered, CRASH_WAITING]


async def test_a_tool_with_a_bug_in_its_input_check_is_an_error_result(tmp_path):
    from loopwright.core.ports import ToolOutput

    class Buggy:
        name, description, read_only = "Buggy", "a tool with a bug", True
        input_schema = {"type": "object"}

        def access(self, tool_input):
            from loopwright.core.ports import Access

            return Access("session")

        def validate(self, raw):
            return raw["missing"]

        async def run(self, args, ctx):
            return ToolOutput("never")

    script = [{"tool_use": {"name": "Buggy", "input": {}}}, {"text": "fine"}]
    with Simulator(script) as sim:
        agent = Agent(model_client=AnthropicModel(base_url=sim.base_url, api_key="sk-test"), cwd=tmp_path,
                      tools=[Buggy()])
        result = await agent.run("go")
        answer = sim.message_requests[1].body["messages"][-1]["content"][0]
    assert result.subtype == "success" and answer["is_error"]
    assert answer["content"] == "The Buggy tool failed to check its input with KeyError: 'missing'"


# ------------------------------------------------------------ the real process


PLANTED = """
import sys
from loopwright.cli import {module} as target

def planted(*args, **kwargs):
    raise RuntimeError("planted bug")

{patch}
from loopwright.cli.main import main
sys.exit(main(sys.argv[1:]))
"""


def run_with_bug(tmp_path, sim, patch, args, module="main"):
    work, home = tmp_path / "work", tmp_path / "home"
    work.mkdir(exist_ok=True)
    code = PLANTED.format(module=module, patch=patch)
    return subprocess.run([sys.executable, "-c", code, *args], cwd=work, env=env_for(sim, home),
                          capture_output=True, text=True, timeout=60), work, home


@pytest.mark.parametrize("fmt", ["json", "stream-json", "text"])
def test_a_bug_in_a_real_run_is_a_result_a_log_and_session_end(tmp_path, fmt):
    sid = str(uuid.uuid4())
    ended = tmp_path / "session-ended"
    settings = {"hooks": {"SessionEnd": [{"hooks": [{"type": "command", "command": f"touch {ended}"}]}]}}
    patch = "from loopwright.engine import dispatch\ndispatch.ToolDispatcher._one = planted"
    with Simulator(TWO_CALLS) as sim:
        out, work, home = run_with_bug(tmp_path, sim, patch, [
            "-p", "go", "--session-id", sid, "--output-format", fmt, "--verbose", "--allowedTools", "Bash",
            "--settings", json.dumps(settings)])
    assert out.returncode == 1 and "Traceback" not in out.stderr + out.stdout
    assert ended.exists()  # SessionEnd fired
    said = "Internal error: RuntimeError: planted bug (a bug in loopwright; the traceback is in "
    if fmt == "text":
        assert said in out.stdout
    else:
        result = json.loads(out.stdout.splitlines()[-1])
        assert result["terminal_reason"] == "internal_error" and result["errors"][0].startswith(said)
    log = next((home / "logs").glob("crash-*.log"))
    assert "Traceback (most recent call last)" in log.read_text() and str(log) in out.stdout
    records, _ = read_records(transcript(home, work, sid))
    assert [r["type"] for r in records][-3:] == ["tool_started", "user", "system"]  # started, answered, result
    assert restore([Record.from_json(r) for r in records]).recovered == ()


@pytest.mark.parametrize("fmt", ["json", "text"])
def test_a_bug_outside_the_run_is_one_line_and_a_result(tmp_path, fmt):
    with Simulator([{"text": "hello"}]) as sim:
        out, _, home = run_with_bug(tmp_path, sim, "target.print_result = planted", ["-p", "go", "--output-format", fmt],
                                    module="headless")
    assert out.returncode == 1 and "Traceback" not in out.stderr
    line = [x for x in out.stderr.splitlines() if x.startswith("loopwright: error: Internal error:")]
    assert len(line) == 1 and "RuntimeError: planted bug" in line[0] and str(home / "logs") in line[0]
    if fmt == "json":
        assert json.loads(out.stdout.splitlines()[-1])["terminal_reason"] == "internal_error"
    assert "planted bug" in next((home / "logs").glob("crash-*.log")).read_text()
