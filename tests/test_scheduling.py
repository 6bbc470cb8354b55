"""Scheduling through the real loop and the loopback simulator: read-only calls of one response
run together, the others one after another, and results always come back in tool_use order."""

from __future__ import annotations

import time

import anyio
import pytest

from loopwright.agent import Agent
from loopwright.permissions.decide import PermissionRules
from loopwright.providers.anthropic import AnthropicModel
from loopwright.testing import Simulator
from loopwright.testing.clock import FakeClock
from loopwright.tools import tool

pytestmark = pytest.mark.anyio
N, MS = 5, 200


@tool(read_only=True)
async def slow_read(tag: str, ms: int) -> str:
    """Wait, then answer with the tag (read-only: calls may run together)."""
    await anyio.sleep(ms / 1000)
    return f"read {tag}"


@tool(name="slow_read", read_only=False)
async def slow_write(tag: str, ms: int) -> str:
    """The same work declared as writing: calls must run one at a time."""
    await anyio.sleep(ms / 1000)
    return f"read {tag}"


async def run_batch(tmp_path, tool_impl):
    # Later calls are shorter, so finishing order is the reverse of tool_use order.
    uses = [{"type": "tool_use", "id": f"toolu_{i}", "name": "slow_read", "input": {"tag": f"t{i}", "ms": MS - 30 * i}}
            for i in range(N)]
    with Simulator([{"content": uses}, {"text": "done"}]) as sim:
        agent = Agent(model_client=AnthropicModel(base_url=sim.base_url, api_key="sk-test"), cwd=tmp_path,
                      clock=FakeClock(), tools=[tool_impl], permissions=PermissionRules(allow=("slow_read",)))
        started = time.monotonic()
        async with agent.open() as running:
            result = await running.prompt("read them all")
        elapsed = time.monotonic() - started
        results = sim.message_requests[1].body["messages"][-1]["content"]
    assert result.subtype == "success"
    return elapsed, results


async def test_read_only_calls_run_together_and_answer_in_order(tmp_path):
    serial, serial_results = await run_batch(tmp_path, slow_write)
    parallel, results = await run_batch(tmp_path, slow_read)
    assert serial >= sum(MS - 30 * i for i in range(N)) / 1000  # the serial run really waited each call out
    assert parallel < serial * 0.5, (parallel, serial)  # a ratio to the serial run, not a deadline
    for got in (results, serial_results):
        assert [r["tool_use_id"] for r in got] == [f"toolu_{i}" for i in range(N)]
        assert [r["content"] for r in got] == [f"read t{i}" for i in range(N)]
