"""The embedded store's SQLite file shared by processes that start at the same moment: opening it
while another process holds its write lock waits for the lock rather than failing with
"database is locked" (seen when two `routine run`s started at once on a new home)."""

from __future__ import annotations

import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor, wait

import pytest

from loopwright.stores import open_store

# Another process that writes the file as SQLite's default (rollback journal) mode does: it holds
# the write lock until it reads a line, as a process switching a new file to WAL holds it a moment.
HOLDER = """
import sqlite3, sys
db = sqlite3.connect(sys.argv[1], isolation_level=None)
db.execute("BEGIN IMMEDIATE")
print("held", flush=True)
sys.stdin.readline()
db.execute("ROLLBACK")
"""


def open_and_use(url, cwd, kind):
    """Open the store (the step that met the lock), then use it: what a process starting up does."""
    store = getattr(open_store(url, cwd), kind)()
    try:
        if kind == "ledger":
            store.note("r", "x", 1.0)
            used = store.claim("r", "x", owner="h:1", session_id="s1", now=2.0, retry_failed=0)
        else:
            used = store.schedules()
        return store.db.execute("PRAGMA journal_mode").fetchone()[0], used
    finally:
        store.close()


@pytest.mark.parametrize("kind", ["ledger", "schedules"])
def test_a_new_store_opens_while_another_process_holds_the_write_lock(tmp_path, kind):
    path = tmp_path / "schedules.db"
    path.touch(mode=0o600)
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, str(path)], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline() == "held\n"
        with ThreadPoolExecutor(1) as pool:
            opening = pool.submit(open_and_use, f"sqlite://{path}", tmp_path, kind)
            done, _ = wait([opening], timeout=0.5)
            if done:  # it cannot open while the lock is held: this raises what it met
                pytest.fail(f"the store opened while another process held the write lock: {opening.result()}")
            holder.stdin.write("go\n")
            holder.stdin.flush()
            mode, used = opening.result(timeout=60)
    finally:
        holder.stdin.close()
        holder.wait(timeout=30)
    assert mode == "wal" and used == (("s1", False) if kind == "ledger" else [])
