"""What the sandbox costs per command: the Bash tool running `true` sandboxed (the default: the
launcher, its guards and watcher, bwrap, the seccomp filter) against the same bwrap command
line started bare (no launcher: what bwrap itself costs), and against the tool with the sandbox
off. Medians of one run each, interleaved so a busy moment hits all three alike; the ratios are
printed from that one run.

Run: .venv/bin/python bench/sandbox_cost.py [--runs 30]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from loopwright.core.ports import ToolContext
from loopwright.sandbox import SandboxConfig, availability, wrap
from loopwright.tools.procs import CappedText, run_command
from loopwright.tools.shell import BashTool


async def main(runs: int) -> None:
    if (why := availability()) is not None:
        sys.exit(f"the sandbox cannot run here: {why}")
    with tempfile.TemporaryDirectory() as folder:
        project = Path(folder)
        subprocess.run(["git", "init", "-q", str(project)], check=True)  # a repository, as most projects are
        ctx = ToolContext(cwd=project, writable_roots=(project,))
        sandboxed, host = BashTool(), BashTool(SandboxConfig(enabled=False))
        bare = wrap(["/bin/bash", "-c", "true"], cwd=str(project), roots=(str(project),), network=False)[5:]
        args = sandboxed.validate({"command": "true"})

        async def tool(t: BashTool) -> None:
            out = await t.run(args, ctx)
            assert not out.is_error, out.content

        async def bwrap_only() -> None:
            _, code = await run_command("true", ctx, 60, CappedText(1000), argv=bare)
            assert code == 0

        cases = {"sandboxed Bash": lambda: tool(sandboxed), "bare bwrap line": bwrap_only,
                 "unsandboxed Bash": lambda: tool(host)}
        times: dict[str, list[float]] = {name: [] for name in cases}
        for case in cases.values():  # warm: imports, the availability probe
            await case()
        for _ in range(runs):
            for name, case in cases.items():
                start = time.perf_counter()
                await case()
                times[name].append(time.perf_counter() - start)
    med = {name: statistics.median(t) * 1000 for name, t in times.items()}
    for name, ms in med.items():
        print(f"{name:>18}: {ms:7.1f} ms median of {runs}")
    print(f"sandboxed / bare bwrap: {med['sandboxed Bash'] / med['bare bwrap line']:.2f}x; "
          f"sandboxed / unsandboxed: {med['sandboxed Bash'] / med['unsandboxed Bash']:.2f}x "
          f"(+{med['sandboxed Bash'] - med['unsandboxed Bash']:.1f} ms per command)")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=30)
    asyncio.run(main(parser.parse_args().runs))
