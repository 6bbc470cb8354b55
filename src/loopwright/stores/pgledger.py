"""Schedules and routine ledgers in PostgreSQL (the schema of `postgres.MIGRATIONS`), with the
semantics of `SqliteScheduleStore` and `SqliteLedger`. A claim takes its row with `FOR UPDATE SKIP
LOCKED` and moves it on in the same transaction: of any number of workers, one takes a fire or an
item, and the others pass on at once instead of waiting.

Every statement (every transaction, whole) cut off by a dropped connection runs again on a new one
(`pgreconnect`); a write whose commit may have been lost looks first for what it left (a claim
finds its own owner and start time on the row), so nothing is claimed, counted or recorded twice."""

from __future__ import annotations

import json
import time
from typing import Any, Callable

from ..core.storeports import LedgerItem, RoutineEntry, Schedule, ScheduledRun
from .ledger import FireCost

_SCHEDULE_COLUMNS = "id, cwd, prompt, every_s, created, next_at, paused, max_runs, runs, grace_s, options, cron"
_RUN_COLUMNS = "id, schedule_id, fire_at, status, started, ended, session_id, cost_usd, note"
_LEDGER_COLUMNS = ("routine, item_id, status, tries, session_id, cost_usd, outcome, created, started, ended, owner, "
                   "fields")
_ENTRY = "key, name, cwd, every_s, cron, paused, next_at"


class _Tables:
    def __init__(self, connect: Callable[[], Any], url: str) -> None:
        from .pgreconnect import Reconnecting

        self._link = Reconnecting(connect, url, connect())  # connected now: a store that is down says so here
        self.path = url  # where it lives, for messages (a SQLite store's file path)

    @property
    def db(self) -> Any:
        return self._link.current()

    def close(self) -> None:
        self._link.close()

    def _run(self, work: Callable[[Any], Any], again: Callable[[Any], Any] | None = None) -> Any:
        return self._link.run(work, again)

    def _do(self, sql: str, args: tuple[Any, ...] = ()) -> None:
        """A write that is the same done twice (an upsert, an absolute update, a delete)."""
        self._run(lambda db: db.execute(sql, args))

    def _one(self, sql: str, args: tuple[Any, ...] = ()) -> Any:
        return self._run(lambda db: db.execute(sql, args).fetchone())

    def _all(self, sql: str, args: tuple[Any, ...] = ()) -> list[Any]:
        return self._run(lambda db: db.execute(sql, args).fetchall())  # type: ignore[no-any-return]

    def _count(self, sql: str, args: tuple[Any, ...] = ()) -> int:
        return self._run(lambda db: db.execute(sql, args).rowcount)  # type: ignore[no-any-return]


class PgScheduleStore(_Tables):
    def add(self, schedule: Schedule) -> None:
        import psycopg

        row = _schedule_row(schedule)
        try:
            # a cut-off insert that committed: the row is there, created when this one was
            self._run(lambda db: db.execute(f"INSERT INTO loopwright.schedules ({_SCHEDULE_COLUMNS}) VALUES "
                                            f"({', '.join(['%s'] * len(row))})", row),
                      lambda db: db.execute("SELECT 1 FROM loopwright.schedules WHERE id = %s AND created = %s",
                                            (schedule.id, schedule.created)).fetchone())
        except psycopg.errors.UniqueViolation:
            raise ValueError(f"a schedule with id {schedule.id} already exists") from None

    def get(self, schedule_id: str) -> Schedule | None:
        row = self._one(f"SELECT {_SCHEDULE_COLUMNS} FROM loopwright.schedules WHERE id = %s", (schedule_id,))
        return _schedule(row) if row else None

    def schedules(self) -> list[Schedule]:
        return [_schedule(r) for r in self._all(f"SELECT {_SCHEDULE_COLUMNS} FROM loopwright.schedules "
                                                "ORDER BY created, id")]

    def set_paused(self, schedule_id: str, paused: bool) -> bool:
        return self._count("UPDATE loopwright.schedules SET paused = %s WHERE id = %s", (paused, schedule_id)) == 1

    def set_options(self, schedule_id: str, options: dict[str, Any]) -> bool:
        """Replace a schedule's options (a schedule of an older release brought up to date)."""
        return self._count("UPDATE loopwright.schedules SET options = %s WHERE id = %s",
                           (json.dumps(options, separators=(",", ":")), schedule_id)) == 1

    def run_now(self, schedule_id: str, now: float) -> bool:
        """Make a schedule that has fires left due at once (a paused one stays paused)."""
        return self._count("UPDATE loopwright.schedules SET next_at = %s WHERE id = %s AND next_at IS NOT NULL",
                           (now, schedule_id)) == 1

    def remove(self, schedule_id: str) -> bool:
        """The schedule goes; the record of its runs stays."""
        return self._count("DELETE FROM loopwright.schedules WHERE id = %s", (schedule_id,)) == 1

    def due(self, now: float) -> list[Schedule]:
        rows = self._all(f"SELECT {_SCHEDULE_COLUMNS} FROM loopwright.schedules WHERE NOT paused AND next_at IS NOT "
                         "NULL AND next_at <= %s ORDER BY next_at, id", (now,))
        return [_schedule(r) for r in rows]

    def running(self, schedule_id: str) -> bool:
        return self._one("SELECT 1 FROM loopwright.runs WHERE schedule_id = %s AND status = 'running' LIMIT 1",
                         (schedule_id,)) is not None

    def claim(self, schedule: Schedule, next_at: float | None, run: ScheduledRun, owner: str) -> int | None:
        """Move the schedule on from the fire it was due at and record the fire, in one
        transaction; None when another worker has it or moved it first (the fire is theirs)."""
        def claim(db: Any) -> int | None:
            with db.transaction():
                return self._claim(db, schedule, next_at, run, owner)

        def landed(db: Any) -> int | None:  # the cut-off claim committed: the fire it recorded is ours
            row = db.execute("SELECT id FROM loopwright.runs WHERE schedule_id = %s AND fire_at = %s AND owner = %s "
                             "AND started IS NOT DISTINCT FROM %s", (schedule.id, run.fire_at, owner, run.started)
                             ).fetchone()
            return int(row[0]) if row else None

        return self._run(claim, landed)  # type: ignore[no-any-return]

    def _claim(self, db: Any, schedule: Schedule, next_at: float | None, run: ScheduledRun, owner: str) -> int | None:
        mine = db.execute("SELECT 1 FROM loopwright.schedules WHERE id = %s AND next_at = %s AND NOT paused "
                         "FOR UPDATE SKIP LOCKED", (schedule.id, schedule.next_at)).fetchone()
        if mine is None:
            return None
        db.execute("UPDATE loopwright.schedules SET next_at = %s, runs = runs + %s WHERE id = %s",
                   (next_at, int(run.status == "running"), schedule.id))
        row = db.execute("INSERT INTO loopwright.runs (schedule_id, fire_at, status, started, ended, note, owner) "
                         "VALUES (%s, %s, %s, %s, %s, %s, %s) RETURNING id",
                         (schedule.id, run.fire_at, run.status, run.started, run.ended, run.note, owner)).fetchone()
        return int(row[0])

    def finish(self, run_id: int, status: str, ended: float, session_id: str, cost_usd: float, note: str) -> None:
        self._do("UPDATE loopwright.runs SET status = %s, ended = %s, session_id = %s, cost_usd = %s, "
                 "note = %s WHERE id = %s", (status, ended, session_id, cost_usd, note, run_id))

    def orphans(self) -> list[tuple[ScheduledRun, str]]:
        """Runs still marked running, with their owner (`host:pid`), for the caller to judge."""
        rows = self._all(f"SELECT {_RUN_COLUMNS}, owner FROM loopwright.runs WHERE status = 'running'")
        return [(ScheduledRun(*r[:-1]), r[-1]) for r in rows]

    def runs(self, schedule_id: str | None = None, limit: int = 50) -> list[ScheduledRun]:
        where, args = ("WHERE schedule_id = %s", (schedule_id,)) if schedule_id else ("", ())
        rows = self._all(f"SELECT {_RUN_COLUMNS} FROM loopwright.runs {where} ORDER BY id DESC LIMIT %s",
                         (*args, limit))
        return [ScheduledRun(*r) for r in reversed(rows)]


def _schedule_row(s: Schedule) -> tuple[Any, ...]:
    return (s.id, s.cwd, s.prompt, s.every_s, s.created, s.next_at, s.paused, s.max_runs, s.runs, s.grace_s,
            json.dumps(dict(s.options), separators=(",", ":")), s.cron)


def _schedule(row: tuple[Any, ...]) -> Schedule:
    sid, cwd, prompt, every_s, created, next_at, paused, max_runs, runs, grace_s, options, cron = row
    return Schedule(sid, cwd, prompt, every_s, created, next_at, paused, max_runs, runs, grace_s, json.loads(options),
                    cron)


class PgLedger(_Tables):
    def note(self, routine: str, item_id: str, now: float) -> None:
        """An item seen for the first time is pending; one seen before keeps its row."""
        self._do("INSERT INTO loopwright.routine_items (routine, item_id, status, created) "
                 "VALUES (%s, %s, 'pending', %s) ON CONFLICT DO NOTHING", (routine, item_id, now))

    def skip(self, routine: str, item_id: str, reason: str, now: float) -> None:
        """An item that cannot run (a malformed line, a field its template needs): skipped, with why."""
        def skip(db: Any) -> None:
            with db.transaction():
                db.execute("INSERT INTO loopwright.routine_items (routine, item_id, status, outcome, created, ended) "
                           "VALUES (%s, %s, 'skipped', %s, %s, %s) ON CONFLICT DO NOTHING",
                           (routine, item_id, reason, now, now))
                db.execute("UPDATE loopwright.routine_items SET status = 'skipped', outcome = %s, ended = %s "
                           "WHERE routine = %s AND item_id = %s AND status = 'pending'", (reason, now, routine, item_id))

        self._run(skip)

    def queue(self, routine: str, items: list[tuple[str, str]], now: float) -> dict[str, str]:
        """Record POSTed items (id, fields as JSON) as pending, in one transaction; for each id,
        `queued`, or the status it already had (a done item is not queued again)."""
        def queue(db: Any) -> dict[str, str]:  # (run again after a drop: an item queued then is pending now)
            answer: dict[str, str] = {}
            with db.transaction():
                for item_id, fields in items:
                    row = db.execute("INSERT INTO loopwright.routine_items (routine, item_id, status, created, fields) "
                                     "VALUES (%s, %s, 'pending', %s, %s) ON CONFLICT DO NOTHING RETURNING status",
                                     (routine, item_id, now, fields)).fetchone()
                    if row is None:
                        row = db.execute("SELECT status FROM loopwright.routine_items WHERE routine = %s AND "
                                         "item_id = %s", (routine, item_id)).fetchone()
                        answer[item_id] = row[0]
                    else:
                        answer[item_id] = "queued"
            return answer

        return self._run(queue)  # type: ignore[no-any-return]

    def token(self, routine: str, *, make: bool = False) -> str | None:
        """The routine's token for POSTing items; with `make`, one is made the first time."""
        if make:
            import secrets

            self._do("INSERT INTO loopwright.routine_tokens (key, token, created) VALUES (%s, %s, %s) "
                     "ON CONFLICT DO NOTHING", (routine, secrets.token_urlsafe(32), time.time()))
        row = self._one("SELECT token FROM loopwright.routine_tokens WHERE key = %s", (routine,))
        return row[0] if row else None

    def new_token(self, routine: str) -> str:
        """A new token for the routine; the old one stops working at once."""
        import secrets

        token = secrets.token_urlsafe(32)
        self._do("INSERT INTO loopwright.routine_tokens (key, token, created) VALUES (%s, %s, %s) "
                 "ON CONFLICT (key) DO UPDATE SET token = excluded.token, created = excluded.created",
                 (routine, token, time.time()))
        return token

    def drop_token(self, routine: str) -> None:
        self._do("DELETE FROM loopwright.routine_tokens WHERE key = %s", (routine,))

    def token_keys(self) -> list[str]:
        return [r[0] for r in self._all("SELECT key FROM loopwright.routine_tokens ORDER BY key")]

    def get(self, routine: str, item_id: str) -> LedgerItem | None:
        row = self._one(f"SELECT {_LEDGER_COLUMNS} FROM loopwright.routine_items WHERE routine = %s AND item_id = %s",
                        (routine, item_id))
        return LedgerItem(*row) if row else None

    def claim(self, routine: str, item_id: str, *, owner: str, session_id: str, now: float,
              retry_failed: int) -> tuple[str, bool] | None:
        """Take the item if it is pending, interrupted (then its session is resumed), or failed
        with retries left; None when another worker has it or it is not to run."""
        def landed(db: Any) -> Any:  # the cut-off claim committed: the row is ours, from `now` on
            return db.execute("SELECT session_id, resumed FROM loopwright.routine_items WHERE routine = %s AND "
                              "item_id = %s AND status = 'running' AND owner = %s AND started = %s",
                              (routine, item_id, owner, now)).fetchone()

        row = self._run(lambda db: db.execute(
            "UPDATE loopwright.routine_items SET status = 'running', owner = %s, started = %s, ended = NULL, "
            "resumed = (status = 'interrupted' AND session_id <> ''), "
            "tries = tries + CASE WHEN status = 'interrupted' AND session_id <> '' THEN 0 ELSE 1 END, "
            "session_id = CASE WHEN status = 'interrupted' AND session_id <> '' THEN session_id ELSE %s END "
            "WHERE (routine, item_id) IN (SELECT routine, item_id FROM loopwright.routine_items "
            "WHERE routine = %s AND item_id = %s AND (status IN ('pending', 'interrupted') "
            "OR (status = 'failed' AND tries <= %s)) FOR UPDATE SKIP LOCKED) RETURNING session_id, resumed",
            (owner, now, session_id, routine, item_id, retry_failed)).fetchone(), landed)
        return (row[0], bool(row[1])) if row else None

    def finish(self, routine: str, item_id: str, status: str, *, cost_usd: float, outcome: str, now: float,
               fire_at: float | None = None) -> None:
        def finish(db: Any) -> bool:
            with db.transaction():
                db.execute("UPDATE loopwright.routine_items SET status = %s, cost_usd = cost_usd + %s, "
                           "outcome = %s, ended = %s WHERE routine = %s AND item_id = %s",
                           (status, cost_usd, outcome, now, routine, item_id))
                if fire_at is not None:
                    db.execute(
                        "INSERT INTO loopwright.routine_runs (routine, fire_at, item_id, status, cost_usd, session_id, "
                        "ended) SELECT %s, %s, %s, %s, %s, session_id, %s FROM loopwright.routine_items "
                        "WHERE routine = %s AND item_id = %s",
                        (routine, fire_at, item_id, status, cost_usd, now, routine, item_id))
            return True

        def landed(db: Any) -> bool | None:  # the cut-off finish committed (its cost must not be added twice)
            return db.execute("SELECT true FROM loopwright.routine_items WHERE routine = %s AND item_id = %s AND "
                              "status = %s AND ended = %s", (routine, item_id, status, now)).fetchone() and True

        self._run(finish, landed)

    def daily_costs(self) -> list[tuple[str, str, float]]:
        """(UTC day, routine name, cost) of every routine's item runs, for the cost chart."""
        rows = self._all(
            "SELECT to_char(to_timestamp(r.fire_at) AT TIME ZONE 'UTC', 'YYYY-MM-DD') AS day, "
            "COALESCE(NULLIF(e.name, ''), r.routine) AS name, SUM(r.cost_usd) FROM loopwright.routine_runs r "
            "LEFT JOIN loopwright.routines e ON e.key = r.routine GROUP BY 1, 2 ORDER BY 1")
        return [(day, name, float(cost)) for day, name, cost in rows]

    def fires(self, routine: str, limit: int = 20) -> list[FireCost]:
        """The routine's latest fires, newest first: when each started, the items it ran and
        what they cost (the sum of its items' runs)."""
        rows = self._all(
            "SELECT fire_at, COUNT(*), COUNT(*) FILTER (WHERE status = 'done'), "
            "COUNT(*) FILTER (WHERE status = 'failed'), SUM(cost_usd), MAX(ended) FROM loopwright.routine_runs "
            "WHERE routine = %s GROUP BY fire_at ORDER BY fire_at DESC LIMIT %s", (routine, limit))
        return [FireCost(*r) for r in rows]

    def recover(self, routine: str, owner: str, alive: Callable[[str], bool]) -> list[str]:
        """Items left `running` by a process that is gone become `interrupted` (the next claim
        resumes their sessions); the ids, for the caller to say."""
        rows = self._all("SELECT item_id, owner FROM loopwright.routine_items WHERE routine = %s AND status = 'running'",
                         (routine,))
        done = []
        for item_id, holder in rows:
            if holder != owner and not alive(holder) and self._count(
                    "UPDATE loopwright.routine_items SET status = 'interrupted', outcome = %s WHERE routine = %s "
                    "AND item_id = %s AND status = 'running' AND owner = %s",
                    (f"its process ({holder}) stopped during the run; resumed from its session", routine, item_id,
                     holder)):
                done.append(item_id)
        return done

    def items(self, routine: str, status: str | None = None) -> list[LedgerItem]:
        where, args = ("AND status = %s", (status,)) if status else ("", ())
        rows = self._all(f"SELECT {_LEDGER_COLUMNS} FROM loopwright.routine_items WHERE routine = %s {where} "
                         "ORDER BY created, item_id", (routine, *args))
        return [LedgerItem(*r) for r in rows]

    # ------------------------------------------------------------ routines the scheduler fires

    def set_paused(self, routine: str, paused: bool) -> None:
        self._do("INSERT INTO loopwright.routines (key, paused) VALUES (%s, %s) ON CONFLICT (key) DO UPDATE "
                 "SET paused = excluded.paused", (routine, paused))

    def paused(self, routine: str) -> bool:
        row = self._one("SELECT paused FROM loopwright.routines WHERE key = %s", (routine,))
        return bool(row and row[0])

    def register(self, entry: RoutineEntry) -> None:
        """Add the routine for the scheduler, or update its trigger and next fire (pause kept)."""
        self._do("INSERT INTO loopwright.routines (key, name, cwd, every_s, cron, next_at) "
                 "VALUES (%s, %s, %s, %s, %s, %s) ON CONFLICT (key) DO UPDATE SET name = excluded.name, "
                 "cwd = excluded.cwd, every_s = excluded.every_s, cron = excluded.cron, "
                 "next_at = excluded.next_at",
                 (entry.key, entry.name, entry.cwd, entry.every_s, entry.cron, entry.next_at))

    def unregister(self, routine: str) -> bool:
        return self._count("DELETE FROM loopwright.routines WHERE key = %s", (routine,)) == 1

    def entry(self, routine: str) -> RoutineEntry | None:
        row = self._one(f"SELECT {_ENTRY} FROM loopwright.routines WHERE key = %s", (routine,))
        return RoutineEntry(*row) if row else None

    def known(self) -> list[str]:
        """Every routine the ledger has seen: added to the scheduler, or with items recorded."""
        rows = self._all("SELECT key FROM loopwright.routines UNION SELECT routine FROM loopwright.routine_items "
                         "ORDER BY 1")
        return [r[0] for r in rows]

    def registered(self) -> list[RoutineEntry]:
        rows = self._all(f"SELECT {_ENTRY} FROM loopwright.routines WHERE next_at IS NOT NULL ORDER BY next_at, key")
        return [RoutineEntry(*r) for r in rows]

    def due_routines(self, now: float) -> list[RoutineEntry]:
        rows = self._all(f"SELECT {_ENTRY} FROM loopwright.routines WHERE NOT paused AND next_at IS NOT NULL "
                         "AND next_at <= %s ORDER BY next_at, key", (now,))
        return [RoutineEntry(*r) for r in rows]

    def claim_fire(self, routine: str, due_at: float, next_at: float) -> bool:
        """Move the routine's next fire on from `due_at` to `next_at`, if no other worker did
        first: True when this fire is ours. A claim cut off by a dropped connection is not tried
        again: every worker moves the fire on to the same time, so whether the move was ours
        cannot be told, and a fire missed is safer than a fire run twice (the next one runs)."""
        def claim(db: Any) -> bool:
            with db.transaction():
                if db.execute("SELECT 1 FROM loopwright.routines WHERE key = %s AND next_at = %s AND NOT paused "
                              "FOR UPDATE SKIP LOCKED", (routine, due_at)).fetchone() is None:
                    return False
                db.execute("UPDATE loopwright.routines SET next_at = %s WHERE key = %s", (next_at, routine))
                return True

        return self._run(claim, lambda db: False)  # type: ignore[no-any-return]
