"""What a project's context costs at start-up: `loopwright -p hi` from process start to the first
request's arrival at the simulator, in three folders measured in turn — an empty project, one
with memory files at three levels (user, project root, a `.claude/CLAUDE.md` with an `@` import),
and one with a 50-skill `.claude/skills` folder — as medians and as ratios to the empty one.

Run: .venv/bin/python bench/context_startup.py [--runs 11]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from loopwright.testing import Simulator


def folders(root: Path) -> dict[str, Path]:
    empty, memory, skills = root / "empty", root / "memory", root / "skills"
    for f in (empty, memory, skills):
        f.mkdir()
    (root / "home" / ".claude").mkdir(parents=True)
    (memory / "CLAUDE.md").write_text("# Project\nRun the tests with `make test`.\n" * 20)
    (memory / ".claude").mkdir()
    (memory / ".claude" / "CLAUDE.md").write_text("See @docs/style.md for the style.\n")
    (memory / "docs").mkdir()
    (memory / "docs" / "style.md").write_text("Use four spaces.\n" * 30)
    for k in range(50):
        d = skills / ".claude" / "skills" / f"skill-{k:02d}"
        d.mkdir(parents=True)
        (d / "SKILL.md").write_text(f"---\nname: skill-{k:02d}\ndescription: Does task number {k} the way this "
                                    f"project wants it\n---\n" + "Step one. Step two.\n" * 40)
    return {"empty project": empty, "memory at three levels": memory, "50 skills": skills}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=11)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        places = folders(root)
        (root / "home" / ".claude" / "CLAUDE.md").write_text("I prefer short answers.\n")
        env = dict(os.environ, ANTHROPIC_API_KEY="sk-bench", HOME=str(root / "home"),
                   LOOPWRIGHT_HOME=str(root / "home" / ".lw"))
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        times: dict[str, list[float]] = {name: [] for name in places}
        for run in range(args.runs + 1):  # the first round warms up (bytecode, class cache)
            for name, cwd in places.items():
                with Simulator([{"text": "hi"}]) as sim:
                    env["ANTHROPIC_BASE_URL"] = sim.base_url
                    began = time.monotonic()
                    subprocess.run([sys.executable, "-m", "loopwright", "-p", "hi"], env=env, cwd=cwd,
                                   capture_output=True, check=True)
                    if run:
                        times[name].append((sim.message_requests[0].time - began) * 1000)
    base = statistics.median(times["empty project"])
    print(f"start of `loopwright -p hi` to the first request, median of {args.runs} interleaved runs:")
    for name, got in times.items():
        print(f"  {name:24} {statistics.median(got):6.0f} ms   ratio {statistics.median(got) / base:.2f}")


if __name__ == "__main__":
    main()
