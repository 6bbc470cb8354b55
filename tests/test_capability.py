"""The `Capability` seams the built-in capabilities' own tests do not reach, end to end through
the simulator: a `Finish` before a turn, spend outside the loop in the result and the budget,
a report under the capability's name, `aclose` awaited once whatever ends the run; and the
checks on a capability list."""

from __future__ import annotations

from typing import Any

import pytest

from loopwright.agent import Agent
from loopwright.core.events import ModelUsage
from loopwright.core.types import Usage
from loopwright.engine.capability import Capability
from loopwright.policy.budget import Budget
from loopwright.permissions.decide import PermissionRules
from loopwright.policy.stop import Finish
from loopwright.providers.anthropic import AnthropicModel
from loopwright.testing import Simulator
from loopwright.testing.clock import FakeClock

pytestmark = pytest.mark.anyio


class TurnCounter(Capability):
    """Ends the run after `most` model calls; says it paid for a side call of `cost` dollars."""

    name = "counter"

    def __init__(self, most: int, cost: float = 0.0) -> None:
        self.most, self.cost, self.turns, self.closed = most, cost, 0, 0

    def before_turn(self, spent: Any) -> Finish | None:
        self.turns = spent.turns
        if spent.turns >= self.most:
            return Finish("error_max_turns", "max_turns", True, (f"counter: {self.most} turns",))
        return None

    def spend(self) -> list[tuple[str, str, ModelUsage]]:
        return [("side", "claude-haiku-4-5", ModelUsage().add(Usage(input_tokens=10), self.cost))] if self.cost else []

    def report(self) -> "CounterReport":
        return CounterReport(self.turns)

    async def aclose(self) -> None:
        self.closed += 1


class CounterReport:
    def __init__(self, turns: int) -> None:
        self.turns = turns

    def to_json(self) -> dict[str, Any]:
        return {"turns": self.turns}


async def run(script, *capabilities, **kw):
    with Simulator(script) as sim:
        client = AnthropicModel(base_url=sim.base_url, api_key="sk-test")  # ours to close: the agent's run does not
        agent = Agent(model_client=client, cwd=kw.pop("cwd"),
                      clock=FakeClock(), permissions=PermissionRules(allow=("Bash",)), capabilities=capabilities, **kw)
        try:
            return await agent.run("go"), len(sim.message_requests)
        finally:
            await client.aclose()


async def test_before_turn_ends_the_run_reports_and_closes(tmp_path):
    counter = TurnCounter(2)
    ls = {"tool_use": {"name": "Bash", "input": {"command": "ls"}}}
    result, calls = await run([ls, ls, ls], counter, cwd=tmp_path)
    assert calls == 2 and (result.subtype, result.errors) == ("error_max_turns", ("counter: 2 turns",))
    assert result.reports["counter"].turns == 2 and result.to_json()["counter"] == {"turns": 2}
    assert counter.closed == 1


async def test_spend_outside_the_loop_counts_in_the_result_and_the_budget(tmp_path):
    counter = TurnCounter(99, cost=5.0)
    result, calls = await run([{"text": "never sent"}], counter, cwd=tmp_path, budget=Budget(max_budget_usd=1.0))
    assert calls == 0 and result.terminal_reason == "budget_exhausted"
    assert result.role_usage["side"].cost_usd == 5.0 and result.total_cost_usd == 5.0
    assert counter.closed == 1


async def test_a_capability_list_the_result_cannot_keep_apart_is_refused(tmp_path):
    class Shadow(Capability):
        name = "result"

    with pytest.raises(ValueError, match="the name 'result' of Shadow is a key of the result"):
        await run([], Shadow(), cwd=tmp_path)
    with pytest.raises(TypeError, match="capabilities: expected Capability objects, got str"):
        await run([], "pytest", cwd=tmp_path)


async def test_a_tool_the_run_already_has_is_refused(tmp_path):
    from loopwright.tools.files import ReadTool

    class SecondRead(Capability):
        name = "second_read"

        def tools(self):
            return (ReadTool(),)

    with pytest.raises(ValueError, match="SecondRead offers a tool named 'Read', which the run already has"):
        await run([], SecondRead(), cwd=tmp_path)


class Growing(Capability):
    """Offers `LiveTools`: a tool called `later` appears once a batch has run."""

    name = "growing"

    def __init__(self) -> None:
        from loopwright import LiveTools
        from loopwright.tools import tool

        @tool(read_only=True)
        async def later() -> str:
            """Appears after the first batch."""
            return "later ran"

        @tool(read_only=True)
        async def first() -> str:
            """Offered from the start."""
            return "first ran"

        self.later, self.current = later, [first]
        self.live = LiveTools(lambda: self.current)

    def tools(self) -> Any:
        return self.live

    async def after_batch(self, calls: Any, results: Any) -> list[str]:
        if self.later not in self.current:
            self.current = [*self.current, self.later]
        return []


async def test_live_tools_are_read_again_for_every_request_in_the_capabilities_order(tmp_path):
    from loopwright.capabilities.looping import LoopTools
    from loopwright.tools import tool

    @tool(read_only=True)
    async def fixed() -> str:
        """A tool another capability offers once."""
        return "fixed ran"

    script = [{"tool_use": {"name": "first", "input": {}}}, {"tool_use": {"name": "later", "input": {}}},
              {"text": "done"}]
    with Simulator(script) as sim:
        client = AnthropicModel(base_url=sim.base_url, api_key="sk-test")
        agent = Agent(model_client=client, cwd=tmp_path, clock=FakeClock(), tools=[],
                      permissions=PermissionRules(allow=("first", "later", "fixed")),
                      capabilities=[Growing(), LoopTools("Loop guide here.", [fixed])])
        try:
            result = await agent.run("go")
        finally:
            await client.aclose()
        names = [[t["name"] for t in r.body["tools"]] for r in sim.message_requests]
    assert not result.is_error, result.result
    # the live part keeps its place before the tools of the capabilities after it
    assert names == [["first", "fixed"], ["first", "later", "fixed"], ["first", "later", "fixed"]]
    assert "later ran" in str(sim.message_requests[2].body["messages"][-1])


async def test_loop_tools_add_their_tools_and_guide_and_need_a_guide(tmp_path):
    from loopwright.capabilities.looping import LoopTools
    from loopwright.tools import tool

    @tool(read_only=True)
    async def steer() -> str:
        """Steers the loop."""
        return "steered"

    with pytest.raises(ValueError, match="LoopTools: expected the loop's guide"):
        LoopTools("  ", [steer])
    with Simulator([{"text": "ok"}]) as sim:
        client = AnthropicModel(base_url=sim.base_url, api_key="sk-test")
        agent = Agent(model_client=client, cwd=tmp_path, clock=FakeClock(), tools=[], system_prompt="Base.",
                      append_system_prompt="Appended.", capabilities=[LoopTools("Loop guide here.", [steer])])
        try:
            await agent.run("go")
        finally:
            await client.aclose()
        body = sim.message_requests[0].body
    system = body["system"] if isinstance(body["system"], str) else " ".join(b["text"] for b in body["system"])
    assert [t["name"] for t in body["tools"]] == ["steer"]
    assert system.index("Base.") < system.index("Appended.") < system.index("Loop guide here.")
