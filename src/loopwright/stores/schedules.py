"""The SQLite schedule store (`<LOOPWRIGHT_HOME>/schedules.db`): schedules and the record of
every fire, shared safely by any number of scheduler processes on this machine (WAL, busy
timeout; a fire is claimed by a compare-and-set on the schedule's next fire time)."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

from ..core.storeports import Schedule, ScheduledRun
from .sqlitedb import connect, create_schema, write_transaction

_SCHEMA = """
CREATE TABLE IF NOT EXISTS schedules (
    id TEXT PRIMARY KEY, cwd TEXT NOT NULL, prompt TEXT NOT NULL, every_s INTEGER NOT NULL,
    created REAL NOT NULL, next_at REAL, paused INTEGER NOT NULL DEFAULT 0, max_runs INTEGER,
    runs INTEGER NOT NULL DEFAULT 0, grace_s INTEGER NOT NULL, options TEXT NOT NULL DEFAULT '{}',
    cron TEXT NOT NULL DEFAULT ''
);
CREATE TABLE IF NOT EXISTS runs (
    id INTEGER PRIMARY KEY AUTOINCREMENT, schedule_id TEXT NOT NULL, fire_at REAL NOT NULL,
    status TEXT NOT NULL, started REAL, ended REAL, session_id TEXT NOT NULL DEFAULT '',
    cost_usd REAL NOT NULL DEFAULT 0, note TEXT NOT NULL DEFAULT '', owner TEXT NOT NULL DEFAULT ''
);
CREATE INDEX IF NOT EXISTS runs_by_schedule ON runs (schedule_id, id);
CREATE INDEX IF NOT EXISTS runs_running ON runs (status) WHERE status = 'running';
"""
_SCHEDULE_COLUMNS = "id, cwd, prompt, every_s, created, next_at, paused, max_runs, runs, grace_s, options, cron"
_RUN_COLUMNS = "id, schedule_id, fire_at, status, started, ended, session_id, cost_usd, note"


class SqliteScheduleStore:
    def __init__(self, path: str | Path, *, own_folder: bool = True) -> None:
        self.path = Path(path)
        self.db = connect(self.path, own_folder=own_folder)
        with write_transaction(self.db):  # made or brought up to date by one process at a time
            create_schema(self.db, _SCHEMA)
            columns = {row[1] for row in self.db.execute("PRAGMA table_info(schedules)")}
            if "cron" not in columns:  # a store made before schedules could take cron expressions
                self.db.execute("ALTER TABLE schedules ADD COLUMN cron TEXT NOT NULL DEFAULT ''")

    def close(self) -> None:
        self.db.close()

    # ------------------------------------------------------------ schedules

    def add(self, schedule: Schedule) -> None:
        row = _schedule_row(schedule)
        try:
            self.db.execute(f"INSERT INTO schedules ({_SCHEDULE_COLUMNS}) VALUES ({', '.join('?' * len(row))})", row)
        except sqlite3.IntegrityError:
            raise ValueError(f"a schedule with id {schedule.id} already exists") from None

    def get(self, schedule_id: str) -> Schedule | None:
        row = self.db.execute(f"SELECT {_SCHEDULE_COLUMNS} FROM schedules WHERE id = ?", (schedule_id,)).fetchone()
        return _schedule(row) if row else None

    def schedules(self) -> list[Schedule]:
        rows = self.db.execute(f"SELECT {_SCHEDULE_COLUMNS} FROM schedules ORDER BY created, id").fetchall()
        return [_schedule(r) for r in rows]

    def set_paused(self, schedule_id: str, paused: bool) -> bool:
        return self.db.execute("UPDATE schedules SET paused = ? WHERE id = ?", (int(paused), schedule_id)).rowcount == 1

    def set_options(self, schedule_id: str, options: dict[str, Any]) -> bool:
        """Replace a schedule's options (a schedule of an older release brought up to date)."""
        return self.db.execute("UPDATE schedules SET options = ? WHERE id = ?",
                               (json.dumps(options, separators=(",", ":")), schedule_id)).rowcount == 1

    def run_now(self, schedule_id: str, now: float) -> bool:
        """Make a schedule that has fires left due at once (a paused one stays paused)."""
        return self.db.execute("UPDATE schedules SET next_at = ? WHERE id = ? AND next_at IS NOT NULL",
                               (now, schedule_id)).rowcount == 1

    def remove(self, schedule_id: str) -> bool:
        """The schedule goes; the record of its runs stays."""
        return self.db.execute("DELETE FROM schedules WHERE id = ?", (schedule_id,)).rowcount == 1

    def due(self, now: float) -> list[Schedule]:
        rows = self.db.execute(f"SELECT {_SCHEDULE_COLUMNS} FROM schedules WHERE paused = 0 AND next_at IS NOT NULL "
                               "AND next_at <= ? ORDER BY next_at, id", (now,)).fetchall()
        return [_schedule(r) for r in rows]

    # ------------------------------------------------------------ fires

    def running(self, schedule_id: str) -> bool:
        return self.db.execute("SELECT 1 FROM runs WHERE schedule_id = ? AND status = 'running' LIMIT 1",
                               (schedule_id,)).fetchone() is not None

    def claim(self, schedule: Schedule, next_at: float | None, run: ScheduledRun, owner: str) -> int | None:
        """Move the schedule on from the fire it was due at and record the fire, in one
        transaction; None when another scheduler moved it first (the fire is theirs)."""
        with write_transaction(self.db):  # the write lock now: no lost update between schedulers
            moved = self.db.execute(
                "UPDATE schedules SET next_at = ?, runs = runs + ? WHERE id = ? AND next_at = ? AND paused = 0",
                (next_at, int(run.status == "running"), schedule.id, schedule.next_at)).rowcount
            if moved != 1:
                return None
            cur = self.db.execute(
                "INSERT INTO runs (schedule_id, fire_at, status, started, ended, note, owner) VALUES (?, ?, ?, ?, ?, ?, ?)",
                (schedule.id, run.fire_at, run.status, run.started, run.ended, run.note, owner))
            return int(cur.lastrowid or 0)

    def finish(self, run_id: int, status: str, ended: float, session_id: str, cost_usd: float, note: str) -> None:
        self.db.execute("UPDATE runs SET status = ?, ended = ?, session_id = ?, cost_usd = ?, note = ? WHERE id = ?",
                        (status, ended, session_id, cost_usd, note, run_id))

    def orphans(self) -> list[tuple[ScheduledRun, str]]:
        """Runs still marked running, with their owner (`host:pid`), for the caller to judge."""
        rows = self.db.execute(f"SELECT {_RUN_COLUMNS}, owner FROM runs WHERE status = 'running'").fetchall()
        return [(_run(r[:-1]), r[-1]) for r in rows]

    def runs(self, schedule_id: str | None = None, limit: int = 50) -> list[ScheduledRun]:
        where, args = ("WHERE schedule_id = ?", (schedule_id,)) if schedule_id else ("", ())
        rows = self.db.execute(f"SELECT {_RUN_COLUMNS} FROM runs {where} ORDER BY id DESC LIMIT ?",
                               (*args, limit)).fetchall()
        return [_run(r) for r in reversed(rows)]


def _schedule_row(s: Schedule) -> tuple[Any, ...]:
    return (s.id, s.cwd, s.prompt, s.every_s, s.created, s.next_at, int(s.paused), s.max_runs, s.runs, s.grace_s,
            json.dumps(dict(s.options), separators=(",", ":")), s.cron)


def _schedule(row: tuple[Any, ...]) -> Schedule:
    return Schedule(row[0], row[1], row[2], row[3], row[4], row[5], bool(row[6]), row[7], row[8], row[9],
                    json.loads(row[10]), row[11])


def _run(row: tuple[Any, ...]) -> ScheduledRun:
    return ScheduledRun(*row)
