"""Time-based loops end to end: a real Agent, the loopback simulator, real tools, and a fake
clock, so a week of iterations costs milliseconds. What the model was sent and how long the loop
slept are the evidence."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys

import pytest

from loopwright.agent import Agent
from loopwright.cli.loopcmd import loop_tools
from loopwright.core.events import LoopStatus, ResultEvent
from loopwright.policy.cadence import FALLBACK_WAKEUP_S
from loopwright.permissions.decide import PermissionRules
from loopwright.providers.anthropic import AnthropicModel
from loopwright.proactive.schedule import BUILTIN_LOOP_PROMPT, MAX_CRONS, SessionCrons, TimeLoop, loop_prompt
from loopwright.testing import Simulator
from loopwright.testing.clock import FakeClock
from loopwright.tools import tool

pytestmark = pytest.mark.anyio
START = 1_800_000_000.0  # on the hour in every whole-hour time zone


class Looped:
    def __init__(self, result, sim, clock, events):
        self.result, self.clock, self.events = result, clock, events
        self.requests = [r.body for r in sim.message_requests]
        self.statuses = [e for e in events if isinstance(e, LoopStatus)]

    def last_user_texts(self):
        out = []
        for body in self.requests:
            content = body["messages"][-1]["content"]
            out.append(content if isinstance(content, str) else " ".join(
                b.get("text", "") for b in content if b["type"] == "text"))
        return out


@pytest.fixture
def looped(tmp_path):
    async def go(script, every_s, prompt="check it", tools=(), clock=None, **loop_kw):
        clock, events = clock or FakeClock(START), []
        with Simulator(script) as sim:
            agent = Agent(model_client=AnthropicModel(base_url=sim.base_url, api_key="sk-test"), cwd=tmp_path,
                          clock=clock, tools=list(tools), permissions=PermissionRules(allow=tuple(t.name for t in tools)))
            loop = TimeLoop(lambda text: running.prompt(text, on_event=events.append),
                            prompt if callable(prompt) else (lambda: prompt), every_s, clock, events.append,
                            crons=SessionCrons(clock), **loop_kw)
            agent = agent.replace(capabilities=[loop_tools(loop)])  # as `-p "/loop …"` does
            async with agent.open() as running:
                result = await loop.run()
            out = Looped(result, sim, clock, events)
        assert not sim.unmatched, "the script did not cover a request"
        return out

    return go


def system_text(body):
    system = body.get("system", "")
    return system if isinstance(system, str) else " ".join(b["text"] for b in system)


def wakeup(**tool_input):
    return {"tool_use": {"name": "ScheduleWakeup", "input": tool_input}}


async def test_fixed_loop_runs_on_the_cron_step_in_one_conversation(looped):
    r = await looped([{"text": "all good", "repeat": 3}], 300, max_iterations=3)
    assert len(r.requests) == 3 and r.clock.sleeps == [300, 300]
    # one conversation: each iteration sees the ones before it
    assert [len(b["messages"]) for b in r.requests] == [1, 3, 5]
    assert "every 5 minutes" in system_text(r.requests[0])
    assert [(s.reason, s.ended) for s in r.statuses] == [("schedule", False), ("schedule", False),
                                                         ("max_iterations", True)]
    last = r.result.loop.pop("last")
    assert r.result.loop == {"mode": "fixed", "iterations": 3, "terminal_reason": "max_iterations",
                             "cron": "*/5 * * * *", "every_seconds": 300,
                             "total_cost_usd": pytest.approx(sum(
                                 e.result.total_cost_usd for e in r.events if isinstance(e, ResultEvent)))}
    assert last["subtype"] == "success" and last["num_turns"] == 1
    assert r.result.to_json()["loop"]["iterations"] == 3 and r.result.exit_code == 0


async def test_missed_fires_collapse_into_one_at_once(looped):
    clock = FakeClock(START)

    @tool(read_only=True)
    async def slow_job() -> str:
        """Takes twenty minutes."""
        clock.advance(20 * 60)
        return "done"

    script = [{"tool_use": {"name": "slow_job", "input": {}}}, {"text": "took a while"}, {"text": "quick"}]
    r = await looped(script, 300, tools=[slow_job], clock=clock, max_iterations=2)
    assert r.statuses[0].reason == "missed" and r.statuses[0].next_at == START + 20 * 60
    assert r.clock.sleeps == [0.0] and len(r.requests) == 3  # four fire times passed: one iteration, at once


async def test_self_paced_loop_sleeps_as_asked_and_stops_when_told(looped):
    script = [wakeup(delaySeconds=120, reason="build running"), {"text": "waiting for the build"},
              wakeup(stop=True, reason="build green"), {"text": "green, done"}]
    r = await looped(script, None)
    assert r.clock.sleeps == [120]
    assert [(s.reason, s.ended) for s in r.statuses] == [("wakeup", False), ("stopped", True)]
    assert r.result.result == "green, done" and r.result.loop["mode"] == "self-paced"
    tool_names = [t["name"] for t in r.requests[0]["tools"]]
    assert "ScheduleWakeup" in tool_names
    answer = r.requests[1]["messages"][-1]["content"][0]
    assert answer["type"] == "tool_result" and "in 120s" in answer["content"]


async def test_self_paced_delay_is_clamped_and_said(looped):
    script = [wakeup(delaySeconds=5), {"text": "soon"}, wakeup(stop=True), {"text": "bye"}]
    r = await looped(script, None)
    assert r.clock.sleeps == [60]
    assert "using 60s" in r.requests[1]["messages"][-1]["content"][0]["content"]


async def test_no_reschedule_gets_one_fallback_then_the_loop_ends(looped):
    r = await looped([{"text": "did a thing", "repeat": 2}], None)
    assert r.clock.sleeps == [FALLBACK_WAKEUP_S] and len(r.requests) == 2
    assert [s.reason for s in r.statuses] == ["fallback", "no_reschedule"]


async def test_three_failed_iterations_end_the_loop_as_an_error(looped):
    r = await looped([{"fault": {"status": 400, "message": "bad request"}, "repeat": 3}], 300)
    assert len(r.requests) == 3 and r.statuses[-1].reason == "failing"
    assert r.result.is_error and r.result.exit_code == 1 and r.result.loop["terminal_reason"] == "failing"


async def test_top_level_totals_cover_the_whole_loop_and_the_last_iteration_has_its_own(looped):
    call = {"tool_use": {"name": "CronList", "input": {}}}
    script = [{"text": "first", "usage": {"input_tokens": 100, "output_tokens": 10}},
              {**call, "usage": {"input_tokens": 200, "output_tokens": 20}},
              {"text": "second", "usage": {"input_tokens": 300, "output_tokens": 30}}]
    r = await looped(script, 300, max_iterations=2)
    results = [e.result for e in r.events if isinstance(e, ResultEvent)]
    assert [x.num_turns for x in results] == [1, 2]
    out = r.result.to_json()
    assert out["num_turns"] == 3 and out["loop"]["last"]["num_turns"] == 2 and out["result"] == "second"
    assert out["usage"]["input_tokens"] == 600 and out["usage"]["output_tokens"] == 60
    assert out["total_cost_usd"] == out["loop"]["total_cost_usd"] == pytest.approx(sum(x.total_cost_usd for x in results))
    assert out["loop"]["last"]["total_cost_usd"] == pytest.approx(results[-1].total_cost_usd)
    assert out["duration_ms"] == 300_000 + results[-1].duration_ms  # the wait between iterations counts
    [(model, usage)] = out["modelUsage"].items()
    assert usage["inputTokens"] == 600


async def test_the_budget_bounds_the_whole_loop_not_each_iteration(looped):
    usage = {"input_tokens": 100_000, "output_tokens": 1000}  # ~$0.3 a call on the default model
    r = await looped([{"text": "ok", "usage": usage, "repeat": -1}], 300, max_budget_usd=1.0)
    costs = [e.result.total_cost_usd for e in r.events if isinstance(e, ResultEvent)]
    assert len(costs) > 1 and sum(costs[:-1]) < 1.0 <= sum(costs)  # stops once the sum reaches it
    assert r.statuses[-1].reason == "budget_exhausted" and r.result.loop["total_cost_usd"] >= 1.0


async def test_until_ends_the_loop_before_a_fire_past_it(looped):
    r = await looped([{"text": "ok", "repeat": 2}], 300, until=START + 400)
    assert len(r.requests) == 2 and r.clock.sleeps == [300]
    assert r.statuses[-1].reason == "until"


async def test_loop_file_is_read_again_for_every_iteration(looped, tmp_path):
    (tmp_path / ".loopwright").mkdir()
    loop_md = tmp_path / ".loopwright" / "loop.md"
    loop_md.write_text("first instructions")
    read = loop_prompt("", str(tmp_path), str(tmp_path / "nohome"))

    @tool()
    async def edit_plan() -> str:
        """Changes the loop file."""
        loop_md.write_text("second instructions")
        return "changed"

    script = [{"tool_use": {"name": "edit_plan", "input": {}}}, {"text": "plan changed"}, {"text": "ok"}]
    r = await looped(script, 300, prompt=read, tools=[edit_plan], max_iterations=2)
    texts = r.last_user_texts()
    assert texts[0] == "first instructions" and texts[-1] == "second instructions"


def test_without_a_loop_file_the_built_in_prompt_is_used(tmp_path):
    assert loop_prompt("", str(tmp_path), str(tmp_path))() == BUILTIN_LOOP_PROMPT
    (tmp_path / ".claude").mkdir()
    (tmp_path / ".claude" / "loop.md").write_text("x" * 30_000)
    assert loop_prompt("", str(tmp_path), "/nonexistent")() == "x" * 25_000  # capped
    assert loop_prompt("given", str(tmp_path), str(tmp_path))() == "given"


# ---------------------------------------------------------------- prompts the model schedules


async def test_a_prompt_the_model_scheduled_runs_between_iterations(looped):
    script = [{"tool_use": {"name": "CronCreate", "input": {"cron": "30 * * * *", "prompt": "check the queue",
                                                            "recurring": False}}},
              {"text": "scheduled"}, {"text": "queue is fine"}, {"text": "hourly check done"}]
    r = await looped(script, 3600, max_iterations=2)
    assert r.last_user_texts() == ["check it", "", "check the queue", "check it"]  # "" the tool result
    assert r.clock.sleeps == [1800, 1800]  # 08:00 → the task at 08:30 → the next iteration at 09:00
    assert any(getattr(e, "subtype", "") == "cron_fire" for e in r.events)
    created = r.requests[1]["messages"][-1]["content"][0]
    assert created["type"] == "tool_result" and created["content"].startswith("Scheduled ")


def test_session_crons_rules():
    clock = FakeClock(START)  # 08:00
    crons = SessionCrons(clock)
    with pytest.raises(ValueError, match="expected five cron fields"):
        crons.create("every hour", "x", True)
    with pytest.raises(ValueError, match="the prompt is empty"):
        crons.create("0 * * * *", "  ", True)
    crons.create("15 * * * *", "once", False)
    crons.create("*/20 * * * *", "often", True)
    assert crons.next_at() == START + 15 * 60 and "once" in crons.describe()
    clock.advance(15 * 60)
    assert crons.take_due(clock.now()).prompt == "once" and crons.take_due(clock.now()) is None
    assert len(crons.tasks) == 1  # the one-shot is gone
    clock.advance(2 * 3600)  # missed fires of the recurring one collapse into one
    task = crons.take_due(clock.now())
    assert task.prompt == "often" and task.next_at == START + 15 * 60 + 2 * 3600 + 5 * 60
    clock.advance(7 * 86400)  # its week is up: this fire is its last
    assert crons.take_due(clock.now()).prompt == "often" and crons.tasks == {}
    for i in range(MAX_CRONS):
        crons.create("0 * * * *", f"p{i}", True)
    with pytest.raises(ValueError, match="at most 50"):
        crons.create("0 * * * *", "one too many", True)
    some = next(iter(crons.tasks))
    assert crons.delete(some) and not crons.delete(some)


# ---------------------------------------------------------------- the CLI


def cli(args, tmp_path, script, **kw):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "LOOPWRIGHT_"))}
    # the home as people have it, under a .loopwright folder (protected, so no warning about it)
    env.update(ANTHROPIC_API_KEY="sk-test", LOOPWRIGHT_HOME=str(tmp_path / "fakehome" / ".loopwright"),
               HOME=str(tmp_path / "fakehome"))
    with Simulator(script) as sim:
        env["ANTHROPIC_BASE_URL"] = sim.base_url
        out = subprocess.run([sys.executable, "-m", "loopwright", "-p", *args], cwd=tmp_path, env=env,
                             capture_output=True, text=True, timeout=60, **kw)
        out.requests = [r.body for r in sim.message_requests]
    return out


def test_cli_fixed_loop_json_has_the_loop_summary(tmp_path):
    out = cli(["/loop 7m say hi", "--max-iterations", "1", "--output-format", "json"], tmp_path, [{"text": "hi"}])
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout)
    assert result["loop"].pop("last")["subtype"] == "success"
    assert result["loop"] == {"mode": "fixed", "iterations": 1, "terminal_reason": "max_iterations",
                              "cron": "*/6 * * * *", "every_seconds": 360,
                              "total_cost_usd": result["total_cost_usd"]}
    assert "7m is not a clean cron step" in out.stderr
    assert out.requests[0]["messages"][0]["content"] == [{"type": "text", "text": "say hi", "cache_control": {"type": "ephemeral"}}]


def test_cli_self_paced_stream_json_ends_with_the_summary(tmp_path):
    out = cli(["/loop watch the build", "--output-format", "stream-json", "--verbose"], tmp_path,
              [wakeup(stop=True, reason="nothing to watch"), {"text": "stopping"}])
    assert out.returncode == 0, out.stderr
    lines = [json.loads(line) for line in out.stdout.splitlines()]
    status = [line for line in lines if line.get("subtype") == "loop_status"]
    assert status and status[-1]["reason"] == "stopped" and status[-1]["ended"]
    assert lines[-1]["type"] == "result" and lines[-1]["loop"]["terminal_reason"] == "stopped"
    assert "ScheduleWakeup" in [t["name"] for t in out.requests[0]["tools"]]


@pytest.mark.parametrize(("args", "needle"), [
    (["/loop 0m x"], "loop interval '0m'"),
    (["/loop 5m x", "--max-iterations", "0"], "--max-iterations: expected a number above 0"),
    (["/loop 5m x", "--until", "soonish"], "--until: expected a duration"),
    (["plain prompt", "--max-iterations", "2"], "use them with -p \"/loop"),
])
def test_cli_bad_loop_input_is_one_clear_line(tmp_path, args, needle):
    out = cli(args, tmp_path, [{"text": "never"}])
    assert out.returncode == 2 and needle in out.stderr and out.requests == []
    assert len(out.stderr.strip().splitlines()) == 1


def test_cli_ctrl_c_while_waiting_ends_the_loop_with_130(tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "LOOPWRIGHT_"))}
    env.update(ANTHROPIC_API_KEY="sk-test", LOOPWRIGHT_HOME=str(tmp_path / "home"), HOME=str(tmp_path / "fakehome"))
    with Simulator([{"text": "checked", "repeat": -1}]) as sim:
        env["ANTHROPIC_BASE_URL"] = sim.base_url
        proc = subprocess.Popen([sys.executable, "-m", "loopwright", "-p", "/loop 1d check", "--output-format",
                                 "stream-json"], cwd=tmp_path, env=env, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)
        try:
            for line in proc.stdout:  # wait for the loop to start waiting
                if '"loop_status"' in line:
                    break
            proc.send_signal(signal.SIGINT)
            rest, err = proc.communicate(timeout=30)
        finally:
            proc.kill()
    assert proc.returncode == 130, err
    last = json.loads(rest.splitlines()[-1])
    assert last["loop"]["terminal_reason"] == "interrupted" and len(sim.message_requests) == 1
    # the loop did not succeed: it was cut short while it waited (issue 23 item 6)
    assert (last["subtype"], last["terminal_reason"], last["is_error"]) == ("error_during_execution", "aborted", True)
    assert "while the loop waited" in last["errors"][-1] and last["loop"]["last"]["subtype"] == "success"
