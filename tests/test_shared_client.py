"""One model client shared by many loops (issue 32 item 1): every call is in flight at once, well
past the old 100-connection cap, each keeps its connection between calls, and an agent that ends
does not close a client it was given (the other agents' calls would break)."""

import asyncio

import pytest

from loopwright.agent import Agent
from loopwright.core.types import BlockDelta, Message, ModelRequest, StreamStop
from loopwright.providers.anthropic import AnthropicModel
from loopwright.providers.openai import OpenAIChatModel
from loopwright.testing import Simulator

LOOPS, ROUNDS = 150, 3  # more loops than the 100 connections one client used to allow


def script() -> list[dict]:
    # Each first call waits long enough for every first call to arrive (as in test_simulator_load):
    # the LOOPS calls taken first are those, since a loop's second call needs its first answer.
    return [{"text": "first", "delay": 2.0, "repeat": LOOPS}, {"text": "again", "repeat": LOOPS * (ROUNDS - 1)}]


async def calls(model, n: int) -> list[str]:
    texts = []
    for round_ in range(ROUNDS):
        request = ModelRequest("claude-sonnet-4-5", (Message.user(f"loop {n} round {round_}"),), 64)
        text, stopped = "", False
        async for event in model.stream(request):
            if isinstance(event, BlockDelta):
                text += event.delta.get("text", "")
            stopped = stopped or isinstance(event, StreamStop)
        assert stopped
        texts.append(text)
    return texts


@pytest.mark.parametrize("kind", ["anthropic", "openai-compatible"])
def test_one_client_serves_every_loop_at_once_each_on_its_own_connection(kind: str) -> None:
    async def main(sim: Simulator) -> list[list[str]]:
        model = (AnthropicModel(base_url=sim.base_url, api_key="sk-test") if kind == "anthropic"
                 else OpenAIChatModel(base_url=f"{sim.base_url}/v1", api_key="sk-test"))
        try:
            return await asyncio.gather(*(calls(model, n) for n in range(LOOPS)))
        finally:
            await model.aclose()

    with Simulator(script()) as sim:
        answers = asyncio.run(main(sim))
        assert sim.peak_in_flight == LOOPS  # none queued behind a connection cap
        assert sim.connections == LOOPS  # later calls reused the connections of the first ones
        assert sim.errors == [] and sim.unmatched == [] and sim.remaining() == []
    assert answers == [["first"] + ["again"] * (ROUNDS - 1)] * LOOPS


def test_an_agent_that_ends_leaves_a_shared_client_open_for_the_others(tmp_path) -> None:
    # The quick agent's answer comes first; the slow one's call is still in flight when the quick
    # one is closed, and must still get its answer through the same client.
    rules = [{"match": {"last_user_contains": "quick"}, "responses": [{"text": "quick done"}]},
             {"match": {"last_user_contains": "slow"}, "responses": [{"text": "slow done", "delay": 1.0}]}]

    async def main(sim: Simulator) -> list[str]:
        model = AnthropicModel(base_url=sim.base_url, api_key="sk-test")
        quick, slow = (Agent(model_client=model, cwd=tmp_path, tools=[], system_prompt="x") for _ in range(2))

        async def run_quick() -> str:
            result = await quick.run("quick")  # its run ends here, while the slow one's call is in flight
            return result.result

        async def run_slow() -> str:
            return (await slow.run("slow")).result

        try:
            return list(await asyncio.gather(run_quick(), run_slow()))
        finally:
            await model.aclose()

    with Simulator({"rules": rules}) as sim:
        results = asyncio.run(main(sim))
        assert sim.connections == 2
    assert results == ["quick done", "slow done"]
