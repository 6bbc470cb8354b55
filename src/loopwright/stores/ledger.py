"""The routine ledger, beside the schedules in `<LOOPWRIGHT_HOME>/schedules.db`: one row per
(routine, item id). A claim is one UPDATE whose WHERE names the statuses that may be taken, so
two processes never take the same item; a `done` item is never taken again. Items POSTed to
`loopwright serve` wait here as `pending` with their fields (JSON); each `http:` routine has a
token of its own, made the first time it is seen."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any, Callable

from ..core.fastclass import dataclass
from ..core.storeports import LedgerItem, RoutineEntry
from .sqlitedb import connect, create_schema, write_transaction

_SCHEMA = """
CREATE TABLE IF NOT EXISTS routine_items (
    routine TEXT NOT NULL, item_id TEXT NOT NULL, status TEXT NOT NULL, tries INTEGER NOT NULL DEFAULT 0,
    session_id TEXT NOT NULL DEFAULT '', cost_usd REAL NOT NULL DEFAULT 0, outcome TEXT NOT NULL DEFAULT '',
    created REAL NOT NULL, started REAL, ended REAL, owner TEXT NOT NULL DEFAULT '',
    resumed INTEGER NOT NULL DEFAULT 0, fields TEXT NOT NULL DEFAULT '', PRIMARY KEY (routine, item_id)
);
CREATE TABLE IF NOT EXISTS routine_runs (
    routine TEXT NOT NULL, fire_at REAL NOT NULL, item_id TEXT NOT NULL, status TEXT NOT NULL,
    cost_usd REAL NOT NULL DEFAULT 0, session_id TEXT NOT NULL DEFAULT '', ended REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS routine_runs_by_fire ON routine_runs (routine, fire_at);
CREATE TABLE IF NOT EXISTS routines (
    key TEXT PRIMARY KEY, name TEXT NOT NULL DEFAULT '', cwd TEXT NOT NULL DEFAULT '',
    every_s INTEGER NOT NULL DEFAULT 0, cron TEXT NOT NULL DEFAULT '', paused INTEGER NOT NULL DEFAULT 0, next_at REAL
);
CREATE TABLE IF NOT EXISTS routine_tokens (key TEXT PRIMARY KEY, token TEXT NOT NULL, created REAL NOT NULL);
"""
_COLUMNS = "routine, item_id, status, tries, session_id, cost_usd, outcome, created, started, ended, owner, fields"
STATUSES = ("pending", "running", "done", "failed", "skipped", "interrupted")


@dataclass(frozen=True, slots=True)
class FireCost:
    """One fire of a routine as its item runs add up."""

    fire_at: float
    items: int
    done: int
    failed: int
    cost_usd: float
    ended: float


class SqliteLedger:
    def __init__(self, path: str | Path, *, own_folder: bool = True) -> None:
        self.path = Path(path)
        self.db = connect(self.path, own_folder=own_folder)
        with write_transaction(self.db):  # made or brought up to date by one process at a time
            create_schema(self.db, _SCHEMA)
            columns = {row[1] for row in self.db.execute("PRAGMA table_info(routine_items)")}
            if "fields" not in columns:  # a ledger made before items could be POSTed
                self.db.execute("ALTER TABLE routine_items ADD COLUMN fields TEXT NOT NULL DEFAULT ''")

    def close(self) -> None:
        self.db.close()

    def note(self, routine: str, item_id: str, now: float) -> None:
        """An item seen for the first time is pending; one seen before keeps its row."""
        self.db.execute("INSERT OR IGNORE INTO routine_items (routine, item_id, status, created) VALUES (?, ?, ?, ?)",
                        (routine, item_id, "pending", now))

    def skip(self, routine: str, item_id: str, reason: str, now: float) -> None:
        """An item that cannot run (a malformed line, a field its template needs): skipped, with why."""
        with write_transaction(self.db):
            self.db.execute("INSERT OR IGNORE INTO routine_items (routine, item_id, status, outcome, created, ended) "
                            "VALUES (?, ?, 'skipped', ?, ?, ?)", (routine, item_id, reason, now, now))
            self.db.execute("UPDATE routine_items SET status = 'skipped', outcome = ?, ended = ? "
                            "WHERE routine = ? AND item_id = ? AND status = 'pending'", (reason, now, routine, item_id))

    def queue(self, routine: str, items: list[tuple[str, str]], now: float) -> dict[str, str]:
        """Record POSTed items (id, fields as JSON) as pending, in one transaction; for each id,
        `queued`, or the status it already had (a done item is not queued again)."""
        answer: dict[str, str] = {}
        with write_transaction(self.db):
            for item_id, fields in items:
                added = self.db.execute("INSERT OR IGNORE INTO routine_items (routine, item_id, status, created, "
                                        "fields) VALUES (?, ?, 'pending', ?, ?)",
                                        (routine, item_id, now, fields)).rowcount
                if added:
                    answer[item_id] = "queued"
                else:
                    row = self.db.execute("SELECT status FROM routine_items WHERE routine = ? AND item_id = ?",
                                          (routine, item_id)).fetchone()
                    answer[item_id] = row[0]
        return answer

    def token(self, routine: str, *, make: bool = False) -> str | None:
        """The routine's token for POSTing items; with `make`, one is made the first time."""
        if make:
            import secrets

            self.db.execute("INSERT OR IGNORE INTO routine_tokens (key, token, created) VALUES (?, ?, ?)",
                            (routine, secrets.token_urlsafe(32), time.time()))
        row = self.db.execute("SELECT token FROM routine_tokens WHERE key = ?", (routine,)).fetchone()
        return row[0] if row else None

    def new_token(self, routine: str) -> str:
        """A new token for the routine; the old one stops working at once."""
        import secrets

        token = secrets.token_urlsafe(32)
        self.db.execute("INSERT INTO routine_tokens (key, token, created) VALUES (?, ?, ?) ON CONFLICT (key) "
                        "DO UPDATE SET token = excluded.token, created = excluded.created", (routine, token, time.time()))
        return token

    def drop_token(self, routine: str) -> None:
        self.db.execute("DELETE FROM routine_tokens WHERE key = ?", (routine,))

    def token_keys(self) -> list[str]:
        return [r[0] for r in self.db.execute("SELECT key FROM routine_tokens ORDER BY key").fetchall()]

    def get(self, routine: str, item_id: str) -> LedgerItem | None:
        row = self.db.execute(f"SELECT {_COLUMNS} FROM routine_items WHERE routine = ? AND item_id = ?",
                              (routine, item_id)).fetchone()
        return LedgerItem(*row) if row else None

    def claim(self, routine: str, item_id: str, *, owner: str, session_id: str, now: float,
              retry_failed: int) -> tuple[str, bool] | None:
        """Take the item if it is pending, interrupted (then its session is resumed), or failed
        with retries left; None when another process has it or it is not to run."""
        row = self.db.execute(
            "UPDATE routine_items SET status = 'running', owner = ?, started = ?, ended = NULL, "
            "resumed = (status = 'interrupted' AND session_id != ''), "
            "tries = tries + (status != 'interrupted' OR session_id = ''), "
            "session_id = CASE WHEN status = 'interrupted' AND session_id != '' THEN session_id ELSE ? END "
            "WHERE routine = ? AND item_id = ? AND (status IN ('pending', 'interrupted') "
            "OR (status = 'failed' AND tries <= ?)) RETURNING session_id, resumed",
            (owner, now, session_id, routine, item_id, retry_failed)).fetchone()
        return (row[0], bool(row[1])) if row else None

    def finish(self, routine: str, item_id: str, status: str, *, cost_usd: float, outcome: str, now: float,
               fire_at: float | None = None) -> None:
        """The item's outcome and, with `fire_at`, its run in that fire's record: both or neither."""
        with write_transaction(self.db):
            self.db.execute("UPDATE routine_items SET status = ?, cost_usd = cost_usd + ?, outcome = ?, ended = ? "
                            "WHERE routine = ? AND item_id = ?", (status, cost_usd, outcome, now, routine, item_id))
            if fire_at is not None:
                self.db.execute("INSERT INTO routine_runs (routine, fire_at, item_id, status, cost_usd, session_id, "
                                "ended) SELECT ?, ?, ?, ?, ?, session_id, ? FROM routine_items WHERE routine = ? "
                                "AND item_id = ?", (routine, fire_at, item_id, status, cost_usd, now, routine, item_id))

    def daily_costs(self) -> list[tuple[str, str, float]]:
        """(UTC day, routine name, cost) of every routine's item runs, for the cost chart."""
        rows = self.db.execute(
            "SELECT date(r.fire_at, 'unixepoch'), COALESCE(NULLIF(e.name, ''), r.routine), SUM(r.cost_usd) "
            "FROM routine_runs r LEFT JOIN routines e ON e.key = r.routine GROUP BY 1, 2 ORDER BY 1").fetchall()
        return [(day, name, float(cost)) for day, name, cost in rows]

    def fires(self, routine: str, limit: int = 20) -> list[FireCost]:
        """The routine's latest fires, newest first: when each started, the items it ran and
        what they cost (the sum of its items' runs)."""
        rows = self.db.execute(
            "SELECT fire_at, COUNT(*), SUM(status = 'done'), SUM(status = 'failed'), SUM(cost_usd), MAX(ended) "
            "FROM routine_runs WHERE routine = ? GROUP BY fire_at ORDER BY fire_at DESC LIMIT ?",
            (routine, limit)).fetchall()
        return [FireCost(*r) for r in rows]

    def recover(self, routine: str, owner: str, alive: Callable[[str], bool]) -> list[str]:
        """Items left `running` by a process that is gone become `interrupted` (the next claim
        resumes their sessions); the ids, for the caller to say."""
        rows = self.db.execute("SELECT item_id, owner FROM routine_items WHERE routine = ? AND status = 'running'",
                               (routine,)).fetchall()
        done = []
        for item_id, holder in rows:
            if holder != owner and not alive(holder):
                changed = self.db.execute(
                    "UPDATE routine_items SET status = 'interrupted', outcome = ? WHERE routine = ? AND item_id = ? "
                    "AND status = 'running' AND owner = ?",
                    (f"its process ({holder}) stopped during the run; resumed from its session", routine, item_id,
                     holder)).rowcount
                if changed:
                    done.append(item_id)
        return done

    def items(self, routine: str, status: str | None = None) -> list[LedgerItem]:
        where, args = ("AND status = ?", (status,)) if status else ("", ())
        rows = self.db.execute(f"SELECT {_COLUMNS} FROM routine_items WHERE routine = ? {where} "
                               "ORDER BY created, item_id", (routine, *args)).fetchall()
        return [LedgerItem(*r) for r in rows]

    # ------------------------------------------------------------ routines the scheduler fires

    def set_paused(self, routine: str, paused: bool) -> None:
        self.db.execute("INSERT INTO routines (key, paused) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET "
                        "paused = excluded.paused", (routine, int(paused)))

    def paused(self, routine: str) -> bool:
        row = self.db.execute("SELECT paused FROM routines WHERE key = ?", (routine,)).fetchone()
        return bool(row and row[0])

    def register(self, entry: RoutineEntry) -> None:
        """Add the routine for the scheduler, or update its trigger and next fire (pause kept)."""
        self.db.execute("INSERT INTO routines (key, name, cwd, every_s, cron, next_at) VALUES (?, ?, ?, ?, ?, ?) "
                        "ON CONFLICT (key) DO UPDATE SET name = excluded.name, cwd = excluded.cwd, "
                        "every_s = excluded.every_s, cron = excluded.cron, next_at = excluded.next_at",
                        (entry.key, entry.name, entry.cwd, entry.every_s, entry.cron, entry.next_at))

    def unregister(self, routine: str) -> bool:
        return self.db.execute("DELETE FROM routines WHERE key = ?", (routine,)).rowcount == 1

    def entry(self, routine: str) -> RoutineEntry | None:
        row = self.db.execute(f"SELECT {_ENTRY} FROM routines WHERE key = ?", (routine,)).fetchone()
        return _entry(row) if row else None

    def known(self) -> list[str]:
        """Every routine the ledger has seen: added to the scheduler, or with items recorded."""
        rows = self.db.execute("SELECT key FROM routines UNION SELECT routine FROM routine_items ORDER BY 1")
        return [r[0] for r in rows.fetchall()]

    def registered(self) -> list[RoutineEntry]:
        rows = self.db.execute(f"SELECT {_ENTRY} FROM routines WHERE next_at IS NOT NULL ORDER BY next_at, key")
        return [_entry(r) for r in rows.fetchall()]

    def due_routines(self, now: float) -> list[RoutineEntry]:
        rows = self.db.execute(f"SELECT {_ENTRY} FROM routines WHERE paused = 0 AND next_at IS NOT NULL "
                               "AND next_at <= ? ORDER BY next_at, key", (now,)).fetchall()
        return [_entry(r) for r in rows]

    def claim_fire(self, routine: str, due_at: float, next_at: float) -> bool:
        """Move the routine's next fire on from `due_at` to `next_at`, if no other scheduler did
        first: True when this fire is ours."""
        return self.db.execute("UPDATE routines SET next_at = ? WHERE key = ? AND next_at = ? AND paused = 0",
                               (next_at, routine, due_at)).rowcount == 1


_ENTRY = "key, name, cwd, every_s, cron, paused, next_at"


def _entry(row: tuple[Any, ...]) -> RoutineEntry:
    return RoutineEntry(row[0], row[1], row[2], row[3], row[4], bool(row[5]), row[6])
