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


READER = """
import sys
from loopwright.stores import open_store
ledger = open_store(sys.argv[1], ".").ledger()
print(",".join(item.item_id for item in ledger.items("r")))
ledger.close()
"""


def items_seen_by_another_process(url):
    out = subprocess.run([sys.executable, "-c", READER, url], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    return out.stdout.strip()


def test_what_a_process_with_two_stores_of_one_file_writes_is_seen_by_others(tmp_path):
    # `loopwright scheduler` holds the schedule store and the ledger of one file at once. Opening
    # the second must not drop the first's hold on the file: another process that then opened and
    # closed it would take itself for the file's last user, fold the WAL in and delete it, and what
    # this process wrote next would go to the deleted WAL, seen by no one else.
    url = f"sqlite://{tmp_path}/schedules.db"
    schedules = open_store(url, tmp_path).schedules()
    ledger = open_store(url, tmp_path).ledger()
    try:
        ledger.note("r", "a", 1.0)
        assert items_seen_by_another_process(url) == "a"
        ledger.note("r", "b", 2.0)
        assert items_seen_by_another_process(url) == "a,b"
    finally:
        ledger.close()
        schedules.close()
