"""What the sandbox costs per command: the Bash tool running `true` sandboxed (the default: the
warm helper's watcher and its guards, bwrap, the seccomp filter; and with the helper off, the
launcher, a fresh interpreter per command, as before it) against bwrap started bare with the
same mounts (the guards' binds included) and the same seccomp filter — no launcher: what bwrap
itself costs, the floor of a sandboxed command —, against the bwrap line without the guards, and
against the tool with the sandbox off. Medians of one run each, interleaved so a busy moment hits
all of them alike; the ratios are printed from that one run.

Run: .venv/bin/python bench/sandbox_cost.py [--runs 30] [--old-launcher FILE]
"""

from __future__ import annotations

import argparse
import asyncio
import marshal
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from loopwright.core.ports import ToolContext
from loopwright.sandbox import SandboxConfig, availability, launch, wrap
from loopwright.tools.procs import CappedText, run_command
from loopwright.tools.shell import BashTool


def bwrap_floor(project: Path, command: str = "true") -> tuple[dict, list[str], list[str]]:
    """The launcher's spec for `command` in `project`, its bwrap line without the guards, and the
    same line with the guards' binds as the launcher adds them (both still without `--seccomp`:
    `with_seccomp` adds it). The launcher's placeholders are made here once as plain files (not
    marked as placeholders, so no launcher removes them): every run binds the same."""
    line = wrap(["/bin/bash", "-c", command], cwd=str(project), roots=(str(project),), network=False)
    spec, bare = marshal.loads(bytes.fromhex(line[5])), line[6:]
    mounts, _ = launch.guard_mounts(spec["guards"])
    for path, _kind, _mode, _content in spec["guards"]:
        if os.path.lexists(path):
            os.utime(path, follow_symlinks=False)
    return spec, bare, bare[:spec["insert"]] + mounts + bare[spec["insert"]:]


def with_seccomp(spec: dict, argv: list[str]) -> tuple[list[str], int]:
    """`argv` reading the spec's socket filter from a pipe, as the launcher hands it to bwrap; and
    the pipe's read end, for the caller to pass on and close."""
    read, write = os.pipe()
    os.write(write, spec["seccomp"])
    os.close(write)
    at = spec["insert"]
    return argv[:at] + ["--seccomp", str(read)] + argv[at:], read


async def main(runs: int, old_launcher: str | None) -> None:
    if (why := availability()) is not None:
        sys.exit(f"the sandbox cannot run here: {why}")
    with tempfile.TemporaryDirectory() as folder:
        project = Path(folder)
        subprocess.run(["git", "init", "-q", str(project)], check=True)  # a repository, as most projects are
        ctx = ToolContext(cwd=project, writable_roots=(project,))
        sandboxed, host = BashTool(), BashTool(SandboxConfig(enabled=False))
        spec, bare, guarded = bwrap_floor(project)
        args = sandboxed.validate({"command": "true"})

        async def tool(t: BashTool, helper: bool = True) -> None:
            if not helper:  # the launcher, a fresh interpreter per command, as before the warm helper
                os.environ["LOOPWRIGHT_SANDBOX_HELPER"] = "off"
            try:
                out = await t.run(args, ctx)
            finally:
                os.environ.pop("LOOPWRIGHT_SANDBOX_HELPER", None)
            assert not out.is_error, out.content

        async def bwrap_only(argv: list[str]) -> None:
            full, read = with_seccomp(spec, argv)
            try:
                _, code = await run_command("true", ctx, 60, CappedText(1000), argv=full, pass_fds=(read,))
            finally:
                os.close(read)
            assert code == 0

        async def old(path: str) -> None:  # another launcher file (an older one), run by path
            line = wrap(["/bin/bash", "-c", "true"], cwd=str(project), roots=(str(project),), network=False)
            _, code = await run_command("true", ctx, 60, CappedText(1000), argv=[line[0], "-I", "-S", path, *line[5:]])
            assert code == 0

        cases = {"sandboxed Bash": lambda: tool(sandboxed), "sandboxed, launcher": lambda: tool(sandboxed, False),
                 "bare bwrap, guards": lambda: bwrap_only(guarded),
                 "bare bwrap, no guards": lambda: bwrap_only(bare), "unsandboxed Bash": lambda: tool(host)}
        if old_launcher:
            cases["sandboxed, old launcher"] = lambda: old(old_launcher)
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
        print(f"{name:>23}: {ms:7.1f} ms median of {runs}")
    print(f"sandboxed / bare bwrap with the same guards: {med['sandboxed Bash'] / med['bare bwrap, guards']:.2f}x "
          f"(+{med['sandboxed Bash'] - med['bare bwrap, guards']:.1f} ms: the tool, the helper's set-up and clean-up); "
          f"the guards' binds: +{med['bare bwrap, guards'] - med['bare bwrap, no guards']:.1f} ms; "
          f"sandboxed / unsandboxed: {med['sandboxed Bash'] / med['unsandboxed Bash']:.2f}x "
          f"(+{med['sandboxed Bash'] - med['unsandboxed Bash']:.1f} ms per command)")
    print(f"launcher (the helper off) / bare bwrap with the same guards: "
          f"{med['sandboxed, launcher'] / med['bare bwrap, guards']:.2f}x")
    if old_launcher:
        print(f"old launcher / bare bwrap with the same guards: "
              f"{med['sandboxed, old launcher'] / med['bare bwrap, guards']:.2f}x")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=30)
    parser.add_argument("--old-launcher", metavar="FILE",
                        help="also time another launch.py (e.g. `git show main:src/loopwright/sandbox/launch.py`), "
                             "run by path as it used to be")
    opts = parser.parse_args()
    asyncio.run(main(opts.runs, opts.old_launcher))
