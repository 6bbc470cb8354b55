"""A PostgreSQL statement cut off by a dropped connection (the server restarted or was shut down,
the connection was reset) is run again on a new connection, with a growing pause between tries,
for at most `bound_s()` seconds; after that the caller gets one `StoreUnreachable` naming the
store. A write that may have committed before its answer was lost is run again only through the
caller's `again`: it looks for what the first try left (by a key the write carries) and answers
from that, so nothing is written twice.

Only a store this process has reached before is waited for: a URL that never answered fails at
once, as before (a typo must not hold a command for the whole bound)."""

from __future__ import annotations

import os
import time
from typing import Any, Callable, TypeVar

from ..core.errors import LoopwrightError

T = TypeVar("T")

BOUND_ENV = "LOOPWRIGHT_STORE_RETRY_S"
DEFAULT_BOUND_S = 30.0
_FIRST_PAUSE_S, _MAX_PAUSE_S = 0.05, 2.0
# SQLSTATE classes that mean the connection, not the statement, failed: 08 (connection
# exception), 57P01-57P03 (admin shutdown, crash shutdown, cannot connect now: the server is
# starting or stopping).
_DROPPED_STATES = ("57P01", "57P02", "57P03")
_REACHED: set[str] = set()  # the stores (as `where` names them) this process has been connected to


def reached(where: str) -> None:
    """Say that a connection to `where` was made: from now on, failing to connect is waited out."""
    _REACHED.add(where)


class StoreUnreachable(LoopwrightError, OSError):
    """The store stayed out of reach for longer than the bound. An OSError too: the recorder
    reports it as a write that failed (as a full disk), and the loop ends with it."""


def bound_s(env: Any = None) -> float:
    """How long a dropped store is waited for: LOOPWRIGHT_STORE_RETRY_S seconds (default 30)."""
    raw = (os.environ if env is None else env).get(BOUND_ENV, "")
    if not raw.strip():
        return DEFAULT_BOUND_S
    try:
        value = float(raw)
    except ValueError:
        value = -1.0
    if not 0 <= value <= 3600:
        raise LoopwrightError(f"{BOUND_ENV}={raw!r}: expected a number of seconds from 0 to 3600")
    return value


def dropped(exc: BaseException) -> bool:
    """Whether `exc` (psycopg's, or SQLAlchemy's wrapping one) says the connection went away."""
    try:
        import psycopg
    except ImportError:
        return False
    if getattr(exc, "connection_invalidated", False):  # SQLAlchemy saw the connection die
        return True
    inner = getattr(exc, "orig", None)
    if isinstance(inner, BaseException):
        exc = inner
    if not isinstance(exc, psycopg.OperationalError):
        return False
    state = exc.sqlstate or ""
    if state.startswith("08") or state in _DROPPED_STATES:
        return True
    # a connection lost without a word from the server (reset, closed) carries no SQLSTATE
    return not state and isinstance(exc, (psycopg.OperationalError, psycopg.InterfaceError))


class Reconnecting:
    """One connection to a store, made again when it drops. `run(work)` gives `work` the
    connection; a drop while it runs closes it, waits, connects again and calls `again` (when
    given: what a possibly committed first try left, or None to run `work` again) or `work`."""

    def __init__(self, connect: Callable[[], Any], where: str, conn: Any = None) -> None:
        self._connect, self.where = connect, where
        self.conn = conn

    def current(self) -> Any:
        if self.conn is None or self.conn.closed or getattr(self.conn, "broken", False):
            self.drop()
            self.conn = self._connect()
        return self.conn

    def drop(self) -> None:
        if self.conn is not None:
            try:
                self.conn.close()
            except Exception:  # a dead connection may fail to close: it is gone either way
                pass
            self.conn = None

    def run(self, work: Callable[[Any], T], again: Callable[[Any], T | None] | None = None) -> T:
        return retrying(self.where, self.current, self.drop, work, again)

    def close(self) -> None:
        self.drop()


class _Unreachable(Exception):
    """A connection that could not be made again (what the connect said)."""


def retrying(where: str, current: Callable[[], Any], drop: Callable[[], None], work: Callable[[Any], T],
             again: Callable[[Any], T | None] | None = None) -> T:
    """`work(current())`, tried again on a fresh connection while the store is out of reach, for
    up to the bound; `again(conn)` first on each later try (a result ends it)."""
    started, pause, tries, limit = time.monotonic(), _FIRST_PAUSE_S, 0, None
    while True:
        try:
            try:
                conn = current()
            except LoopwrightError as exc:  # cannot connect (again): waited out once the store was reached
                if where not in _REACHED:
                    raise
                raise _Unreachable(str(exc)) from None
            if tries and again is not None:
                found = again(conn)
                if found is not None:
                    return found
            return work(conn)
        except LoopwrightError:
            raise
        except Exception as exc:
            if not (isinstance(exc, _Unreachable) or dropped(exc)):
                raise
            drop()
            if limit is None:
                limit = bound_s()
            waited = time.monotonic() - started
            if waited + pause > limit:
                said = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
                raise StoreUnreachable(f"the store {where} is out of reach ({said}); gave up after "
                                       f"{waited:.0f}s of reconnecting ({BOUND_ENV} is {limit:g})") from None
            time.sleep(pause)
            pause, tries = min(pause * 2, _MAX_PAUSE_S), tries + 1
