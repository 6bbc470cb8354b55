"""Start of `loopwright` (no arguments, in a pseudo-terminal, 80x24) to its interactive prompt being
ready for typing: the prompt drawn with its status line, for the prompt_toolkit/rich terminal and
for plain lines (NO_COLOR). The pseudo-terminal answers prompt_toolkit's cursor-position request
as a terminal does. Target: under 0.5 s.

Run: .venv/bin/python bench/interactive_ready.py [--runs 7]
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import sys
import tempfile
import time

import pexpect

from loopwright.testing import Simulator


def ready_s(cwd: str, base_url: str, extra: dict[str, str]) -> float:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "NO_COLOR"))}
    env.update(ANTHROPIC_API_KEY="sk-test", ANTHROPIC_BASE_URL=base_url, HOME=os.path.join(cwd, "home"),
               LOOPWRIGHT_HOME=os.path.join(cwd, "lw"), TERM="xterm-256color", **extra)
    started = time.perf_counter()
    child = pexpect.spawn(sys.executable, ["-m", "loopwright"], cwd=cwd, env=env, dimensions=(24, 80),
                          encoding="utf-8", timeout=30)
    marker = "$0.0000" if "NO_COLOR" not in extra else "› "  # the status line comes with the prompt
    while child.expect([re.escape(marker),
                        r"\x1b\[6n"]) == 1:
        child.send("\x1b[20;1R")
    took = time.perf_counter() - started
    child.close(force=True)
    return took


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=7)
    runs = parser.parse_args().runs
    with Simulator([{"text": "ok", "repeat": -1}]) as sim, tempfile.TemporaryDirectory() as cwd:
        ready_s(cwd, sim.base_url, {})  # warm the file cache
        fancy = [ready_s(cwd, sim.base_url, {}) for _ in range(runs)]
        plain = [ready_s(cwd, sim.base_url, {"NO_COLOR": "1"}) for _ in range(runs)]
    print(f"start to interactive prompt ready (prompt_toolkit + rich): median {statistics.median(fancy) * 1000:.0f} ms "
          f"over {runs} runs")
    print(f"start to interactive prompt ready (plain, NO_COLOR):       median {statistics.median(plain) * 1000:.0f} ms "
          f"over {runs} runs")
    print("target: < 500 ms")


if __name__ == "__main__":
    main()
