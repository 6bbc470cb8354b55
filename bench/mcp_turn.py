"""What an MCP tool costs a turn, against the least a client can do with the official SDK.

A tool loop where each turn calls one tool of a stdio MCP server (tests/mcpservers/toolbox.py,
`echo`): loopwright's per-turn gap (the simulator's last byte of a response to the arrival of the
next request) next to a bare loop in the same run — bare httpx to the simulator plus the `mcp`
SDK's own client calling the same server — as a ratio. Also the start of `loopwright -p` to its
first request with that one server configured, next to the same without it.

Run: .venv/bin/python bench/mcp_turn.py [--turns 40] [--runs 5]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import anyio
import httpx

from loopwright.agent import Agent
from loopwright.mcp.config import parse_servers
from loopwright.permissions.rules import PermissionRules
from loopwright.providers.anthropic import AnthropicModel
from loopwright.testing import Simulator
from turn_overhead import assistant_blocks  # the same SSE reading as the other bare loops

TOOLBOX = Path(__file__).resolve().parents[1] / "tests" / "mcpservers" / "toolbox.py"
CONFIG = {"tb": {"command": sys.executable, "args": [str(TOOLBOX)]}}


def script(turns: int) -> list[dict]:
    return [{"tool_use": {"name": "mcp__tb__echo", "input": {"text": "ping"}}, "repeat": turns}, {"text": "done"}]


def gaps_ms(sim: Simulator) -> list[float]:
    reqs = sim.message_requests
    return [(b.time - a.finished) * 1000 for a, b in zip(reqs, reqs[1:])]


def run_loopwright(turns: int, cwd: Path) -> list[float]:
    with Simulator(script(turns)) as sim:
        agent = Agent(model_client=AnthropicModel(base_url=sim.base_url, api_key="sk-bench"), cwd=cwd,
                      permissions=PermissionRules(allow=("mcp__tb",)),
                      mcp_servers=parse_servers(CONFIG, "bench", "dynamic", os.environ))

        async def go():
            return await agent.run("echo, again and again")  # closes the MCP servers it started

        result = anyio.run(go)
        assert result.num_turns == turns + 1, result.to_json()
        return gaps_ms(sim)


def run_bare(turns: int) -> list[float]:
    from mcp import Client, StdioServerParameters

    async def go() -> list[float]:
        with Simulator(script(turns)) as sim:
            params = StdioServerParameters(command=sys.executable, args=[str(TOOLBOX)])
            async with Client(params, mode="legacy") as mcp, httpx.AsyncClient(base_url=sim.base_url) as http:
                listed = await mcp.list_tools()
                tools = [{"name": f"mcp__tb__{t.name}", "description": t.description or "",
                          "input_schema": t.input_schema} for t in listed.tools]
                messages: list = [{"role": "user", "content": "echo, again and again"}]
                for _ in range(turns):
                    body = {"model": "claude-sonnet-5", "max_tokens": 64000, "messages": messages, "stream": True,
                            "tools": tools}
                    async with http.stream("POST", "/v1/messages", json=body, headers={"x-api-key": "sk-bench"}) as r:
                        events = [json.loads(line[6:]) async for line in r.aiter_lines() if line.startswith("data: ")]
                    blocks = assistant_blocks(events)
                    call = next(b for b in blocks if b["type"] == "tool_use")
                    out = await mcp.call_tool(call["name"].removeprefix("mcp__tb__"), call["input"])
                    text = "".join(getattr(c, "text", "") for c in out.content)
                    messages = messages + [{"role": "assistant", "content": blocks},
                                           {"role": "user", "content": [{"type": "tool_result",
                                                                         "tool_use_id": call["id"], "content": text}]}]
                await http.post("/v1/messages", json={"model": "claude-sonnet-5", "max_tokens": 1000,
                                                      "messages": messages, "tools": tools},
                                headers={"x-api-key": "sk-bench"})
            return gaps_ms(sim)

    return anyio.run(go)


def start_to_first_request(runs: int, cwd: Path, with_mcp: bool) -> list[float]:
    env = dict(os.environ, ANTHROPIC_API_KEY="sk-bench", LOOPWRIGHT_HOME=str(cwd / "home"), HOME=str(cwd))
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    command = [sys.executable, "-m", "loopwright", "-p", "hi"]
    if with_mcp:
        command += ["--mcp-config", json.dumps({"mcpServers": CONFIG})]
    times = []
    for run in range(runs + 1):
        with Simulator([{"text": "hi"}]) as sim:
            env["ANTHROPIC_BASE_URL"] = sim.base_url
            started = time.monotonic()
            subprocess.run(command, env=env, cwd=cwd, capture_output=True, check=True)
            if run:
                times.append((sim.message_requests[0].time - started) * 1000)
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=40)
    parser.add_argument("--runs", type=int, default=5)
    opts = parser.parse_args()
    med = statistics.median
    with tempfile.TemporaryDirectory() as tmp:
        cwd = Path(tmp)
        run_loopwright(3, cwd)  # warm-up
        lw = run_loopwright(opts.turns, cwd)
        bare = run_bare(opts.turns)
        plain = start_to_first_request(opts.runs, cwd, with_mcp=False)
        with_mcp = start_to_first_request(opts.runs, cwd, with_mcp=True)
    print(f"per-turn gap, {opts.turns}-turn loop calling a stdio MCP tool (median ms; end of response → next request)")
    print(f"  loopwright                  {med(lw):7.2f} ms")
    print(f"  bare httpx + mcp SDK client {med(bare):7.2f} ms   ratio loopwright/bare = {med(lw) / med(bare):.2f}")
    print(f"start of `loopwright -p` to first request (median of {opts.runs}):")
    print(f"  no MCP server               {med(plain):7.0f} ms")
    print(f"  one stdio MCP server        {med(with_mcp):7.0f} ms   (the SDK's import and the server's start "
          "and handshake are waited for, as Claude Code does in -p)")


if __name__ == "__main__":
    main()
