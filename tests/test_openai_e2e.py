"""The whole loop on an OpenAI-compatible model: the real adapter against the simulator's chat
endpoint, real tools, a fake clock for backoff. The same policy rows as the Messages API."""

from __future__ import annotations

import json

import pytest

from loopwright.agent import Agent, Session
from loopwright.core.events import CompactBoundary
from loopwright.permissions.decide import PermissionRules
from loopwright.testing import Simulator
from loopwright.testing.clock import FakeClock
from test_cli import cli

pytestmark = [pytest.mark.anyio, pytest.mark.usefixtures("http_library")]


@pytest.fixture(autouse=True)
def openai_key(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")  # the simulator wants a bearer token


TOUCH = {"tool_use": {"name": "Bash", "input": {"command": "touch marker"}}}


async def run(tmp_path, script, prompt="do it"):
    clock, events = FakeClock(), []
    with Simulator(script) as sim:
        agent = Agent(model=f"openai-compatible:{sim.base_url}/v1#local-model", cwd=tmp_path, clock=clock,
                      permissions=PermissionRules(allow=("Bash",)))
        async with agent.open() as running:
            result = await running.prompt(prompt, on_event=events.append)
        bodies = [r.body for r in sim.chat_requests]
        assert not sim.unmatched and not sim.errors
    return result, bodies, clock, events


async def test_a_tool_loop_runs_on_a_chat_model(tmp_path):
    result, bodies, _, _ = await run(tmp_path, [TOUCH, {"text": "touched"}])
    assert (tmp_path / "marker").exists() and result.result == "touched" and result.num_turns == 2
    assert bodies[0]["model"] == "local-model" and bodies[0]["tools"][0]["type"] == "function"
    call = bodies[1]["messages"][-2]["tool_calls"][0]
    answer = bodies[1]["messages"][-1]
    assert answer["role"] == "tool" and answer["tool_call_id"] == call["id"]


async def test_rate_limits_are_retried_after_the_servers_delay(tmp_path):
    result, bodies, clock, _ = await run(tmp_path, [{"fault": {"status": 429, "retry_after": 3}, "repeat": 2},
                                                    {"text": "ok"}])
    assert result.result == "ok" and len(bodies) == 3 and result.retries["rate_limit"] == 2
    assert all(s >= 3 for s in clock.sleeps)


async def test_an_exhausted_quota_is_final(tmp_path):
    result, bodies, clock, _ = await run(tmp_path, [{"fault": {"status": 429, "error_code": "insufficient_quota"},
                                                     "repeat": -1}])
    assert len(bodies) == 1 and result.is_error and clock.sleeps == []


async def test_context_overflow_compacts_then_goes_on(tmp_path):
    overflow = {"fault": {"status": 400, "error_code": "context_length_exceeded",
                          "message": "This model's maximum context length is 8192 tokens."}}
    result, bodies, _, events = await run(tmp_path, [TOUCH, TOUCH, TOUCH, overflow,
                                                     {"text": "<summary>three touches</summary>"}, {"text": "done"}])
    assert result.result == "done" and any(isinstance(e, CompactBoundary) for e in events)
    assert "three touches" in json.dumps(bodies[5]["messages"][:2])


async def test_a_tool_call_cut_by_the_token_limit_never_runs(tmp_path):
    cut = {"content": [{"type": "tool_use", "name": "Bash", "partial_json": '{"command": "touch mark'}],
           "stop_reason": "max_tokens", "repeat": -1}
    result, bodies, _, _ = await run(tmp_path, [cut])
    assert not (tmp_path / "marker").exists() and result.is_error and len(bodies) > 1


def test_cli_on_a_chat_model_warns_that_it_has_no_price(tmp_path):
    with Simulator([{"text": "hello from a local model"}]) as sim:
        out = cli(["-p", "hi", "--output-format", "json", "--model", f"openai-compatible:{sim.base_url}/v1#llama"],
                  cwd=tmp_path, env={"OPENAI_API_KEY": "sk-local"})
        request = sim.chat_requests[0]
    result = json.loads(out.stdout)
    assert out.returncode == 0 and result["result"] == "hello from a local model", out.stderr
    assert "no price is known for model openai-compatible:" in out.stderr and result["total_cost_usd"] == 0
    assert request.body["model"] == "llama" and request.headers["authorization"] == "Bearer sk-local"


async def test_a_goal_on_a_chat_model_is_judged_by_it(tmp_path):
    from loopwright.engine.goal import GoalSpec

    judge = {"system_contains": "You decide whether an agent has met its goal"}
    rules = {"rules": [{"match": judge, "responses": [{"text": json.dumps({"ok": True, "reason": "marker exists"})}]},
                       {"responses": [TOUCH, {"text": "made the marker"}]}]}
    with Simulator(rules) as sim:
        name = f"openai-compatible:{sim.base_url}/v1#local-model"
        agent = Agent(model=name, cwd=tmp_path, clock=FakeClock(), permissions=PermissionRules(allow=("Bash",)))
        spec = GoalSpec("the file marker exists", model=name)
        session = Session()
        session.set_goal(spec)
        result = await agent.run(spec.directive(), session=session)
        judged = [r.body for r in sim.chat_requests if "met its goal" in json.dumps(r.body["messages"][0])]
    assert result.terminal_reason == "goal_met" and len(judged) == 1
    assert "response_format" not in judged[0]  # only OpenAI's own API is asked for a json_schema answer


def test_openais_own_api_is_asked_for_structured_verdicts():
    from loopwright.providers.openai import chat_body
    from loopwright.core.types import Message, ModelRequest

    schema = {"type": "object", "properties": {"ok": {"type": "boolean"}}}
    request = ModelRequest("openai:gpt-x", (Message.user("judge"),), 100,
                           extra={"output_config": {"format": {"type": "json_schema", "schema": schema}}})
    assert chat_body(request, "gpt-x", official=True)["response_format"] == {
        "type": "json_schema", "json_schema": {"name": "answer", "schema": schema}}
    assert "response_format" not in chat_body(request, "x", official=False)


async def test_models_of_two_providers_in_one_run(tmp_path, monkeypatch):
    """The worker on a chat model, its goal judged by an Anthropic model: each request goes to the
    API that serves its model name (the simulator speaks both)."""
    from loopwright.engine.goal import GoalSpec

    judge = {"system_contains": "You decide whether an agent has met its goal"}
    rules = {"rules": [{"match": judge, "responses": [{"text": json.dumps({"ok": True, "reason": "marker exists"})}]},
                       {"responses": [TOUCH, {"text": "made the marker"}]}]}
    with Simulator(rules) as sim:
        monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test")
        monkeypatch.setenv("ANTHROPIC_BASE_URL", sim.base_url)
        agent = Agent(model=f"openai-compatible:{sim.base_url}/v1#local-model", cwd=tmp_path, clock=FakeClock(),
                      permissions=PermissionRules(allow=("Bash",)))
        spec = GoalSpec("the file marker exists", model="haiku")
        session = Session()
        session.set_goal(spec)
        result = await agent.run(spec.directive(), session=session)
        worker, evaluator = len(sim.chat_requests), [r.body["model"] for r in sim.message_requests]
    assert result.terminal_reason == "goal_met" and worker == 2 and evaluator == ["claude-haiku-4-5"]
