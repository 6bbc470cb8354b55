"""The official Agent SDK (`claude-agent-sdk`) driving loopwright, against the same SDK driving
the Claude Code CLI it bundles, both offline on the same loopback simulator, in one run.

- start: `ClaudeSDKClient.connect()` called, then one `query()`, to the first model request
  arriving at the simulator (process start, the `initialize` exchange, the session's set-up);
- per turn: in a tool loop of `--turns` Bash calls (`true`), allowed by `allowed_tools`, the gap
  between the end of one response and the arrival of the next request (everything the CLI does
  in between: parse, decide, run the command, report to the SDK, build and send the request).

Printed as medians and as the ratio loopwright / bundled CLI. The bundled CLI is skipped (and
said so) where the SDK ships without one.

Run: .venv/bin/python bench/sdk_overhead.py [--runs 5] [--turns 20]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import anyio
from claude_agent_sdk import ClaudeAgentOptions, ClaudeSDKClient

from loopwright.testing import Simulator

SRC = Path(__file__).resolve().parent.parent / "src"
ENV = {"ANTHROPIC_API_KEY": "sk-bench", "ANTHROPIC_MODEL": "", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
       "DISABLE_AUTOUPDATER": "1", "DISABLE_TELEMETRY": "1"}


def loopwright_cli(folder: Path) -> str:
    cli = folder / "loopwright"
    cli.write_text(f'#!/bin/sh\nPYTHONPATH="{SRC}" exec "{sys.executable}" -m loopwright "$@"\n')
    cli.chmod(0o755)
    return str(cli)


def bundled_cli(folder: Path) -> str | None:
    import claude_agent_sdk

    path = Path(claude_agent_sdk.__file__).parent / "_bundled" / "claude"
    return str(path) if path.exists() else None


def one(cli_for, script: list[dict], allowed: list[str]) -> tuple[float, list[float]]:
    """(ms from connect() to the first request, per-turn gaps in ms) for one session."""
    with tempfile.TemporaryDirectory() as tmp, Simulator(script) as sim:
        folder = Path(tmp)
        (folder / "work").mkdir()
        (folder / "home").mkdir()
        opts = ClaudeAgentOptions(cli_path=cli_for(folder), cwd=str(folder / "work"), allowed_tools=allowed,
                                  env=ENV | {"ANTHROPIC_BASE_URL": sim.base_url, "HOME": str(folder / "home"),
                                             "LOOPWRIGHT_HOME": str(folder / "home" / ".lw")})

        async def go() -> float:
            began = time.monotonic()
            async with ClaudeSDKClient(opts) as client:
                await client.query("go")
                async for _ in client.receive_response():
                    pass
            return began

        began = anyio.run(go)
        reqs = sim.message_requests
        return (reqs[0].time - began) * 1000, [(b.time - a.finished) * 1000 for a, b in zip(reqs, reqs[1:])]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--turns", type=int, default=20)
    args = parser.parse_args()
    loop = [{"tool_use": {"name": "Bash", "input": {"command": "true"}}, "repeat": args.turns}, {"text": "done"}]
    hello = [{"text": "hello"}]
    with tempfile.TemporaryDirectory() as tmp:
        have_bundled = bundled_cli(Path(tmp)) is not None
    clis = {"loopwright": loopwright_cli, **({"bundled CLI": bundled_cli} if have_bundled else {})}
    starts: dict[str, list[float]] = {name: [] for name in clis}
    turns: dict[str, list[float]] = {name: [] for name in clis}
    for _ in range(args.runs):  # interleaved, so a noisy moment hits both
        for name, cli in clis.items():
            starts[name].append(one(cli, hello, [])[0])
            turns[name] += one(cli, loop, ["Bash"])[1]
    print(f"Agent SDK driving each CLI, {args.runs} runs, {args.turns}-turn Bash loop, medians:")
    for name in clis:
        print(f"  {name:12} connect()+query() to first request {statistics.median(starts[name]):7.1f} ms   "
              f"per turn {statistics.median(turns[name]):6.1f} ms")
    if have_bundled:
        print(f"  ratio loopwright / bundled CLI: start "
              f"{statistics.median(starts['loopwright']) / statistics.median(starts['bundled CLI']):.2f}, per turn "
              f"{statistics.median(turns['loopwright']) / statistics.median(turns['bundled CLI']):.2f}")
    else:
        print("  the installed SDK has no bundled CLI: compare with the figures in the reference")


if __name__ == "__main__":
    os.environ.pop("ANTHROPIC_BASE_URL", None)
    main()
