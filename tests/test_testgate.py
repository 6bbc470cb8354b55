"""`RequireTests`, the capability that keeps a run that changed files from ending before its tests
passed, end to end: the real loop, the simulator over HTTP, the real Write tool and real Bash
(in the sandbox). Also the capability list's own checks."""

from __future__ import annotations

import pytest

from loopwright.agent import Agent
from loopwright.capabilities.testgate import FAILED, NOT_RUN, RequireTests, TestGateReport
from loopwright.permissions.decide import PermissionRules
from loopwright.providers.anthropic import AnthropicModel
from loopwright.testing import Simulator
from loopwright.testing.clock import FakeClock

pytestmark = pytest.mark.anyio
CHECK = "sh check.sh"


def bash(command):
    return {"tool_use": {"name": "Bash", "input": {"command": command}}}


def write(path, text):
    return {"tool_use": {"name": "Write", "input": {"file_path": str(path), "content": text}}}


def last_user_text(body):
    content = body["messages"][-1]["content"]
    return content if isinstance(content, str) else " ".join(b.get("text", "") for b in content if b["type"] == "text")


async def run(tmp_path, script, *capabilities):
    (tmp_path / "check.sh").write_text("test -f fixed.txt\n")  # the project's tests: pass once fixed.txt exists
    with Simulator(script) as sim:
        client = AnthropicModel(base_url=sim.base_url, api_key="sk-test")  # ours to close: the agent's run does not
        agent = Agent(model_client=client, cwd=tmp_path,
                      clock=FakeClock(), permissions=PermissionRules(allow=("Bash", "Write")),
                      capabilities=capabilities)
        try:
            result = await agent.run("fix it")
        finally:
            await client.aclose()
        assert not sim.unmatched, "the script did not cover a request"
        return result, [r.body for r in sim.message_requests]


async def test_a_change_is_sent_back_until_the_tests_ran_and_passed(tmp_path):
    result, bodies = await run(tmp_path, [
        write(tmp_path / "notes.txt", "a change"), {"text": "Done."},  # changed, stopped untested
        bash(CHECK), {"text": "Done."},  # tested, but the tests fail
        write(tmp_path / "fixed.txt", "fixed"), bash(CHECK), {"text": "Done, tests pass."},
    ], RequireTests(CHECK))
    assert "run the tests with `sh check.sh`" in bodies[0]["system"][-1]["text"]
    assert last_user_text(bodies[2]) == NOT_RUN.format(command=CHECK)
    assert last_user_text(bodies[4]) == FAILED.format(command=CHECK)
    assert len(bodies) == 7
    assert (result.subtype, result.is_error, result.result) == ("success", False, "Done, tests pass.")
    assert result.reports["tests"] == TestGateReport(CHECK, runs=2, passed=1, nudges=2, verified=True)
    assert result.to_json()["tests"] == {"command": CHECK, "runs": 2, "passed": 1, "nudges": 2, "verified": True}
    assert not any("without a passing" in w for w in result.warnings)


async def test_a_run_that_will_not_test_ends_after_its_nudges_with_a_warning(tmp_path):
    # `sh check.sh; true` passes whatever the tests say: it is not taken as a test run
    result, bodies = await run(tmp_path, [
        write(tmp_path / "fixed.txt", "x"), bash(f"{CHECK}; true"), {"text": "Done.", "repeat": 2},
    ], RequireTests(CHECK, max_nudges=1))
    assert len(bodies) == 4 and last_user_text(bodies[3]) == NOT_RUN.format(command=CHECK)
    assert result.subtype == "success"
    assert result.reports["tests"] == TestGateReport(CHECK, runs=0, passed=0, nudges=1, verified=False)
    assert "The run ended without a passing `sh check.sh` after its last change" in result.warnings


async def test_a_run_that_changes_nothing_is_not_held(tmp_path):
    result, bodies = await run(tmp_path, [bash("ls"), {"text": "Nothing to change."}], RequireTests(CHECK))
    assert len(bodies) == 2 and result.subtype == "success"
    assert result.reports["tests"].verified and result.reports["tests"].nudges == 0


async def test_each_run_starts_afresh(tmp_path):
    gate = RequireTests(CHECK, max_nudges=1)
    first, _ = await run(tmp_path, [write(tmp_path / "a.txt", "a"), {"text": "Done.", "repeat": 2}], gate)
    second, bodies = await run(tmp_path, [{"text": "Nothing."}], gate)
    assert first.reports["tests"].nudges == 1 and not first.reports["tests"].verified
    assert len(bodies) == 1 and second.reports["tests"] == TestGateReport(CHECK, 0, 0, 0, True)


def test_bad_settings_are_named():
    with pytest.raises(ValueError, match="command must be the non-empty test command line"):
        RequireTests("  ")
    with pytest.raises(ValueError, match="max_nudges must be an integer >= 0"):
        RequireTests(CHECK, max_nudges=-1)


async def test_two_capabilities_of_one_name_are_refused_before_any_call(tmp_path):
    with pytest.raises(ValueError, match="the name 'tests' of RequireTests is used twice"):
        await run(tmp_path, [], RequireTests(CHECK), RequireTests("make test"))
