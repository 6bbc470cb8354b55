"""The `Capability` seams the built-in capabilities' own tests do not reach, end to end through
the simulator: a `Finish` before a turn, spend outside the loop in the result and the budget,
a report under the capability's name, `aclose` awaited once whatever ends the run; and the
checks on a capability list."""

from __future__ import annotations

from typing import Any

import pytest

from loopwright.app import Agent
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
