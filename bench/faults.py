"""The fault suite's long form (issue 30 item 8): each fault scenario of the tests, run N times,
and a table of what was tried and what held: loops tried, finished, lost, and tool calls run
twice. `make test` runs each scenario once (tests/test_worker_faults.py and the files named
below); this runs them again and again, to find what fails only now and then.

    .venv/bin/python bench/faults.py [--runs N] [--only WORD]

A scenario is one test; a run is one pytest process. A test reports its own figures (its
`tally`, through LOOPWRIGHT_FAULTS_TALLY); one that has none counts all its loops finished when
it passes (its assertions are that every loop finished once) and all lost when it fails.
Scenarios that need PostgreSQL, bubblewrap or a tmpfs mount are reported as skipped where this
machine has none. Other faults the suite covers, not repeated here: hostile MCP servers
(tests/test_mcp_hostile.py) and malformed SDK control messages (tests/test_sdk_control.py)."""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FAULTS = "tests/test_worker_faults.py"

# (what is done to the loops, the test, how many loops it runs)
SCENARIOS = [
    ("kill -9 mid tool call (SQLite, worker restarted)",
     f"{FAULTS}::test_a_killed_workers_command_stops_writing[no-sandbox-foreground]", 1),
    ("kill -9 with writers outside the tool's group",
     f"{FAULTS}::test_the_next_worker_ends_what_the_signal_cannot_reach_before_it_takes_over", 1),
    ("kill -9 mid routine item (routine fired onto a queue)",
     f"{FAULTS}::test_a_worker_killed_mid_routine_item_is_replaced_and_each_item_runs_once", 2),
    ("kill -9 mid parallel attempts (PostgreSQL survivor)",
     "tests/test_worker_attempts.py::test_a_worker_killed_mid_attempts_is_replaced_and_nothing_runs_twice[pg-survivor]",
     2),
    ("kill -9 mid parallel attempts (SQLite, worker restarted)",
     "tests/test_worker_attempts.py::test_a_worker_killed_mid_attempts_is_replaced_and_nothing_runs_twice"
     "[sqlite-restart]", 2),
    ("PostgreSQL restart (pg_ctl restart -m fast) under two workers",
     f"{FAULTS}::test_loops_on_two_workers_survive_a_database_restart", 2),
    ("PostgreSQL down past the retry bound, workers",
     f"{FAULTS}::test_workers_wait_out_a_store_down_past_the_bound_and_say_so", 2),
    ("PostgreSQL down past the retry bound, local -p (ends, then resumed)",
     f"{FAULTS}::test_a_loop_whose_store_is_gone_past_the_bound_ends_with_an_error_naming_it", 1),
    ("full disk (ENOSPC) under one worker's transcripts, resumed after",
     f"{FAULTS}::test_a_full_disk_ends_that_workers_loops_clearly_and_they_resume_once_it_is_freed", 4),
]


def run_once(test: str, loops: int, scratch: Path, k: int) -> dict:
    scratch.mkdir(parents=True, exist_ok=True)
    tally = scratch / f"tally-{k}.jsonl"
    env = dict(os.environ, LOOPWRIGHT_FAULTS_TALLY=str(tally))
    started = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "pytest", test, "-q", "-x", "-p", "no:cacheprovider",
                           "--basetemp", str(scratch / f"run-{k}")], cwd=ROOT, env=env, capture_output=True,
                          text=True)
    seconds = time.monotonic() - started
    last = (done.stdout.strip().splitlines() or [""])[-1]
    if " skipped" in last and " passed" not in last and " failed" not in last:
        return {"outcome": "skipped", "seconds": seconds, "why": done.stdout}
    figures = [json.loads(line) for line in tally.read_text().splitlines()] if tally.exists() else []
    held = done.returncode == 0
    if figures:
        finished = sum(f["finished"] for f in figures)
        twice = sum(f["twice"] for f in figures)
        tried = sum(f["loops"] for f in figures)
    else:
        tried, finished, twice = loops, loops if held else 0, 0
    return {"outcome": "held" if held else "failed", "seconds": seconds, "loops": tried, "finished": finished,
            "twice": twice, "said": "" if held else done.stdout[-3000:]}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=3, help="runs of each scenario (default 3)")
    parser.add_argument("--only", default="", help="only the scenarios whose name holds this word")
    opts = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory(prefix="lw-faults-") as tmp:
        for name, test, loops in SCENARIOS:
            if opts.only and opts.only.lower() not in name.lower():
                continue
            results = []
            for k in range(opts.runs):
                result = run_once(test, loops, Path(tmp) / f"{len(rows)}", k)
                results.append(result)
                print(f"  {name}: run {k + 1}: {result['outcome']} ({result['seconds']:.0f}s)", file=sys.stderr,
                      flush=True)
                if result["outcome"] == "failed":
                    print(result["said"], file=sys.stderr)
                if result["outcome"] == "skipped":
                    break
            rows.append((name, results))
    print(f"\n| fault | runs | held | loops | finished | lost | run twice | s/run |\n|---|---|---|---|---|---|---|---|")
    for name, results in rows:
        if results and results[0]["outcome"] == "skipped":
            print(f"| {name} | skipped here | | | | | | |")
            continue
        loops = sum(r["loops"] for r in results)
        finished = sum(r["finished"] for r in results)
        print(f"| {name} | {len(results)} | {sum(r['outcome'] == 'held' for r in results)} | {loops} | {finished} | "
              f"{loops - finished} | {sum(r['twice'] for r in results)} | "
              f"{sum(r['seconds'] for r in results) / len(results):.0f} |")
    return 0 if all(r["outcome"] != "failed" for _, results in rows for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
