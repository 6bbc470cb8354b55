"""SQLite open race: N processes open the same new store at the same moment, again and again (a
fresh file each round), through `SqliteLedger` as `loopwright routine run` does, each then
recording an item. Prints, per process, how many opens failed and the first failure's last lines.
With more processes than cores, a process is often paused mid-open while it holds the file's
lock, which is when the others used to fail with "database is locked" (before the WAL switch was
retried: about 1 open in 300 with 6 processes on 2 cores).

Run: .venv/bin/python bench/sqlite_open_race.py [--rounds 300] [--procs 6]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time

CHILD = r"""
import sqlite3, sys, time, traceback
from loopwright.stores.ledger import SqliteLedger

folder, start, rounds, gap = Path(sys.argv[1]), float(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4])
failed = []
for n in range(rounds):
    while time.time() < start + n * gap:
        pass  # spin: every process opens round n's file at the same moment
    try:
        ledger = SqliteLedger(folder / f"{n}.db", own_folder=False)
        ledger.note("r", "x", time.time())
        ledger.close()
    except sqlite3.OperationalError:
        failed.append(traceback.format_exc().strip().splitlines()[-3:])
print(f"{len(failed)} of {rounds} opens failed" + ("".join(f"\n    {line}" for line in failed[0]) if failed else ""))
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=300)
    parser.add_argument("--procs", type=int, default=6)
    parser.add_argument("--gap", type=float, default=0.03, help="seconds between rounds")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        start = time.time() + 1.5  # every process imported and waiting by then
        procs = [subprocess.Popen([sys.executable, "-c", CHILD, folder, str(start), str(args.rounds), str(args.gap)],
                                  stdout=subprocess.PIPE, text=True) for _ in range(args.procs)]
        for n, proc in enumerate(procs):
            out, _ = proc.communicate(timeout=60 + args.rounds * args.gap * 4)
            print(f"process {n}: {out.strip()}")


if __name__ == "__main__":
    main()
