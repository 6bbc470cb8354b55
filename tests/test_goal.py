"""Goal loops end to end: the real loop, adapter and tools against the simulator, which plays
both the worker and the evaluator (routed by the evaluator's system prompt)."""

import pytest

from loopwright.agent import Agent
from loopwright.core.events import GoalStatus
from loopwright.engine.goal import GoalSpec
from loopwright.permissions.decide import PermissionRules
from loopwright.policy.bounds import parse_bounds
from loopwright.policy.goal_verdict import parse_verdict
from loopwright.providers.anthropic import AnthropicModel
from loopwright.testing import Simulator
from loopwright.testing.clock import FakeClock

pytestmark = pytest.mark.anyio

JUDGE = {"system_contains": "You decide whether an agent has met its goal"}


def verdict(ok, reason, impossible=False):
    body = {"ok": ok, "reason": reason} | ({"impossible": True} if impossible else {})
    import json

    return {"text": json.dumps(body)}


def bash(command):
    return {"tool_use": {"name": "Bash", "input": {"command": command}}}


def script(worker, judge=()):
    return {"rules": [{"match": JUDGE, "responses": list(judge)}, {"responses": list(worker)}]}


@pytest.fixture
def goal_run(tmp_path):
    async def go(worker, judge=(), clock=None, **spec_kw):
        events = []
        with Simulator(script(worker, judge)) as sim:
            agent = Agent(model_client=AnthropicModel(base_url=sim.base_url, api_key="sk-test"), cwd=tmp_path,
                          clock=clock or FakeClock(), permissions=PermissionRules(allow=("Bash", "Write", "Edit")))
            spec = GoalSpec(spec_kw.pop("condition", "the file done.txt exists"), **spec_kw)
            async with agent.open() as running:
                running.session.set_goal(spec)
                result = await running.prompt(spec.directive(), on_event=events.append)
            reqs = [r.body for r in sim.message_requests]
            assert not sim.unmatched, [r.body for r in sim.unmatched]
        judged = [r for r in reqs if "met its goal" in str(r.get("system", ""))]
        worked = [r for r in reqs if r not in judged]
        return result, worked, judged, [e for e in events if isinstance(e, GoalStatus)]

    return go


def last_user(body):
    content = body["messages"][-1]["content"]
    return content if isinstance(content, str) else " ".join(b.get("text", "") for b in content)


async def test_met_after_not_met(goal_run, tmp_path):
    result, worked, judged, statuses = await goal_run(
        [{"text": "Done!"}, bash("touch done.txt"), {"text": "Created done.txt."}],
        [verdict(False, "done.txt does not exist yet"), verdict(True, "ls shows done.txt")])
    assert result.terminal_reason == "goal_met" and result.subtype == "success" and not result.is_error
    assert (tmp_path / "done.txt").exists() and len(judged) == 2
    assert "done.txt does not exist yet" in last_user(worked[1])
    assert all("tools" not in j for j in judged)  # the evaluator judges evidence; it runs nothing
    assert judged[0]["output_config"]["format"]["type"] == "json_schema"
    goal = result.to_json()["goal"]
    assert goal["met"] and goal["iterations"] == 2 and goal["evaluator"]["calls"] == 2
    assert "evaluator" in result.to_json()["usageByRole"]
    assert statuses[0].sentinel and statuses[-1].met and statuses[-1].attachment()["type"] == "goal_status"


async def test_impossible_ends_with_an_error(goal_run):
    result, _, judged, statuses = await goal_run([{"text": "I can't reach the server"}],
                                                 [verdict(False, "no network here", impossible=True)])
    assert result.terminal_reason == "goal_impossible" and result.is_error and result.exit_code == 1
    assert statuses[-1].failed and result.to_json()["goal"]["failed"]


async def test_unparseable_verdict_is_asked_again_then_counts_as_not_met(goal_run):
    result, worked, judged, _ = await goal_run(
        [{"text": "done"}, bash("touch done.txt"), {"text": "now really done"}],
        [{"text": "yes I think so"}, {"text": "sure"}, verdict(True, "exists")])
    assert len(judged) == 3 and result.terminal_reason == "goal_met"
    assert "no verdict" in last_user(worked[1])


async def test_no_progress_ends_with_the_goal_still_set(goal_run):
    result, worked, judged, _ = await goal_run([{"text": "done", "repeat": -1}],
                                               [verdict(False, "nothing changed"), verdict(False, "still nothing"),
                                                verdict(False, "no"), verdict(False, "no"), verdict(False, "no")],
                                               max_idle_stops=4)
    assert result.terminal_reason == "goal_no_progress" and result.is_error
    assert len(judged) == 4 and not result.to_json()["goal"]["met"]


async def test_failing_check_blocks_without_an_evaluator_call(goal_run):
    result, worked, judged, _ = await goal_run(
        [{"text": "done"}, bash("touch done.txt"), {"text": "done now"}],
        [verdict(True, "the check passes")], checks=("test -f done.txt",))
    assert len(judged) == 1 and result.terminal_reason == "goal_met"
    feedback = last_user(worked[1])
    assert "test -f done.txt" in feedback and "exit 1" in feedback
    assert "CHECKS RUN BY THE HARNESS" in last_user(judged[0]) and "exit 0" in last_user(judged[0])


async def test_protected_file_edit_is_named_and_blocks(goal_run, tmp_path):
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_x.py").write_text("assert False\n")
    result, worked, judged, _ = await goal_run(
        [bash("echo 'assert True' > tests/test_x.py"), {"text": "tests pass"},
         bash("echo 'assert False' > tests/test_x.py && touch done.txt"), {"text": "restored, and done"}],
        [verdict(True, "ok")], protect=("tests/**",))
    feedback = last_user(worked[2])
    assert "tests/test_x.py" in feedback and "Restore" in feedback
    assert len(judged) == 1 and result.terminal_reason == "goal_met"


@pytest.mark.parametrize("kw,reason", [({"max_turns": 2}, "goal_max_turns"),
                                       ({"condition": "done.txt exists, or stop after 2 turns"}, "goal_max_turns")])
async def test_turn_bounds_are_enforced_by_the_harness(goal_run, kw, reason):
    result, worked, judged, _ = await goal_run([dict(bash("true"), repeat=-1)], [], **kw)
    assert result.terminal_reason == reason and len(worked) == 2 and result.is_error


class TickingClock(FakeClock):
    """Every reading of the clock moves it 10 seconds: time passes without anyone sleeping."""

    def monotonic(self):
        self.advance(10)
        return super().monotonic()


async def test_duration_bound_on_the_fake_clock(goal_run):
    result, worked, _, _ = await goal_run([dict(bash("true"), repeat=-1)], [], clock=TickingClock(),
                                          condition="done.txt exists within 1 minutes")
    assert result.terminal_reason == "goal_max_duration" and result.is_error
    assert 1 <= len(worked) < 10


async def test_budget_bound(goal_run):
    expensive = dict(bash("true"), usage={"input_tokens": 100_000, "output_tokens": 10_000}, repeat=-1)
    result, worked, _, _ = await goal_run([expensive], [], max_budget_usd=0.5)
    assert result.terminal_reason == "goal_max_budget" and len(worked) == 2


def test_verdict_parsing_is_robust():
    assert parse_verdict('```json\n{"ok": true, "reason": "x"}\n```').status == "met"
    assert parse_verdict('Sure. {"ok": false, "impossible": true, "reason": "y"} bye').status == "impossible"
    assert parse_verdict('{"ok": false, "reason": "has } brace"}').reason == "has } brace"
    assert parse_verdict("it is done") is None and parse_verdict('{"reason": "no ok"}') is None


@pytest.mark.parametrize("text,turns,seconds", [
    ("make tests pass or stop after 20 turns", 20, None), ("stop after 5 tries", 5, None),
    ("within 30 minutes", None, 1800), ("at most 10 turns and within 2 hours", 10, 7200),
    ("make the tests pass", None, None)])
def test_bounds_in_words(text, turns, seconds):
    b = parse_bounds(text)
    assert b.max_turns == turns and b.max_duration_s == seconds


def test_evidence_stays_bounded_and_keeps_the_latest_output():
    import importlib.util
    from pathlib import Path

    spec = importlib.util.spec_from_file_location("goal_evidence", Path(__file__).parents[1] / "bench" / "goal_evidence.py")
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    from loopwright.engine.goal import EVIDENCE_CHARS, GoalJudge

    judge = GoalJudge(GoalSpec("all tests pass"), None, bench.NoWorkspace(), FakeClock())
    short, long = bench.session(10, True, "done"), bench.session(200, False, "done")
    assert len(judge.evidence(long)) <= EVIDENCE_CHARS + 2000
    assert "1 failed, 40 passed" in judge.evidence(long).rsplit("[tool result", 1)[-1]
    assert len(judge.evidence(long)) < 3 * len(judge.evidence(short)) + 2000


async def test_evaluation_is_deferred_while_a_background_shell_runs(goal_run, tmp_path):
    background = {"tool_use": {"name": "Bash", "input": {"command": "sleep 1; touch done.txt",
                                                         "run_in_background": True}}}
    wait = bash("while [ ! -f done.txt ]; do sleep 0.05; done; sleep 0.2")
    result, worked, judged, _ = await goal_run(
        [background, {"text": "started it, done"}, wait, {"text": "now it is done"}],
        [verdict(True, "done.txt exists")], max_idle_stops=4)
    assert "Background work is still running" in last_user(worked[2]) and "sleep 1" in last_user(worked[2])
    assert len(judged) == 1 and result.terminal_reason == "goal_met"
