"""What the workflow runtime costs per agent: a workflow of 100 agents (`wf.parallel` of 100
`wf.agent` calls, each a full subagent loop answering in one model call, every one journaled to
a file) against a bare `asyncio.gather` of the same 100 subagent runs, in one process on the
same loopback simulator (no delay): all 100 at once, and 16 at once (the runtime's default bound;
the bare gather under a semaphore of 16). Printed: wall and CPU time per agent, medians.

Run: .venv/bin/python bench/workflow_overhead.py [--agents 100] [--runs 5]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from pathlib import Path

from loopwright.subagents.definitions import builtins
from loopwright.agent import Agent
from loopwright.permissions.decide import PermissionRules
from loopwright.providers.anthropic import AnthropicModel
from loopwright.testing import Simulator
from loopwright.stores.keptfiles import FileJournal
from loopwright.workflows.journal import Journal
from loopwright.workflows.runtime import Run, run_workflow


def parent(sim: Simulator, folder: Path) -> Agent:
    return Agent(model_client=AnthropicModel(base_url=sim.base_url, api_key="sk-bench"), cwd=folder, tools=[],
                 permissions=PermissionRules(), agents=builtins())


async def bare(agent: Agent, n: int, slots: int) -> None:
    async with agent.open() as live:
        await _bare(live.resources.subagents(), n, slots)


async def _bare(subs, n: int, slots: int) -> None:
    general, bound = builtins()["general-purpose"], asyncio.Semaphore(slots)

    async def one(i: int) -> str:
        async with bound:
            return (await subs.run(general, f"PART {i}", None)).result

    assert await asyncio.gather(*(one(i) for i in range(n))) == ["ok"] * n


async def workflow(agent: Agent, n: int, journal: Path, slots: int) -> None:
    async def main(wf, args):
        return await wf.parallel(*(wf.agent(f"PART {i}") for i in range(n)))

    async with agent.open() as live:
        run = Run(Journal(FileJournal(journal)), live.resources.subagents().workflow_runner(), max_agents=slots)
        outcome = await run_workflow(run, "bench", main, [])
    assert outcome.status == "success" and outcome.value == ["ok"] * n, outcome.error


def timed(work) -> tuple[float, float]:
    wall, cpu = time.perf_counter(), time.process_time()
    asyncio.run(work)
    return time.perf_counter() - wall, time.process_time() - cpu


def once(n: int, kind: str, slots: int) -> tuple[float, float]:
    with tempfile.TemporaryDirectory() as tmp, Simulator([{"text": "ok", "repeat": n}]) as sim:
        agent = parent(sim, Path(tmp))
        work = bare(agent, n, slots) if kind == "bare" else workflow(agent, n, Path(tmp) / "journal.jsonl", slots)
        took = timed(work)
        assert len(sim.message_requests) == n
        return took


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--agents", type=int, default=100)
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args()
    n = args.agents
    once(n, "bare", n)  # warm-up: imports, the first connection
    cases = [("bare", n), ("workflow", n), ("bare", 16), ("workflow", 16)]
    times: dict[tuple[str, int], list[tuple[float, float]]] = {case: [] for case in cases}
    for _ in range(args.runs):  # interleaved
        for kind, slots in cases:
            times[(kind, slots)].append(once(n, kind, slots))
    print(f"{n} subagents, one model call each, {args.runs} runs, medians per agent:")
    for kind, slots in cases:
        wall = statistics.median(w for w, _ in times[(kind, slots)]) / n
        cpu = statistics.median(c for _, c in times[(kind, slots)]) / n
        who = "bare gather" if kind == "bare" else "workflow"
        line = f"  {who:<11} {slots:>3} at once: wall {1000 * wall:6.2f} ms   CPU {1000 * cpu:5.2f} ms"
        if kind == "workflow":
            base = times[("bare", slots)]
            line += (f"   runtime overhead: CPU {1000 * (cpu - statistics.median(c for _, c in base) / n):+.2f} ms, "
                     f"wall {1000 * (wall - statistics.median(w for w, _ in base) / n):+.2f} ms")
        print(line)
    print("(wall time with many agents at once is dominated by the simulator's and the machine's noise; "
          "CPU time is the runtime's own cost)")


if __name__ == "__main__":
    main()
