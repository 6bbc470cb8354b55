"""Parallel attempts overlap: the wall time of `loopwright -p … --attempts 3` against
`--attempts 1` on the same simulator, every model response (attempts and judge) delayed by
200 ms, in a fresh git repository each run. Three attempts that ran one after the other would
take about 3× as long; the ratio printed shows how much of that the overlap saves.

Run: .venv/bin/python bench/attempts_overlap.py [--runs 5] [--delay 0.2]
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

from loopwright.testing import Simulator

SRC = Path(__file__).resolve().parent.parent / "src"


def repo(folder: Path) -> Path:
    root = folder / "repo"
    root.mkdir()
    subprocess.run(["git", "init", "-q", "-b", "main"], cwd=root, check=True)
    (root / "app.py").write_text("def add(a, b):\n    return 0\n")
    subprocess.run(["git", "-c", "user.name=b", "-c", "user.email=b@b", "commit", "-q", "--allow-empty", "-m", "s"],
                   cwd=root, check=True)
    return root


def one(n: int, delay: float) -> float:
    judge = {"text": json.dumps({"attempts": [{"label": "A", "defects": [], "verdict": "acceptable"}],
                                 "winner": "A", "reasons": "fine"}), "delay": delay}
    work = [{"tool_use": {"name": "Write", "input": {"file_path": "app.py", "content": "def add(a, b):\n"
                                                     "    return a + b\n"}}, "delay": delay},
            {"text": "done", "delay": delay}]
    script = {"rules": [{"match": {"system_contains": "reviewer of several"}, "responses": [judge]},
                        {"responses": [{**r, "repeat": n} for r in work]}]}
    with tempfile.TemporaryDirectory() as tmp, Simulator(script) as sim:
        folder = Path(tmp)
        env = {k: v for k, v in os.environ.items() if not k.startswith("ANTHROPIC_")}
        env |= {"ANTHROPIC_BASE_URL": sim.base_url, "ANTHROPIC_API_KEY": "sk-bench", "HOME": str(folder / "home"),
                "LOOPWRIGHT_HOME": str(folder / "home" / ".lw"), "TMPDIR": tmp, "PYTHONPATH": str(SRC)}
        began = time.monotonic()
        out = subprocess.run([sys.executable, "-m", "loopwright", "-p", "fix add", "--attempts", str(n),
                              "--permission-mode", "acceptEdits", "--output-format", "json"], cwd=repo(folder),
                             env=env, capture_output=True, text=True, timeout=300)
        took = time.monotonic() - began
        assert json.loads(out.stdout)["attempts"]["winner"] is not None, out.stderr
        return took


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--delay", type=float, default=0.2)
    args = parser.parse_args()
    single, triple = [], []
    for _ in range(args.runs):  # interleaved
        single.append(one(1, args.delay))
        triple.append(one(3, args.delay))
    a, b = statistics.median(single), statistics.median(triple)
    print(f"{args.runs} runs, {args.delay * 1000:.0f} ms per model response, medians:")
    print(f"  --attempts 1: {a:.2f} s   --attempts 3: {b:.2f} s   ratio {b / a:.2f} (one after the other: ~3)")


if __name__ == "__main__":
    main()
