"""Every row of LOOP.md's outcome, error and limit tables, end to end: the real HTTP adapter
against the loopback simulator, real tools, a fake clock for backoff. Each test asserts the
requests made and the result."""


import pytest

from loopwright.agent import Agent
from loopwright.policy.budget import Budget
from loopwright.permissions.decide import PermissionRules
from loopwright.policy.stop import CONTINUE_AFTER_CUT, Limits
from loopwright.providers.anthropic import AnthropicModel
from loopwright.testing import Simulator
from loopwright.testing.clock import FakeClock

pytestmark = [pytest.mark.anyio, pytest.mark.usefixtures("http_library")]


class Run:
    def __init__(self, result, sim, clock, project):
        self.result, self.clock, self.project = result, clock, project
        self.requests = [r.body for r in sim.message_requests]
        self.counted = sum(1 for r in sim.requests if r.path.endswith("/count_tokens"))
        self.unmatched = list(sim.unmatched)

    @property
    def json(self):
        return self.result.to_json()

    def marker(self):
        return (self.project / "marker").exists()


@pytest.fixture
def run(tmp_path):
    async def go(script, prompt="do it", **agent_kw):
        clock = FakeClock()
        with Simulator(script) as sim:
            agent = Agent(model_client=AnthropicModel(base_url=sim.base_url, api_key="sk-test"), cwd=tmp_path,
                          clock=clock, permissions=agent_kw.pop("permissions", PermissionRules(allow=("Bash", "Write"))),
                          **agent_kw)
            async with agent.open() as running:
                result = await running.prompt(prompt)
            out = Run(result, sim, clock, tmp_path)
        assert not out.unmatched, "the script did not cover a request"
        return out

    return go


TOUCH = {"tool_use": {"name": "Bash", "input": {"command": "touch marker"}}}


def last_user_text(body):
    content = body["messages"][-1]["content"]
    return content if isinstance(content, str) else " ".join(b.get("text", "") for b in content if b["type"] == "text")


# ------------------------------------------------------------ outcomes


async def test_tool_use_runs_tools_and_sends_results_in_one_message(run):
    r = await run([{"content": [{"type": "tool_use", "name": "Bash", "input": {"command": "echo one; exit 3"}},
                                {"type": "tool_use", "name": "Nope", "input": {}},
                                {"type": "tool_use", "name": "Bash", "input": {"command": "echo two"}}]},
                   {"text": "done"}])
    results = r.requests[1]["messages"][-1]["content"]
    assert [b["type"] for b in results] == ["tool_result"] * 3
    ids = [b["id"] for b in r.requests[1]["messages"][-2]["content"]]
    assert [b["tool_use_id"] for b in results] == ids
    assert [b.get("is_error", False) for b in results] == [True, True, False]
    assert "Exit code 3" in results[0]["content"] and "two" in results[2]["content"]
    assert r.json["subtype"] == "success" and r.json["num_turns"] == 2 and r.result.exit_code == 0


@pytest.mark.parametrize("stop", ["end_turn", "stop_sequence"])
async def test_text_stop_finishes_success(run, stop):
    r = await run([{"text": "all good", "stop_reason": stop}])
    assert r.json["result"] == "all good" and r.json["stop_reason"] == stop
    assert r.json["terminal_reason"] == "completed" and r.json["stop_reason_counts"] == {stop: 1}


async def test_stop_hook_blocks_continue_with_reason_and_cap_at_eight(run):
    seen = []

    async def never_satisfied(payload):
        seen.append(payload["stop_hook_active"])
        return "not yet: run the tests"

    r = await run([{"text": "done", "repeat": 9}], stop_hooks=[never_satisfied])
    assert len(r.requests) == 9
    assert last_user_text(r.requests[1]) == "not yet: run the tests"
    assert seen[0] is False and all(seen[1:])
    assert r.json["subtype"] == "success" and r.json["terminal_reason"] == "stop_hook_cap"
    assert r.json["result"] == "done" and r.json["warnings"]


async def test_empty_end_turn_resend_then_nudge_then_fail(run):
    empty = {"content": [], "stop_reason": "end_turn", "usage": {"output_tokens": 2}}
    r = await run([dict(empty, repeat=3)])
    assert len(r.requests) == 3
    assert r.requests[1]["messages"] == r.requests[0]["messages"]  # resent unchanged
    assert len(r.requests[2]["messages"]) == len(r.requests[0]["messages"]) + 1
    assert r.json["terminal_reason"] == "empty_response" and r.json["is_error"]


async def test_empty_after_tool_results_recovers(run):
    r = await run([TOUCH, {"content": [], "stop_reason": "end_turn"}, {"text": "finished"}])
    assert len(r.requests) == 3 and r.json["result"] == "finished" and not r.json["is_error"]


async def test_max_tokens_escalates_then_continues_and_joins_text(run):
    r = await run([{"text": "part one, ", "stop_reason": "max_tokens", "repeat": 2},
                   {"text": "part two."}])
    assert [b["max_tokens"] for b in r.requests] == [64000, 128000, 128000]
    assert r.requests[1]["messages"] == r.requests[0]["messages"]  # escalation adds nothing
    assert r.requests[2]["messages"][-2]["content"][0]["text"] == "part one, "
    assert last_user_text(r.requests[2]) == CONTINUE_AFTER_CUT
    assert r.json["result"] == "part one, part two." and r.json["subtype"] == "success"


async def test_max_tokens_every_time_ends_max_output_tokens_with_joined_text(run):
    r = await run([{"text": "x", "stop_reason": "max_tokens", "repeat": -1}])
    assert len(r.requests) == 5  # first call, escalation, 3 continuations
    assert r.json["terminal_reason"] == "max_output_tokens" and r.json["is_error"]
    assert r.json["result"] == "xxxx" and r.result.exit_code == 1


async def test_truncated_tool_call_never_runs(run):
    cut = {"content": [{"type": "tool_use", "name": "Bash", "partial_json": '{"command": "touch mark'}],
           "stop_reason": "max_tokens"}
    r = await run([dict(cut, repeat=2), {"text": "ok, I will split it"}])
    assert not r.marker()
    assert [b["max_tokens"] for b in r.requests] == [64000, 128000, 128000]
    sent = r.requests[2]["messages"]
    assert all(b["type"] != "tool_use" for b in sent[-2]["content"])  # neutralised
    assert "Bash" in last_user_text(r.requests[2]) and "Split" in last_user_text(r.requests[2])
    assert r.json["subtype"] == "success"


async def test_complete_tool_call_before_the_cut_runs(run):
    r = await run([{"content": [{"type": "tool_use", "name": "Bash", "input": {"command": "touch marker"}},
                                {"type": "text", "text": "and now"}], "stop_reason": "max_tokens"},
                   {"text": "done"}])
    assert r.marker() and len(r.requests) == 2


async def test_context_window_exceeded_compacts_and_continues(run):
    r = await run([TOUCH, TOUCH, TOUCH, {"text": "partial", "stop_reason": "model_context_window_exceeded"},
                   {"text": "<summary>touched the marker 3 times</summary>"}, {"text": "done"}])
    summary_call, resumed = r.requests[4], r.requests[5]
    assert "tools" not in summary_call
    assert "touched the marker" in resumed["messages"][0]["content"][0]["text"]
    assert resumed["messages"][-2]["content"][0]["text"] == "partial"
    assert r.json["subtype"] == "success" and "compaction" in r.json["usageByRole"]


async def test_pause_turn_resent_as_is_up_to_five_times(run):
    paused = {"content": [{"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search", "input": {"query": "q"}}],
              "stop_reason": "pause_turn"}
    r = await run([dict(paused, repeat=2), {"text": "found it"}])
    assert len(r.requests) == 3
    assert r.requests[1]["messages"][-1]["role"] == "assistant"  # no user message added
    assert r.requests[1]["messages"][-1]["content"][0]["type"] == "server_tool_use"
    assert r.json["result"] == "found it"
    r = await run([dict(paused, repeat=-1)])
    assert len(r.requests) == 6 and r.json["terminal_reason"] == "pause_turn_limit" and r.json["is_error"]


async def test_refusal_never_runs_its_tools_and_reports_stop_details(run):
    details = {"type": "refusal", "category": "cyber", "explanation": "flagged"}
    r = await run([{"content": [{"type": "text", "text": "no"},
                                {"type": "tool_use", "name": "Bash", "input": {"command": "touch marker"}}],
                    "stop_reason": "refusal", "stop_details": details}])
    assert not r.marker() and len(r.requests) == 1
    assert r.json["terminal_reason"] == "refusal" and r.json["is_error"]
    assert r.json["stop_details"]["category"] == "cyber" and r.result.exit_code == 1


async def test_refusal_retries_once_on_the_fallback_without_the_refused_turn(run):
    script = {"rules": [
        {"match": {"model": "claude-sonnet-5"}, "responses": [{"text": "no", "stop_reason": "refusal", **TOUCH}]},
        {"match": {"model": "claude-opus-5-5"}, "responses": [{"text": "fine, done"}]},
    ]}
    r = await run(script, limits=Limits(fallback_models=("claude-opus-5-5",)))
    assert [b["model"] for b in r.requests] == ["claude-sonnet-5", "claude-opus-5-5"]
    assert r.requests[1]["messages"] == r.requests[0]["messages"] and not r.marker()
    assert r.json["result"] == "fine, done" and not r.json["is_error"]


async def test_stream_cut_before_message_stop_is_retried(run):
    r = await run([{"fault": {"cut": True, "after_blocks": 1}}, {"text": "whole"}])
    assert len(r.requests) == 2 and r.json["result"] == "whole"
    assert r.json["retries"]["network"] == 1


# ------------------------------------------------------------ API errors


async def test_429_waits_at_least_retry_after_and_never_switches_model(run):
    r = await run([{"fault": {"status": 429, "retry_after": 3}, "repeat": 4}, {"text": "ok"}],
                  limits=Limits(fallback_models=("claude-opus-5-5",)))
    assert len(r.requests) == 5 and {b["model"] for b in r.requests} == {"claude-sonnet-5"}
    assert all(d >= 3 for d in r.clock.sleeps) and len(r.clock.sleeps) == 4
    assert r.json["retries"]["rate_limit"] == 4 and r.json["result"] == "ok"


async def test_429_ten_retries_then_api_error(run):
    r = await run([{"fault": {"status": 429}, "repeat": -1}])
    assert len(r.requests) == 11 and r.json["terminal_reason"] == "api_error" and r.json["is_error"]
    delays = r.clock.sleeps
    assert delays[:3] == pytest.approx([0.5, 1.0, 2.0], rel=0.26) and max(delays) <= 32 * 1.25


async def test_spend_limit_429_stops_at_once(run):
    r = await run([{"fault": {"status": 429, "error_code": "enforced_spend_limit_reached"}, "repeat": -1}])
    assert len(r.requests) == 1 and r.json["terminal_reason"] == "api_error"


async def test_529_three_times_switches_to_fallback_for_the_rest_of_the_run(run):
    script = {"rules": [
        {"match": {"model": "claude-sonnet-5"}, "responses": [TOUCH, {"fault": {"status": 529}, "repeat": 3}]},
        {"match": {"model": "claude-haiku-4-5"}, "responses": [TOUCH, {"text": "done"}]},
    ]}
    r = await run(script, limits=Limits(fallback_models=("claude-haiku-4-5",)))
    assert [b["model"] for b in r.requests] == ["claude-sonnet-5"] * 4 + ["claude-haiku-4-5"] * 2
    assert r.requests[4]["max_tokens"] == 32000  # the fallback's own default output
    assert set(r.json["modelUsage"]) == {"claude-sonnet-5", "claude-haiku-4-5"}
    assert r.json["retries"]["overloaded"] == 2 and r.json["result"] == "done"


async def test_529_without_fallback_retries_as_5xx(run):
    r = await run([{"fault": {"status": 529}, "repeat": 5}, {"text": "ok"}])
    assert len(r.requests) == 6 and r.json["result"] == "ok"


@pytest.mark.parametrize("fault", [{"status": 500}, {"status": 502}, {"status": 503}, {"status": 504},
                                   {"reset": True}, {"sse_error": {"type": "overloaded_error", "message": "Overloaded"}}])
async def test_transient_failures_are_retried(run, fault):
    r = await run([{"fault": fault}, {"text": "recovered"}])
    assert len(r.requests) == 2 and r.json["result"] == "recovered" and sum(r.json["retries"].values()) == 1


async def test_x_should_retry_false_is_final(run):
    r = await run([{"fault": {"status": 500, "should_retry": False}, "repeat": -1}])
    assert len(r.requests) == 1 and r.json["terminal_reason"] == "api_error"


async def test_prompt_too_long_compacts_then_retries(run):
    r = await run([TOUCH, TOUCH, TOUCH, {"fault": {"status": 400, "message": "prompt is too long: 1012 tokens > 1000 maximum"}},
                   {"text": "<summary>three touches</summary>"}, {"text": "done"}])
    assert "three touches" in r.requests[5]["messages"][0]["content"][0]["text"]
    assert r.json["result"] == "done"


async def test_prompt_too_long_with_nothing_to_compact(run):
    r = await run([{"fault": {"status": 400, "message": "prompt is too long: 1012345 tokens > 1000000 maximum"}}])
    assert len(r.requests) == 1 and r.json["terminal_reason"] == "prompt_too_long" and r.result.exit_code == 1


@pytest.mark.parametrize("status,reason", [(400, "api_error"), (404, "api_error"), (401, "authentication_failed"),
                                           (403, "authentication_failed")])
async def test_final_http_errors(run, status, reason):
    r = await run([{"fault": {"status": status}, "repeat": -1}])
    assert len(r.requests) == 1 and r.json["terminal_reason"] == reason
    assert r.json["subtype"] == "error_during_execution" and r.json["errors"]


# ------------------------------------------------------------ limits


async def test_max_turns_stops_after_the_nth_calls_tools(run):
    r = await run([dict(TOUCH, repeat=-1)], limits=Limits(max_turns=2))
    assert len(r.requests) == 2
    assert r.json["subtype"] == "error_max_turns" and r.json["errors"] == ["Reached maximum number of turns (2)"]
    assert r.json["terminal_reason"] == "max_turns" and r.result.exit_code == 1
    assert r.result.messages[-1].content[0].type == "tool_result"  # the 2nd call's tool ran


async def test_final_turn_wraps_up_without_tools(run):
    r = await run([dict(TOUCH, repeat=2), {"text": "summary of work"}], limits=Limits(max_turns=2), final_turn=True)
    assert len(r.requests) == 3 and r.requests[2]["tool_choice"] == {"type": "none"}
    assert r.json["result"] == "summary of work" and r.json["subtype"] == "error_max_turns"


async def test_budget_usd_stops_before_the_next_call(run):
    usage = {"input_tokens": 100_000, "output_tokens": 10_000}  # sonnet-5: $0.20 + $0.10
    r = await run([dict(TOUCH, usage=usage, repeat=-1)], budget=Budget(max_budget_usd=0.5))
    assert len(r.requests) == 2 and r.json["subtype"] == "error_max_budget_usd"
    assert r.json["total_cost_usd"] == pytest.approx(0.6) and r.json["terminal_reason"] == "budget_exhausted"


async def test_token_budget(run):
    r = await run([dict(TOUCH, usage={"input_tokens": 600, "output_tokens": 100}, repeat=-1)],
                  budget=Budget(max_tokens_total=1000))
    assert len(r.requests) == 2 and r.json["subtype"] == "error_max_budget_tokens"


async def test_max_duration_on_the_fake_clock(run):
    # each 500 costs a backoff sleep on the fake clock; time runs out before the retries do
    r = await run([{"fault": {"status": 500}, "repeat": -1}], budget=Budget(max_duration_s=5))
    assert r.json["subtype"] == "error_max_duration" and r.json["terminal_reason"] == "max_duration"
    assert len(r.requests) < 11


@pytest.mark.parametrize("spec,stop", [
    ({"text": "a"}, "end_turn"), ({"text": "a", "stop_reason": "stop_sequence"}, "stop_sequence"),
    ({"text": "a", "stop_reason": "max_tokens", "repeat": -1}, "max_tokens"),
    ({"text": "a", "stop_reason": "pause_turn", "repeat": -1}, "pause_turn"),
    ({"text": "a", "stop_reason": "refusal"}, "refusal"),
    ({"text": "a", "stop_reason": "model_context_window_exceeded", "repeat": -1}, "model_context_window_exceeded"),
    ({"tool_use": {"name": "Bash", "input": {"command": "true"}}, "repeat": -1}, "tool_use"),
])
async def test_every_stop_reason_surfaces_in_the_result(run, spec, stop):
    r = await run([spec], limits=Limits(max_turns=3))
    assert r.json["stop_reason"] == stop and r.json["stop_reason_counts"].get(stop, 0) >= 1


async def test_interrupt_during_a_model_request(tmp_path):
    import anyio

    with Simulator([{"delay": 30, "text": "too late"}]) as sim:
        agent = Agent(model_client=AnthropicModel(base_url=sim.base_url, api_key="sk-test"), cwd=tmp_path)
        result = None
        async with agent.open() as running:

            async def go():
                nonlocal result
                result = await running.prompt("hi")

            async with anyio.create_task_group() as tg:
                tg.start_soon(go)
                while not sim.message_requests:
                    await anyio.sleep(0.01)
                running.interrupt()
    assert result.terminal_reason == "aborted" and result.exit_code == 130 and result.num_turns == 0


async def test_proactive_compaction_asks_the_token_counter_first(run):
    # usage says the window is nearly full, the API's own counter says it is not: no summary
    big = {"input_tokens": 170_000, "output_tokens": 10}
    r = await run([dict(TOUCH, usage=big, repeat=3), {"text": "done"}], model="claude-haiku-4-5")
    assert len(r.requests) == 4 and all("tools" in b for b in r.requests)  # no summary call
    assert r.counted >= 1 and r.json["result"] == "done"
