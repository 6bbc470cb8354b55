"""Loopwright's own tables beside DBOS's, in the same database: the workers and their heartbeats
(how survivors notice a dead executor), each execution of a workflow on a worker (what
`loopwright workers` shows, and who took over whom), the start marks of tool calls (a call
that started but never finished is not run again), and the process groups each worker's tools
hold (what a survivor ends before it takes a dead worker's loops over: leftovers.py).

A statement cut off by a dropped connection (a PostgreSQL restart) runs again once the store
answers, for up to `stores.pgreconnect`'s bound; a write that may have committed looks first for
what it left (a tool call's start mark carries a token of its own), so a call is never marked as
started by someone else, and an execution is never recorded twice."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from typing import Any

from ..core.errors import LoopwrightError, UsageError
from ..stores.urls import redact

_TABLES = (
    """CREATE TABLE IF NOT EXISTS lw_workers (
        executor_id TEXT PRIMARY KEY, host TEXT NOT NULL, pid INTEGER NOT NULL, queue TEXT NOT NULL,
        concurrency INTEGER NOT NULL, started DOUBLE PRECISION NOT NULL, beat DOUBLE PRECISION NOT NULL,
        state TEXT NOT NULL)""",
    """CREATE TABLE IF NOT EXISTS lw_executions (
        workflow_id TEXT NOT NULL, executor_id TEXT NOT NULL, label TEXT NOT NULL, session_id TEXT NOT NULL,
        started DOUBLE PRECISION NOT NULL, ended DOUBLE PRECISION, status TEXT NOT NULL,
        PRIMARY KEY (workflow_id, executor_id, started))""",
    """CREATE TABLE IF NOT EXISTS lw_tool_starts (
        step_key TEXT PRIMARY KEY, started DOUBLE PRECISION NOT NULL, token TEXT NOT NULL DEFAULT '')""",
    # machine: where pgid means something (boot id and PID namespace); ticks: the group leader's
    # start time, in clock ticks since that boot (with pgid, one process for good)
    """CREATE TABLE IF NOT EXISTS lw_tool_groups (
        executor_id TEXT NOT NULL, machine TEXT NOT NULL, pgid BIGINT NOT NULL, ticks BIGINT NOT NULL,
        PRIMARY KEY (executor_id, pgid, ticks))""",
)

# The database's clock, in seconds since the epoch: every time in these tables is read from it, so
# workers on machines whose clocks disagree still judge one another's heartbeats alike.
_NOW = {"postgresql": "CAST(extract(epoch FROM clock_timestamp()) AS double precision)",
        "sqlite": "((julianday('now') - 2440587.5) * 86400.0)"}

# A worker's states: alive (beating), draining (taking no new work), left (gone cleanly: what it
# still ran is handed back now), recovering (gone: a survivor is recovering its workflows; `beat`
# holds when it claimed them, so a survivor that dies mid-recovery leaves the claim to another),
# recovered (gone: a survivor has recovered its workflows). Nobody is judged gone by its heartbeat
# until the database itself has been up for that long (`{up}`): after a restart every worker's
# last beat is old, and each gets the time to beat again.
LIVE_STATES = ("alive", "draining")
_UNCLAIMED = ("state = 'left' OR (state IN ('alive', 'draining', 'recovering') AND beat < {now} - :after "
              "AND {up} < {now} - :after)")
_UP = {"postgresql": "CAST(extract(epoch FROM pg_postmaster_start_time()) AS double precision)", "sqlite": "0"}


def dbos_url(url: str) -> str:
    """The store URL as DBOS and SQLAlchemy are given it. `sqlite:///PATH` names the absolute PATH,
    as it does for the other stores (SQLAlchemy alone would read three slashes as a path relative
    to the current folder, so a worker and a `routine run` would use different files); a
    PostgreSQL URL gets a connect timeout (`stores.urls.bounded`). A URL of another shape, or an
    SQLite path that is a folder, is a UsageError."""
    from ..stores.urls import bounded

    for prefix in ("postgresql://", "postgres://"):
        if url.startswith(prefix):
            return bounded("postgresql://" + url[len(prefix):])
    if url.startswith("postgresql+psycopg://"):
        return bounded(url)
    if url.startswith("sqlite:///") and url.rstrip("/") != "sqlite:":
        path = "/" + url[len("sqlite:///"):].lstrip("/")
        if os.path.isdir(path):
            raise UsageError(f"--store {url!r}: {path} is a folder; expected sqlite:///PATH naming the SQLite file")
        if not os.path.isdir(os.path.dirname(path)):
            raise UsageError(f"--store {url!r}: the folder {os.path.dirname(path)} does not exist; expected "
                             "sqlite:///PATH in a folder that exists")
        return "sqlite:///" + path
    raise UsageError(f"--store: expected a postgresql://… or sqlite:///… URL, got {url!r}")


def engine_url(url: str) -> str:
    """The SQLAlchemy URL of a store URL: psycopg (v3) for PostgreSQL, the stdlib for SQLite."""
    url = dbos_url(url)
    if url.startswith("postgresql://"):
        return "postgresql+psycopg://" + url[len("postgresql://"):]
    return url


def open_registry(url: str) -> "Registry":
    """The registry of the store, or a LoopwrightError naming the store when it cannot be reached
    (the database is down, or the URL names none)."""
    try:
        return Registry(url)
    except (UsageError, KeyboardInterrupt):
        raise
    except Exception as exc:  # SQLAlchemy's and the driver's errors
        raise LoopwrightError(f"cannot reach the store {redact(url)}: {first_line(exc)}") from None


def first_line(exc: BaseException) -> str:
    """What a database error says, in a line, without SQLAlchemy's "(module.Class) " prefix."""
    line = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
    return re.sub(r"^\([\w.]+\) ", "", line)


@dataclass(frozen=True)
class Worker:
    executor_id: str
    host: str
    pid: int
    queue: str
    concurrency: int
    started: float
    beat: float
    state: str


@dataclass(frozen=True)
class Execution:
    workflow_id: str
    executor_id: str
    label: str
    session_id: str
    started: float
    ended: float | None
    status: str


class Registry:
    """The tables, on one SQLAlchemy engine of the store's database."""

    def __init__(self, url: str) -> None:
        import sqlalchemy as sa

        self._sa = sa
        kwargs: dict[str, Any] = {"pool_pre_ping": True}
        if url.startswith("sqlite"):
            kwargs["connect_args"] = {"timeout": 30}
        self.engine = sa.create_engine(engine_url(url), **kwargs)
        # PostgreSQL: in the store's own schema, named in every statement (an unqualified name would
        # land in whichever schema the search path finds first, which changes once `loopwright` exists)
        self._schema = "" if url.startswith("sqlite") else "loopwright."
        kind = "sqlite" if url.startswith("sqlite") else "postgresql"
        self._now, self._up, self.where = _NOW[kind], _UP[kind], redact(url)
        with self.engine.begin() as conn:
            if self._schema:
                conn.execute(sa.text("SELECT pg_advisory_xact_lock(7450196)"))  # one creator at a time
                conn.execute(sa.text("CREATE SCHEMA IF NOT EXISTS loopwright"))
            for ddl in _TABLES:
                conn.execute(sa.text(self._named(ddl)))
            columns = ([r[1] for r in conn.execute(sa.text("PRAGMA table_info(lw_tool_starts)"))] if not self._schema
                       else ["token"])  # (PostgreSQL: ADD COLUMN IF NOT EXISTS below)
            if "token" not in columns or self._schema:  # a store made before start marks had tokens
                conn.execute(sa.text(self._named("ALTER TABLE lw_tool_starts ADD COLUMN "
                                                 f"{'IF NOT EXISTS ' if self._schema else ''}token TEXT NOT NULL "
                                                 "DEFAULT ''")))

    def _named(self, sql: str) -> str:
        """The schema-qualified table names, and `{now}` as the database clock's expression."""
        return sql.replace(" lw_", f" {self._schema}lw_").replace("{now}", self._now).replace("{up}", self._up)

    def _run(self, sql: str, landed: str | None = None, **params: Any) -> Any:
        """The statement's rows (or its row count), run again if the connection drops; `landed`:
        a query whose rows, if any, say the cut-off write had committed (they are answered then)."""
        from ..stores.pgreconnect import retrying

        def run(conn: Any, statement: str) -> Any:
            result = conn.execute(self._sa.text(self._named(statement)), params)
            return result.rowcount if not result.returns_rows else result.fetchall()

        def work(engine: Any) -> Any:
            with engine.begin() as conn:
                return run(conn, sql)

        def again(engine: Any) -> Any:
            with engine.begin() as conn:
                return run(conn, landed) or None  # type: ignore[arg-type]

        # (SQLAlchemy's pool makes the new connection: a dropped one is discarded as it fails)
        return retrying(self.where, lambda: self.engine, lambda: None, work, again if landed else None)

    def now(self) -> float:
        """The database's clock (what `beat`, `started` and `ended` are measured on)."""
        return float(self._run("SELECT {now}")[0][0])

    def join(self, executor_id: str, host: str, pid: int, queue: str, concurrency: int) -> None:
        self._run("INSERT INTO lw_workers VALUES (:e, :h, :p, :q, :c, {now}, {now}, 'alive')",
                  "SELECT 1 FROM lw_workers WHERE executor_id = :e AND pid = :p", e=executor_id, h=host, p=pid, q=queue,
                  c=concurrency)

    def beat(self, executor_id: str, state: str | None = None) -> None:
        if state is None:
            self._run("UPDATE lw_workers SET beat = {now} WHERE executor_id = :e", e=executor_id)
        else:
            self._run("UPDATE lw_workers SET beat = {now}, state = :s WHERE executor_id = :e", s=state, e=executor_id)

    def beat_alive(self, executor_id: str) -> bool:
        """A live worker's heartbeat; False when the others judged it gone meanwhile (a survivor
        claimed its recovery: its loops are someone else's now), and then nothing is written."""
        return bool(self._run("UPDATE lw_workers SET beat = {now} WHERE executor_id = :e AND state IN "
                              "('alive', 'draining')", e=executor_id))

    def gone(self, dead_after_s: float) -> list[str]:
        """Workers that left, or whose last heartbeat is older than `dead_after_s`, or whose
        recovery was claimed longer ago than that and never finished (all on the database's
        clock: a worker's own clock does not come into it)."""
        rows = self._run(f"SELECT executor_id FROM lw_workers WHERE {_UNCLAIMED}", after=dead_after_s)
        return [r[0] for r in rows]

    def claim_recovery(self, executor_id: str, dead_after_s: float) -> bool:
        """One survivor wins the recovery of a gone worker (the update that finds it still
        unclaimed, or its last claim stale); `recovered` marks the recovery done."""
        return bool(self._run(f"UPDATE lw_workers SET state = 'recovering', beat = {{now}} WHERE executor_id = :e "
                              f"AND ({_UNCLAIMED})", e=executor_id, after=dead_after_s))

    def recovered(self, executor_id: str) -> None:
        self._run("UPDATE lw_workers SET state = 'recovered' WHERE executor_id = :e AND state = 'recovering'",
                  e=executor_id)

    def taken_over(self, executor_id: str) -> None:
        """A gone worker's executions, closed: a survivor runs them now."""
        self._run("UPDATE lw_executions SET ended = {now}, status = 'taken over' WHERE executor_id = :e AND "
                  "ended IS NULL", e=executor_id)

    def workers(self) -> list[Worker]:
        return [Worker(*r) for r in self._run("SELECT * FROM lw_workers ORDER BY started")]

    def started(self, workflow_id: str, executor_id: str, label: str, session_id: str) -> float:
        # (an executor runs a workflow once at a time: an open row of it is the cut-off insert's)
        rows = self._run("INSERT INTO lw_executions VALUES (:w, :e, :l, :s, {now}, NULL, 'running') RETURNING started",
                         "SELECT started FROM lw_executions WHERE workflow_id = :w AND executor_id = :e AND "
                         "ended IS NULL", w=workflow_id, e=executor_id, l=label, s=session_id)
        return float(rows[0][0])

    def ended(self, workflow_id: str, executor_id: str, started: float, status: str) -> None:
        self._run("UPDATE lw_executions SET ended = {now}, status = :st WHERE workflow_id = :w AND "
                  "executor_id = :e AND started = :s", st=status, w=workflow_id, e=executor_id, s=started)

    def executions(self, running_only: bool = False) -> list[Execution]:
        where = " WHERE ended IS NULL" if running_only else ""
        return [Execution(*r) for r in self._run(f"SELECT * FROM lw_executions{where} ORDER BY started")]

    def executions_of(self, executor_id: str) -> list[tuple[str, float]]:
        """(workflow id, started) of what `executor_id` runs now."""
        rows = self._run("SELECT workflow_id, started FROM lw_executions WHERE executor_id = :e AND ended IS NULL",
                         e=executor_id)
        return [(r[0], r[1]) for r in rows]

    def mark_tool_start(self, step_key: str) -> bool:
        """True the first time a tool step starts; False when it started before (and never finished)."""
        from ..core.ids import uuid4

        return bool(self._run("INSERT INTO lw_tool_starts (step_key, started, token) VALUES (:k, {now}, :t) "
                              "ON CONFLICT (step_key) DO NOTHING",
                              "SELECT 1 FROM lw_tool_starts WHERE step_key = :k AND token = :t", k=step_key, t=uuid4()))

    def tool_group_started(self, executor_id: str, machine: str, pgid: int, ticks: int) -> None:
        self._run("INSERT INTO lw_tool_groups VALUES (:e, :m, :p, :t) ON CONFLICT DO NOTHING",
                  e=executor_id, m=machine, p=pgid, t=ticks)

    def tool_group_ended(self, executor_id: str, pgid: int) -> None:
        """No process of the group is left (any older row of the same id had ended before it was reused)."""
        self._run("DELETE FROM lw_tool_groups WHERE executor_id = :e AND pgid = :p", e=executor_id, p=pgid)

    def tool_groups_of(self, executor_id: str) -> list[tuple[str, int, int]]:
        """(machine, process group id, its leader's start ticks) of what `executor_id`'s tools may still run."""
        rows = self._run("SELECT machine, pgid, ticks FROM lw_tool_groups WHERE executor_id = :e", e=executor_id)
        return [(r[0], int(r[1]), int(r[2])) for r in rows]

    def forget_tool_groups(self, executor_id: str) -> None:
        self._run("DELETE FROM lw_tool_groups WHERE executor_id = :e", e=executor_id)

    def close(self) -> None:
        self.engine.dispose()
