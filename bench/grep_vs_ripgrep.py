"""Grep against ripgrep on a large tree: a copy of Python's standard library (about 1,900 files)
made into a git repository whose `.gitignore` excludes its tests (so both honour the same
ignore rules), searched for a literal, a regex, and a regex in content mode. Each round runs
the Grep tool once and `rg` once (interleaved), and the medians' ratio is printed per pattern.
The Grep tool runs in this process (no process start); `rg` is a process, as the tool would be.

Run: .venv/bin/python bench/grep_vs_ripgrep.py [--runs 7]
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import sysconfig
import tempfile
import time
from pathlib import Path

import anyio

from loopwright.core.ports import ToolContext
from loopwright.tools.search import GrepTool

PATTERNS = [("literal", "import threading", "files_with_matches"),
            ("regex", r"def \w+_lock\(", "files_with_matches"),
            ("content", r"class \w+Error\(", "content")]


def stdlib_repo(root: Path) -> Path:
    repo = root / "stdlib"
    shutil.copytree(sysconfig.get_paths()["stdlib"], repo, ignore=shutil.ignore_patterns("__pycache__", "site-packages"),
                    symlinks=True)
    (repo / ".gitignore").write_text("test/\ntests/\nidlelib/\n")
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    return repo


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=7)
    runs = parser.parse_args().runs
    rg = shutil.which("rg")
    if rg is None:
        sys.exit("ripgrep (rg) is not installed: apt install ripgrep")
    tool = GrepTool()
    with tempfile.TemporaryDirectory() as tmp:
        repo = stdlib_repo(Path(tmp))
        files = sum(1 for p in repo.rglob("*") if p.is_file())
        print(f"tree: {files} files in a copy of the standard library; {runs} interleaved runs per pattern")
        print(f"{'pattern':<10} {'Grep ms':>9} {'rg ms':>8} {'ratio':>7}  results (Grep / rg)")
        for name, pattern, mode in PATTERNS:
            ours, theirs, counts = [], [], (0, 0)
            for _ in range(runs):
                started = time.perf_counter()
                out = anyio.run(tool.run, tool.validate({"pattern": pattern, "output_mode": mode, "head_limit": 0}),
                                ToolContext(cwd=repo))
                ours.append(time.perf_counter() - started)
                args = [rg, "-l" if mode == "files_with_matches" else "-n", pattern, str(repo)]
                started = time.perf_counter()
                done = subprocess.run(args, capture_output=True, text=True)
                theirs.append(time.perf_counter() - started)
                counts = (len([ln for ln in out.content.splitlines() if ln.startswith("/")]),
                          len(done.stdout.splitlines()))
            a, b = statistics.median(ours) * 1000, statistics.median(theirs) * 1000
            print(f"{name:<10} {a:9.1f} {b:8.1f} {a / b:7.2f}  {counts[0]} / {counts[1]}")


if __name__ == "__main__":
    main()
