"""Per-turn cost as the conversation grows (issue 32 item 4b): a 300-turn tool loop on the loopback
simulator, each turn a cheap in-process tool returning ~2 KB (as a Read of a small file does), and
the gap between the tool's end and the arrival of the next request, per bucket of turns (1-10,
91-100, 291-300): what the client does between a tool's result and the next call (record the
result, decide, build and send the request). Two clients, interleaved in the same run: today's,
whose request body is put together from each message's JSON encoded once, and the same client
encoding the whole request every turn as it did before (the baseline, kept here to compare).

Run: .venv/bin/python bench/long_conversation.py [--turns 300] [--runs 2]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

import anyio

from loopwright.agent import Agent
from loopwright.core.types import ModelRequest, compact_json
from loopwright.permissions.decide import PermissionRules
from loopwright.policy.stop import Limits
from loopwright.providers.anthropic import AnthropicModel, with_cache_breakpoints
from loopwright.testing import Simulator
from loopwright.tools import tool

PAGE = "\n".join(f"{i:4d}  a line of a source file, about sixty characters long, as Read shows" for i in range(30))


class WholeBodyModel(AnthropicModel):
    """The client as it was: the whole request turned into one dict and encoded every turn."""

    def _body(self, request: ModelRequest) -> bytes:
        body = request.to_api(stream=True)
        return compact_json(with_cache_breakpoints(body) if self.prompt_caching else body)


def run(turns: int, cwd: Path, model_class: type[AnthropicModel]) -> list[float]:
    """The gap of every turn, ms: the tool's end to the next request's arrival."""
    ended: list[float] = []

    @tool(read_only=True)
    async def page(n: int = 0) -> str:
        """Show a page."""
        ended.append(time.monotonic())
        return PAGE

    script = [{"tool_use": {"name": "page", "input": {"n": 1}}, "repeat": turns}, {"text": "done"}]
    with Simulator(script) as sim:
        agent = Agent(model_client=model_class(base_url=sim.base_url, api_key="sk-bench"), cwd=cwd, tools=[page],
                      permissions=PermissionRules(allow=("page",)), system_prompt="You page.",
                      limits=Limits(max_turns=turns + 2))
        result = anyio.run(agent.run, "page through it")
        assert result.num_turns == turns + 1, result.to_json()
        arrivals = [r.time for r in sim.message_requests[1:]]
    return [(a - e) * 1000 for e, a in zip(ended, arrivals)]


def buckets(turns: int) -> list[tuple[int, int]]:
    marks = [m for m in (10, 100, 300, 1000) if m <= turns] or [turns]
    return [(max(1, m - 9), m) for m in marks]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=300)
    parser.add_argument("--runs", type=int, default=2)
    opts = parser.parse_args()
    got: dict[str, list[list[float]]] = {"fragments": [], "whole": []}
    with tempfile.TemporaryDirectory() as tmp:
        cwd = Path(tmp)
        run(5, cwd, AnthropicModel)  # warm-up
        for _ in range(opts.runs):  # interleaved: both meet the same load on a shared machine
            got["fragments"].append(run(opts.turns, cwd, AnthropicModel))
            got["whole"].append(run(opts.turns, cwd, WholeBodyModel))
    print(f"tool's end to the next request, {opts.turns}-turn loop, ~{len(PAGE) // 1000 + 1} KB a tool result; "
          f"median ms per bucket of turns over {opts.runs} interleaved runs")
    first: dict[str, float] = {}
    for lo, hi in buckets(opts.turns):
        row = {kind: statistics.median(g for gaps in runs for g in gaps[lo - 1:hi]) for kind, runs in got.items()}
        for kind in row:
            first.setdefault(kind, row[kind])
        print(f"  turns {lo:3d}-{hi:3d}:  fragments {row['fragments']:6.2f} ms (x{row['fragments'] / first['fragments']:.2f} "
              f"of turns 1-10)   whole body {row['whole']:6.2f} ms (x{row['whole'] / first['whole']:.2f})   "
              f"fragments / whole {row['fragments'] / row['whole']:.2f}")


if __name__ == "__main__":
    main()
