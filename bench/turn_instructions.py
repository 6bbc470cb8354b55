"""Instructions per Bash turn (callgrind), the load-independent figure beside `turn_overhead.py`'s
timings on a shared machine: one child process under callgrind runs N turns, another M turns,
and (N - M) / (N - M turns) is what a turn costs, start-up cancelling out. The simulator runs in
a process of its own (not counted); the shell's children are not traced. Sides: loopwright's
Bash turn with a JSONL transcript, unsandboxed (`jsonl`) or sandboxed as by default
(`sandboxjsonl`), and the floor (`floor`: `turn_overhead.run_bare_bash_jsonl`, a bare httpx loop
writing the same records, unsandboxed).

Run: .venv/bin/python bench/turn_instructions.py [--sides jsonl floor] [--few 5] [--many 45]
(valgrind must be installed; each child takes ~40 s and more under load).
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import tempfile
from pathlib import Path

BENCH = Path(__file__).resolve().parent


def child(url: str, turns: int, side: str) -> None:
    """One run of `turns` Bash turns against the simulator at `url` (the process callgrind counts)."""
    sys.path.insert(0, str(BENCH))
    import turn_overhead as bench

    with tempfile.TemporaryDirectory() as d:
        if side == "floor":
            class Remote:  # the bench's floor, against the simulator in the other process
                base_url, message_requests = url, []

                def __init__(self, script: object) -> None: ...

                def __enter__(self) -> "Remote":
                    return self

                def __exit__(self, *exc: object) -> None: ...

            bench.Simulator = Remote
            bench.run_bare_bash_jsonl(turns, Path(d))
            return
        import anyio

        from loopwright import Agent, Session
        from loopwright.permissions.decide import PermissionRules
        from loopwright.providers.anthropic import AnthropicModel
        from loopwright.sandbox import SandboxConfig
        from loopwright.session.opening import open_session
        from loopwright.stores.jsonl import JsonlStore

        cwd = Path(d)
        client = AnthropicModel(base_url=url, api_key="sk-bench")
        agent = Agent(model_client=client, cwd=cwd, permissions=PermissionRules(allow=("Bash",)),
                      sandbox=None if side == "sandboxjsonl" else SandboxConfig(enabled=False))
        session = open_session(JsonlStore(cwd / "home", cwd), str(cwd))

        async def go() -> None:
            try:
                result = await agent.run("run it over and over", session=Session.opened(session))
                assert result.num_turns == turns + 1, result.to_json()
                # Nothing returned: asyncio's runner reprs its main task, result and all, as the run
                # ends; that grows with the conversation and would be counted as per-turn work.
            finally:
                await client.aclose()

        anyio.run(go)
        session.close()


def counted(turns: int, side: str) -> int:
    """Instructions of one child process running `turns` turns."""
    sim = subprocess.Popen([sys.executable, "-c", (
        "import sys; sys.path.insert(0, sys.argv[2]); from turn_overhead import bash_script; "
        "from loopwright.testing import Simulator\n"
        "with Simulator(bash_script(int(sys.argv[1]))) as sim:\n"
        "    print(sim.base_url, flush=True); sys.stdin.read()"), str(turns), str(BENCH)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        url = sim.stdout.readline().strip()
        with tempfile.TemporaryDirectory() as d:
            done = subprocess.run(["valgrind", "--tool=callgrind", "--trace-children=no",
                                   f"--callgrind-out-file={d}/out", sys.executable, __file__, "--child", url,
                                   str(turns), side], capture_output=True, text=True)
        found = re.search(r"Collected : (\d+)", done.stderr)
        if done.returncode != 0 or found is None:
            raise SystemExit(f"the {side} child failed ({done.returncode}):\n{done.stderr[-2000:]}")
        return int(found.group(1))
    finally:
        sim.stdin.close()
        sim.wait()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sides", nargs="+", default=["jsonl", "floor"], choices=["jsonl", "sandboxjsonl", "floor"])
    parser.add_argument("--few", type=int, default=5)
    parser.add_argument("--many", type=int, default=45)
    parser.add_argument("--child", nargs=3, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        url, turns, side = args.child
        return child(url, int(turns), side)
    per_turn = {}
    for side in args.sides:
        few, many = counted(args.few, side), counted(args.many, side)
        per_turn[side] = (many - few) / (args.many - args.few)
        print(f"{side:>13}: {per_turn[side] / 1e6:.2f} M instructions a turn "
              f"({args.few} turns {few / 1e6:.1f} M, {args.many} turns {many / 1e6:.1f} M)", flush=True)
    if "floor" in per_turn:
        for side, value in per_turn.items():
            if side != "floor":
                print(f"{side} / floor: {value / per_turn['floor']:.2f}")


if __name__ == "__main__":
    main()
