"""The PostgreSQL store (`postgresql://…`): sessions (with their checkpoints and workflow journals),
schedules and routine ledgers of every worker in one database, in the schema `loopwright`, made on
first use and versioned (`MIGRATIONS`).

A session is its transcript records in order: each record is kept as the exact line the JSONL
store would have written, so `export` gives the same bytes. One writer per session at a time: the
writer holds a session-level advisory lock on a connection of its own, released when it closes or
its process dies (as the JSONL store's flock is). psycopg is imported only here."""

from __future__ import annotations

import hashlib
import time
from functools import partial
from typing import Any

from ..core.errors import LoopwrightError
from .urls import bounded, redact
from .jsonl import _SAFE_ID, _decode, encode, project_name

# Each step brings the schema from the version before it to its own (1-based); never edit a
# shipped step, append one.
MIGRATIONS: tuple[str, ...] = (
    """
    CREATE TABLE loopwright.sessions (
        id text PRIMARY KEY, project text NOT NULL, cwd text NOT NULL, created double precision NOT NULL
    );
    CREATE INDEX sessions_by_project ON loopwright.sessions (project);
    CREATE TABLE loopwright.records (
        id bigserial PRIMARY KEY, session_id text NOT NULL, chain text NOT NULL DEFAULT '', line bytea NOT NULL
    );
    CREATE INDEX records_in_order ON loopwright.records (session_id, chain, id);
    CREATE TABLE loopwright.schedules (
        id text PRIMARY KEY, cwd text NOT NULL, prompt text NOT NULL, every_s integer NOT NULL,
        created double precision NOT NULL, next_at double precision, paused boolean NOT NULL DEFAULT false,
        max_runs integer, runs integer NOT NULL DEFAULT 0, grace_s integer NOT NULL,
        options text NOT NULL DEFAULT '{}', cron text NOT NULL DEFAULT ''
    );
    CREATE TABLE loopwright.runs (
        id bigserial PRIMARY KEY, schedule_id text NOT NULL, fire_at double precision NOT NULL,
        status text NOT NULL, started double precision, ended double precision,
        session_id text NOT NULL DEFAULT '', cost_usd double precision NOT NULL DEFAULT 0,
        note text NOT NULL DEFAULT '', owner text NOT NULL DEFAULT ''
    );
    CREATE INDEX runs_by_schedule ON loopwright.runs (schedule_id, id);
    CREATE INDEX runs_running ON loopwright.runs (status) WHERE status = 'running';
    CREATE TABLE loopwright.routine_items (
        routine text NOT NULL, item_id text NOT NULL, status text NOT NULL, tries integer NOT NULL DEFAULT 0,
        session_id text NOT NULL DEFAULT '', cost_usd double precision NOT NULL DEFAULT 0,
        outcome text NOT NULL DEFAULT '', created double precision NOT NULL, started double precision,
        ended double precision, owner text NOT NULL DEFAULT '', resumed boolean NOT NULL DEFAULT false,
        PRIMARY KEY (routine, item_id)
    );
    CREATE TABLE loopwright.routines (
        key text PRIMARY KEY, name text NOT NULL DEFAULT '', cwd text NOT NULL DEFAULT '',
        every_s integer NOT NULL DEFAULT 0, cron text NOT NULL DEFAULT '', paused boolean NOT NULL DEFAULT false,
        next_at double precision
    );
    """,
    # 2: items POSTed to `loopwright serve` (their fields), each routine's token, and item runs per fire
    """
    ALTER TABLE loopwright.routine_items ADD COLUMN fields text NOT NULL DEFAULT '';
    CREATE TABLE loopwright.routine_runs (
        routine text NOT NULL, fire_at double precision NOT NULL, item_id text NOT NULL, status text NOT NULL,
        cost_usd double precision NOT NULL DEFAULT 0, session_id text NOT NULL DEFAULT '',
        ended double precision NOT NULL
    );
    CREATE INDEX routine_runs_by_fire ON loopwright.routine_runs (routine, fire_at);
    CREATE TABLE loopwright.routine_tokens (
        key text PRIMARY KEY, token text NOT NULL, created double precision NOT NULL
    );
    """,
    # 3: what a session keeps besides its transcript (stores/pgkeeping.py): file checkpoints, the
    # files' bytes as they were (a path is its file-system bytes), and workflow journals
    """
    CREATE TABLE loopwright.checkpoints (
        session_id text NOT NULL, number integer NOT NULL, prompt_id text NOT NULL, at double precision NOT NULL,
        PRIMARY KEY (session_id, number)
    );
    CREATE TABLE loopwright.checkpoint_files (
        id bigserial PRIMARY KEY, session_id text NOT NULL, number integer NOT NULL, path bytea NOT NULL,
        content bytea, mode integer NOT NULL DEFAULT 420, skipped text NOT NULL DEFAULT '',
        UNIQUE (session_id, number, path)
    );
    CREATE TABLE loopwright.workflow_journal (
        id bigserial PRIMARY KEY, session_id text NOT NULL, set_aside integer NOT NULL DEFAULT 0,
        record text NOT NULL
    );
    CREATE INDEX workflow_journal_in_order ON loopwright.workflow_journal (session_id, set_aside, id);
    """,
)
_SCHEMA_LOCK = 0x6C77_5343_4845_4D41  # the advisory lock that keeps two first uses from both migrating
_READY: set[str] = set()  # URLs whose schema this process has checked
_SHARED: dict[str, Any] = {}  # one connection a URL for this process's reads and small writes (a Reconnecting)


class PostgresStores:
    """Everything in one PostgreSQL database: one connection a process for reads and small writes
    (shared by every `PostgresStores` of the URL: a scheduler opens many), one more per session
    being written (it holds the session's lock), one per schedule store or ledger handle."""

    files = False

    def __init__(self, url: str, cwd: Any) -> None:
        self.dsn = url
        self.url = redact(url)
        self.cwd = cwd
        self._sessions: PgSessionStore | None = None

    def connect(self) -> Any:
        """A new autocommit connection, the schema made or brought up to date on the first."""
        from .pgreconnect import reached

        try:
            import psycopg
        except ImportError:
            raise LoopwrightError(f"the store {self.url} needs psycopg 3: pip install 'psycopg[binary]'") from None

        try:
            conn = psycopg.connect(bounded(self.dsn), autocommit=True)
        except psycopg.Error as exc:
            raise LoopwrightError(f"cannot reach the store {self.url}: {_first_line(exc)}") from None
        if self.dsn not in _READY:
            try:
                migrate(conn, self.url)
            except BaseException:
                conn.close()
                raise
            _READY.add(self.dsn)
        reached(self.url)
        return conn

    def link(self) -> Any:
        """The process's shared connection to this store (`pgreconnect.Reconnecting`)."""
        from .pgreconnect import Reconnecting

        link = _SHARED.get(self.dsn)
        if link is None:
            link = _SHARED[self.dsn] = Reconnecting(self.connect, self.url)
        return link

    def db(self) -> Any:
        """The shared connection as it is now (made again if it broke): for a caller that runs
        its own statements; `run` tries them again when the connection drops."""
        return self.link().current()

    def run(self, work: Any, again: Any = None) -> Any:
        """`work(connection)` on the shared connection, run again on a new one if it drops
        (`again`, when given, first looks for what a cut-off write left: `pgreconnect`)."""
        return self.link().run(work, again)

    def rows(self, sql: str, params: tuple[Any, ...] = ()) -> list[Any]:
        """A read's rows, on the shared connection (a read is always safe to run again)."""
        return self.run(lambda db: db.execute(sql, params).fetchall())  # type: ignore[no-any-return]

    def row(self, sql: str, params: tuple[Any, ...] = ()) -> Any:
        return self.run(lambda db: db.execute(sql, params).fetchone())

    @property
    def sessions(self) -> "PgSessionStore":
        if self._sessions is None:
            self._sessions = PgSessionStore(self, self.cwd)
        return self._sessions

    def schedules(self) -> Any:
        from .pgledger import PgScheduleStore

        return PgScheduleStore(self.connect, self.url)

    def ledger(self) -> Any:
        from .pgledger import PgLedger

        return PgLedger(self.connect, self.url)

    def checkpoints(self, session_id: str) -> Any:
        from .pgkeeping import PgCheckpoints

        return PgCheckpoints(self, session_id)

    def journal(self, session_id: str) -> Any:
        from .pgkeeping import PgJournal

        return PgJournal(self, session_id)


def migrate(conn: Any, where: str) -> int:
    """Make the schema, or apply the steps it lacks, under a lock; its version after."""
    with conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(%s)", (_SCHEMA_LOCK,))
        conn.execute("CREATE SCHEMA IF NOT EXISTS loopwright")
        conn.execute("CREATE TABLE IF NOT EXISTS loopwright.meta (key text PRIMARY KEY, value text NOT NULL)")
        row = conn.execute("SELECT value FROM loopwright.meta WHERE key = 'schema_version'").fetchone()
        version = int(row[0]) if row else 0
        if version > len(MIGRATIONS):
            raise LoopwrightError(f"the store {where} has schema version {version}, newer than this loopwright "
                                  f"knows ({len(MIGRATIONS)}): upgrade loopwright")
        for step in MIGRATIONS[version:]:
            conn.execute(step)
        conn.execute("INSERT INTO loopwright.meta (key, value) VALUES ('schema_version', %s) "
                     "ON CONFLICT (key) DO UPDATE SET value = excluded.value", (str(len(MIGRATIONS)),))
    return len(MIGRATIONS)


def _first_line(exc: BaseException) -> str:
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0]


class PgSessionStore:
    """The sessions of one project (`cwd`); `-r ID` finds any project's session by its id."""

    def __init__(self, stores: PostgresStores, cwd: Any) -> None:
        self.stores = stores
        self.cwd = str(cwd)
        self.project = project_name(cwd)

    def location(self, session_id: str, chain: str = "") -> str:
        return f"{self.stores.url}#session={session_id}" + (f"&agent={chain}" if chain else "")

    def exists(self, session_id: str) -> bool:
        if not _SAFE_ID.fullmatch(session_id):
            return False
        return self.stores.row("SELECT 1 FROM loopwright.sessions WHERE id = %s", (session_id,)) is not None

    def latest(self) -> str | None:
        """The session of this project written to last."""
        row = self.stores.row(
            "SELECT s.id FROM loopwright.sessions s, LATERAL (SELECT max(r.id) AS last FROM loopwright.records r "
            "WHERE r.session_id = s.id AND r.chain = '') x WHERE s.project = %s "
            "ORDER BY x.last DESC NULLS LAST LIMIT 1", (self.project,))
        return row[0] if row else None

    def lines(self, session_id: str, chain: str = "") -> list[bytes] | None:
        """The session's records as their JSONL lines (without newlines), in order; None if unknown."""
        if not self.exists(session_id):
            return None
        rows = self.stores.rows("SELECT line FROM loopwright.records WHERE session_id = %s AND chain = %s "
                                "ORDER BY id", (session_id, chain))
        return [bytes(r[0]) for r in rows]

    def load(self, session_id: str) -> tuple[list[dict[str, Any]], list[str]] | None:
        lines = self.lines(session_id)
        if lines is None:
            return None
        records = []
        for number, line in enumerate(lines, 1):
            record = _decode(line)
            if record is None:
                raise ValueError(f"{self.location(session_id)}: record {number} is not a JSON record; it was damaged")
            records.append(record)
        return records, []

    def agents(self, session_id: str) -> list[str]:
        """The ids of the subagents whose sidechains the session holds."""
        rows = self.stores.db().execute("SELECT DISTINCT chain FROM loopwright.records WHERE session_id = %s "
                                        "AND chain <> '' ORDER BY chain", (session_id,)).fetchall()
        return [r[0] for r in rows]

    def export(self, session_id: str, agent_id: str | None = None) -> bytes | None:
        lines = self.lines(session_id, agent_id or "")
        if lines is None or (agent_id and not lines):
            return None
        return b"".join(line + b"\n" for line in lines)

    def summaries(self, this_folder: bool, limit: int) -> list[dict[str, Any]]:
        """`loopwright sessions`: this project's sessions (every project's when not
        `this_folder`), newest first, summarised as the JSONL files are."""
        from .sessionlist import summarize_lines

        where = "WHERE s.project = %s" if this_folder else ""
        rows = self.stores.rows(
            f"SELECT s.id FROM loopwright.sessions s, LATERAL (SELECT max(r.id) AS last FROM loopwright.records r "
            f"WHERE r.session_id = s.id AND r.chain = '') x {where} ORDER BY x.last DESC NULLS LAST"
            + (" LIMIT %s" if limit > 0 else ""),
            ((self.project,) if this_folder else ()) + ((limit,) if limit > 0 else ()))
        return [summarize_lines(sid, self.lines(sid) or [], partial(self.locked, sid)) for (sid,) in rows]

    def locked(self, session_id: str) -> bool:
        """Whether a writer holds the session's lock (seen in pg_locks; never taken to look)."""
        key = lock_key(session_id, "") & 0xFFFF_FFFF_FFFF_FFFF
        return self.stores.row(
            "SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND classid = %s::oid AND objid = %s::oid "
            "AND objsubid = 1 AND granted", (key >> 32, key & 0xFFFF_FFFF)) is not None

    def create(self, session_id: str) -> "PgLog":
        return PgLog(self, session_id)

    def open(self, session_id: str) -> "PgLog":
        """An existing session is locked now, so a second writer fails before its run starts."""
        log = PgLog(self, session_id)
        if self.exists(session_id):
            log.acquire()
        return log


_APPEND = "INSERT INTO loopwright.records (session_id, chain, line) VALUES (%s, %s, %s)"


def lock_key(session_id: str, chain: str) -> int:
    """The advisory lock of one transcript: 64 bits of a hash, as a signed bigint."""
    digest = hashlib.sha256(f"loopwright\0{session_id}\0{chain}".encode()).digest()
    return int.from_bytes(digest[:8], "big", signed=True)


class PgLog:
    """Append handle of one transcript (the session's, or a subagent's `chain`): its own
    connection holds the writer's lock from the first append (or `acquire`) until `close`.
    `sync=False` appends commit without waiting for the disk (they survive this process dying,
    as a write() does); `sync=True` waits for it. A connection that drops is made again (the
    lock taken again) and the cut-off append tried again, unless it had committed: the writer
    holds the lock, so its record is then the transcript's last (`pgreconnect`)."""

    def __init__(self, store: PgSessionStore, session_id: str, chain: str = "") -> None:
        from .pgreconnect import Reconnecting

        self.store, self.session_id, self.chain = store, session_id, chain
        self._link = Reconnecting(self._locked, store.stores.url)
        self._registered = bool(chain)  # a sidechain's records need no session row of their own
        self._held = False  # the lock was ours once: another holder now is our dropped connection's

    @property
    def location(self) -> str:
        return self.store.location(self.session_id, self.chain)

    def _locked(self) -> Any:
        """A new connection holding the transcript's lock (the first, or one made again after a drop)."""
        conn = self.store.stores.connect()
        try:
            got = conn.execute("SELECT pg_try_advisory_lock(%s)", (lock_key(self.session_id, self.chain),)).fetchone()
            if not got[0] and self._held:  # its server side has not ended yet: waited for as the drop is
                raise LoopwrightError(f"{self.location} is still locked by the connection that dropped")
            if not got[0]:
                raise BlockingIOError(f"{self.location} is being written by another loopwright process")
            conn.execute("SET synchronous_commit = off")
        except BaseException:
            conn.close()
            raise
        self._held = True
        return conn

    def acquire(self) -> Any:
        return self._link.current()

    def append(self, record: dict[str, Any], *, sync: bool = False) -> None:
        import psycopg

        line = encode(record)[:-1]
        try:
            self._link.run(lambda conn: self._insert(conn, line, sync), again=lambda conn: self._landed(conn, line))
        except psycopg.Error as exc:  # what the recorder reports as a failed write, like a full disk
            raise OSError(f"the store {self.store.stores.url} refused the record: {_first_line(exc)}") from None
        self._registered = True

    def _landed(self, conn: Any, line: bytes) -> bool | None:
        """True when the cut-off append had committed (its line is the transcript's last: each line
        holds its record's own uuid and time, and nobody else writes here while the lock is held)."""
        row = conn.execute("SELECT line FROM loopwright.records WHERE session_id = %s AND chain = %s "
                           "ORDER BY id DESC LIMIT 1", (self.session_id, self.chain)).fetchone()
        return True if row is not None and bytes(row[0]) == line else None

    def _insert(self, conn: Any, line: bytes, sync: bool) -> bool:
        if not sync and self._registered:  # the common case: one statement, one round trip
            conn.execute(_APPEND, (self.session_id, self.chain, line))
            return True
        with conn.transaction():
            if sync:
                conn.execute("SET LOCAL synchronous_commit = on")
            if not self._registered:
                conn.execute("INSERT INTO loopwright.sessions (id, project, cwd, created) VALUES (%s, %s, %s, %s) "
                             "ON CONFLICT (id) DO NOTHING",
                             (self.session_id, self.store.project, self.store.cwd, time.time()))
            conn.execute(_APPEND, (self.session_id, self.chain, line))
        return True

    def sidechain(self, agent_id: str) -> "PgLog":
        if not _SAFE_ID.fullmatch(agent_id):
            raise ValueError(f"agent id: expected letters, digits, '.', '_' or '-', got {agent_id!r}")
        return PgLog(self.store, self.session_id, agent_id)

    def close(self) -> None:
        self._link.close()  # also releases the lock
