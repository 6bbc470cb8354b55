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


@pytest.mark.parametrize("kind", ["ledger", "schedules"])
def test_a_new_store_opens_while_another_process_holds_the_write_lock(tmp_path, kind):
    path = tmp_path / "schedules.db"
    path.touch(mode=0o600)
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, str(path)], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline() == "held\n"
        with ThreadPoolExecutor(1) as pool:
            opening = pool.submit(lambda: getattr(open_store(f"sqlite://{path}", tmp_path), kind)())
            done, _ = wait([opening], timeout=0.5)
            if done:  # it could not have opened while the lock is held: this raises what it met
                opening.result().close()
                pytest.fail("the store opened while another process held the write lock")
            holder.stdin.write("go\n")
            holder.stdin.flush()
            store = opening.result(timeout=60)
    finally:
        holder.stdin.close()
        holder.wait(timeout=30)
    try:
        assert store.db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        if kind == "ledger":
            store.note("r", "x", 1.0)
            assert store.claim("r", "x", owner="h:1", session_id="s1", now=2.0, retry_failed=0) == ("s1", False)
        else:
            assert store.schedules() == []
    finally:
        store.close()
