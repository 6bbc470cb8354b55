"""A SQLite file that processes share (the schedules and ledgers in `<LOOPWRIGHT_HOME>/schedules.db`
or `sqlite:///PATH`, the session list's cache): each connection private, in WAL, with a busy
timeout, and every write that reads first made in a transaction that takes the write lock first.

SQLite waits out another process's lock (the busy timeout) only when it holds no lock of its own:
a connection that already reads and then must write fails at once with "database is locked"
instead. Two things here would do that. Switching a new file to WAL reads the file's header, then
takes the write lock to mark it; two processes opening a new home at the same moment met there
(one of two `routine run`s started at once crashed). So the switch is asked only of a file not
in WAL yet, and tried again for a bounded time. And a transaction that reads and then writes
begins with `BEGIN IMMEDIATE` (`write_transaction`): it takes the write lock before it reads, so
it waits its turn like a single statement does, and nothing it read can go stale."""

from __future__ import annotations

import sqlite3
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from ..core.errors import LoopwrightError
from ..core.home import make_private_dirs, private_file, tighten_home

BUSY_TIMEOUT_S = 30.0


def connect(path: Path, *, own_folder: bool = True, threads: bool = False) -> sqlite3.Connection:
    """The database at `path`, private to its owner, shared safely by processes (WAL, busy timeout;
    explicit transactions only). `own_folder`: the file's folder is loopwright's (the home), and one
    an older version left open is closed; a file named by `--store sqlite:///PATH` is not, since its
    folder is the user's and may be /tmp: that folder and what else is in it stay as they are (the
    file itself is private). `threads`: the connection is used by more than one thread (the caller
    serializes them)."""
    if own_folder:
        tighten_home(path.parent)
    make_private_dirs(path.parent)
    private_file(path)  # prompts and flags live here: 0600, and SQLite gives -wal/-shm its mode
    try:
        db = sqlite3.connect(path, timeout=BUSY_TIMEOUT_S, isolation_level=None, check_same_thread=not threads)
    except sqlite3.Error as exc:
        raise LoopwrightError(f"cannot open the SQLite file {path}: {exc}") from None
    try:
        use_wal(db)
    except sqlite3.DatabaseError as exc:
        db.close()
        if locked(exc):
            raise
        raise LoopwrightError(f"cannot use the SQLite file {path}: {exc}") from None
    except BaseException:
        db.close()
        raise
    return db


def use_wal(db: sqlite3.Connection, within_s: float = BUSY_TIMEOUT_S) -> None:
    """Put the file in WAL mode (it stays so for every later connection). Only a file not in WAL
    yet is switched, and a switch that met another process's lock is tried again, for at most
    `within_s` seconds: SQLite does not wait for that lock itself."""
    deadline = time.monotonic() + within_s
    pause = 0.005
    while True:
        try:
            if db.execute("PRAGMA journal_mode").fetchone()[0] != "wal":
                db.execute("PRAGMA journal_mode=WAL").fetchone()
            return
        except sqlite3.OperationalError as exc:
            if not locked(exc) or time.monotonic() + pause > deadline:
                raise
        time.sleep(pause)
        pause = min(pause * 2, 0.25)


def locked(exc: sqlite3.Error) -> bool:
    """The error says another connection held a lock (SQLITE_BUSY or SQLITE_LOCKED)."""
    code = getattr(exc, "sqlite_errorcode", None)
    if code is not None:
        return code & 0xFF in (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED)
    return "locked" in str(exc) or "busy" in str(exc)


@contextmanager
def write_transaction(db: sqlite3.Connection) -> Iterator[sqlite3.Connection]:
    """One transaction that holds the write lock from its start (waiting for it as long as the busy
    timeout), committed when the block ends, rolled back when it raises."""
    db.execute("BEGIN IMMEDIATE")
    try:
        yield db
        db.execute("COMMIT")
    except BaseException:
        if db.in_transaction:  # SQLite may have rolled it back itself (a full disk)
            db.execute("ROLLBACK")
        raise


def create_schema(db: sqlite3.Connection, schema: str) -> None:
    """Run the `CREATE … IF NOT EXISTS` statements of `schema` (no `;` inside a statement) in the
    current transaction, one by one: `executescript` would commit the transaction first."""
    for statement in schema.split(";"):
        if statement.strip():
            db.execute(statement)
