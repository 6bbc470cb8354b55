"""The ports of what outlives a run: a session's log and the store it lives in, the schedules
and their runs, the routine ledger, and `Stores`, everything one store URL names. Adapters in
`stores/` implement these."""

from __future__ import annotations

from dataclasses import field
from typing import Any, Mapping, Protocol, runtime_checkable

from .fastclass import dataclass


class SessionLog(Protocol):
    """One session's append-only log. `append` writes one record durably enough that a killed
    process loses nothing already appended; `sync=True` also survives power loss. A log may
    also be a `DeferredSync` (its fsyncs can wait for a batch) and a `KeepsSidechains` (its
    subagents' transcripts beside it).

    A minimal one, in memory (nothing survives the process):

    ```python
    class ListLog:
        def __init__(self, name):
            self.name, self.records, self.closed = name, [], False

        @property
        def location(self):
            return f"memory:{self.name}"

        def append(self, record, *, sync=False):
            if self.closed:
                raise ValueError(f"{self.location}: appended to after close")
            self.records.append(dict(record))

        def close(self):
            self.closed = True


    log = ListLog("s1")
    log.append({"type": "user"})
    log.close()
    assert log.records == [{"type": "user"}] and log.location == "memory:s1"
    ```
    """

    @property
    def location(self) -> str: ...

    def append(self, record: dict[str, Any], *, sync: bool = False) -> None: ...

    def close(self) -> None: ...


@runtime_checkable
class DeferredSync(Protocol):
    """A log whose appends can be made power-safe later, in one go: `sync()` fsyncs every record
    appended so far. A Recorder over such a log fsyncs once a step, before a tool runs; over
    another log, each record that must survive is synced as it is appended.

    A minimal one, a file of one JSON record a line:

    ```python
    import json
    import os


    class FileLog:
        def __init__(self, path):
            self.path = path
            self.fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)

        @property
        def location(self):
            return self.path

        def append(self, record, *, sync=False):
            os.write(self.fd, json.dumps(record).encode() + b"\\n")
            if sync:
                os.fsync(self.fd)

        def sync(self):  # the Recorder calls it once a step, from a thread of its own
            os.fsync(self.fd)

        def close(self):
            os.close(self.fd)


    log = FileLog("s1.jsonl")
    log.append({"type": "user"})
    log.sync()
    log.close()
    assert open("s1.jsonl").read().splitlines() == ['{"type": "user"}']
    ```
    """

    def sync(self) -> None: ...


@runtime_checkable
class KeepsSidechains(Protocol):
    """A log that keeps subagents' transcripts beside the session's: `sidechain(agent_id)` is the
    log of one (e.g. `<session-id>/subagents/agent-<id>.jsonl`). Without it, subagents' runs
    are not recorded.

    A minimal one, in memory:

    ```python
    class ListLog:
        def __init__(self, name):
            self.name, self.records, self.sides = name, [], {}

        @property
        def location(self):
            return f"memory:{self.name}"

        def append(self, record, *, sync=False):
            self.records.append(dict(record))

        def close(self):
            pass

        def sidechain(self, agent_id):
            return self.sides.setdefault(agent_id, ListLog(f"{self.name}/subagents/agent-{agent_id}"))


    log = ListLog("s1")
    log.sidechain("a1").append({"type": "user", "isSidechain": True, "agentId": "a1"})
    assert log.records == [] and log.sides["a1"].location == "memory:s1/subagents/agent-a1"
    ```
    """

    def sidechain(self, agent_id: str) -> SessionLog: ...


@runtime_checkable
class ListsSidechains(Protocol):
    """A session store that can name the subagents whose transcripts a session keeps (their
    `agent_id`s, for `export(session_id, agent_id)`).

    A minimal one, the part that lists them:

    ```python
    class Sidechains:
        def __init__(self):
            self.kept = {}  # session id -> {agent id: its records}

        def agents(self, session_id):
            return sorted(self.kept.get(session_id, {}))


    store = Sidechains()
    store.kept["s1"] = {"b2": [], "a1": []}
    assert store.agents("s1") == ["a1", "b2"] and store.agents("s2") == []
    ```
    """

    def agents(self, session_id: str) -> list[str]: ...


class SessionStore(Protocol):
    r"""Where sessions live. `load` gives a session's raw records and warnings (a torn last line),
    None for an unknown id, and raises ValueError for a damaged session. `open` gives the append
    handle: an existing session is locked against other writers at once (OSError — BlockingIOError
    when another process writes it — if it cannot be), a new one is created on its first append.
    `create` gives the handle of a new session without searching for the id (the caller knows it
    is unused). `location` names the session for people and hooks (`transcript_path`).

    A minimal one, in memory, one writer a session:

    ```python
    import json


    class Log:
        def __init__(self, store, session_id):
            self.store, self.session_id = store, session_id

        @property
        def location(self):
            return f"memory:{self.session_id}"

        def append(self, record, *, sync=False):
            self.store.sessions.setdefault(self.session_id, []).append(dict(record))
            self.store.order = [s for s in self.store.order if s != self.session_id] + [self.session_id]

        def close(self):
            self.store.writing.discard(self.session_id)


    class MemoryStore:
        def __init__(self):
            self.sessions, self.order, self.writing = {}, [], set()

        def latest(self):
            return self.order[-1] if self.order else None

        def exists(self, session_id):
            return session_id in self.sessions

        def load(self, session_id):
            records = self.sessions.get(session_id)
            return None if records is None else ([dict(r) for r in records], [])

        def open(self, session_id):
            if session_id in self.writing:
                raise BlockingIOError(f"session {session_id} is being written by another writer")
            self.writing.add(session_id)
            return Log(self, session_id)

        def create(self, session_id):
            return self.open(session_id)

        def location(self, session_id):
            return f"memory:{session_id}"

        def export(self, session_id, agent_id=None):
            records = self.sessions.get(session_id) if agent_id is None else None
            if records is None:
                return None
            return "".join(json.dumps(r, separators=(",", ":")) + "\n" for r in records).encode()


    store = MemoryStore()
    log = store.create("s1")
    log.append({"type": "user", "message": {"role": "user", "content": "hi"}})
    try:
        store.open("s1")
    except BlockingIOError:
        pass
    else:
        raise AssertionError("a second writer got in")
    log.close()
    assert store.latest() == "s1" and store.load("s1")[0][0]["type"] == "user"
    assert store.export("s1").count(b"\n") == 1 and store.load("nope") is None
    ```
    """

    def latest(self) -> str | None: ...

    def exists(self, session_id: str) -> bool: ...

    def load(self, session_id: str) -> tuple[list[dict[str, Any]], list[str]] | None: ...

    def open(self, session_id: str) -> SessionLog: ...

    def create(self, session_id: str) -> SessionLog: ...

    def location(self, session_id: str) -> str: ...

    def export(self, session_id: str, agent_id: str | None = None) -> bytes | None:
        """The session (or its subagent `agent_id`'s sidechain) as Claude Code's JSONL transcript:
        one compact JSON record a line; None when there is no such session."""
        ...


class Stores(Protocol):
    """Everything a URL names (`stores.open_store`): `url` as given with any password hidden,
    `files` when sessions are JSONL files on this machine (transcript paths), the sessions of one
    project (`cwd`), and new handles on the schedules and the routine ledger, each closed by its
    user. A session's checkpoints and workflow journal: `core.keeping.SessionKeeping`.

    A minimal one, made of the adapters of `stores/`, everything in one folder:

    ```python
    import tempfile
    from pathlib import Path

    from loopwright.stores.jsonl import JsonlStore
    from loopwright.stores.ledger import SqliteLedger
    from loopwright.stores.schedules import SqliteScheduleStore


    class FolderStores:
        files = True

        def __init__(self, folder, cwd):
            self.folder = Path(folder)
            self.url = f"folder:{self.folder}"
            self._sessions = JsonlStore(self.folder / "sessions", cwd)

        @property
        def sessions(self):
            return self._sessions

        def schedules(self):
            return SqliteScheduleStore(self.folder / "store.db")

        def ledger(self):
            return SqliteLedger(self.folder / "store.db")


    with tempfile.TemporaryDirectory() as folder:
        stores = FolderStores(folder, cwd=folder)
        log = stores.sessions.create("5e551075-0000-4000-8000-000000000001")
        log.append({"type": "user", "message": {"role": "user", "content": "hi"}})
        log.close()
        assert stores.sessions.exists("5e551075-0000-4000-8000-000000000001")
        schedules = stores.schedules()
        assert schedules.schedules() == []
        schedules.close()
    ```
    """

    url: str
    files: bool

    @property
    def sessions(self) -> SessionStore: ...

    def schedules(self) -> ScheduleStore: ...

    def ledger(self) -> Ledger: ...


@dataclass(frozen=True, slots=True)
class Schedule:
    """A persisted schedule: run `prompt` in `cwd` on the five-field `cron` expression, or every
    `every_s` seconds (a clean cron step) when it has none; next at `next_at` (None: finished).
    `options["spec"]` is the run of every fire, a `RunSpec` as JSON (a schedule of an older release
    keeps its `-p` flags as `options["args"]` until it is read); `options["queue"]`: the workers'
    queue its fires go to."""

    id: str
    cwd: str
    prompt: str
    every_s: int
    created: float
    next_at: float | None
    paused: bool = False
    max_runs: int | None = None
    runs: int = 0
    grace_s: int = 300
    options: Mapping[str, Any] = field(default_factory=dict)
    cron: str = ""


@dataclass(frozen=True, slots=True)
class ScheduledRun:
    """One fire of a schedule, as recorded: `status` running, success, error, interrupted
    (the scheduler stopped during it; never run again) or skipped (`note` says why)."""

    id: int
    schedule_id: str
    fire_at: float
    status: str
    started: float | None = None
    ended: float | None = None
    session_id: str = ""
    cost_usd: float = 0.0
    note: str = ""


class ScheduleStore(Protocol):
    """Where schedules and their runs live, shared by every scheduler process. `claim` is the
    one write that decides who runs a fire: it moves the schedule's next fire from `due_at` to
    `next_at` only if no one else has, and records the fire (running, or skipped with a note).

    A minimal one, in memory, for schedulers in one process:

    ```python
    import dataclasses
    import threading

    from loopwright.core.storeports import Schedule, ScheduledRun


    class MemorySchedules:
        def __init__(self):
            self.lock, self.table, self.fires, self.owners = threading.Lock(), {}, [], {}

        def add(self, schedule):
            with self.lock:
                if schedule.id in self.table:
                    raise ValueError(f"a schedule with id {schedule.id} already exists")
                self.table[schedule.id] = schedule

        def get(self, schedule_id):
            return self.table.get(schedule_id)

        def schedules(self):
            return sorted(self.table.values(), key=lambda s: (s.created, s.id))

        def set_paused(self, schedule_id, paused):
            with self.lock:
                found = self.table.get(schedule_id)
                if found is not None:
                    self.table[schedule_id] = dataclasses.replace(found, paused=paused)
                return found is not None

        def set_options(self, schedule_id, options):
            with self.lock:
                found = self.table.get(schedule_id)
                if found is not None:
                    self.table[schedule_id] = dataclasses.replace(found, options=options)
                return found is not None

        def remove(self, schedule_id):
            with self.lock:
                return self.table.pop(schedule_id, None) is not None  # its runs are kept

        def due(self, now):
            ready = [s for s in self.table.values() if not s.paused and s.next_at is not None and s.next_at <= now]
            return sorted(ready, key=lambda s: (s.next_at, s.id))

        def running(self, schedule_id):
            return any(r.schedule_id == schedule_id and r.status == "running" for r in self.fires)

        def claim(self, schedule, next_at, run, owner):
            with self.lock:  # the one decision: only the first to move it from its due time runs the fire
                now = self.table.get(schedule.id)
                if now is None or now.paused or now.next_at != schedule.next_at:
                    return None
                self.table[schedule.id] = dataclasses.replace(now, next_at=next_at,
                                                              runs=now.runs + (run.status == "running"))
                run_id = len(self.fires) + 1
                self.fires.append(dataclasses.replace(run, id=run_id, schedule_id=schedule.id))
                self.owners[run_id] = owner
                return run_id

        def finish(self, run_id, status, ended, session_id, cost_usd, note):
            with self.lock:
                self.fires[run_id - 1] = dataclasses.replace(self.fires[run_id - 1], status=status, ended=ended,
                                                             session_id=session_id, cost_usd=cost_usd, note=note)

        def orphans(self):
            return [(r, self.owners[r.id]) for r in self.fires if r.status == "running"]

        def runs(self, schedule_id=None, limit=50):
            return [r for r in self.fires if schedule_id in (None, r.schedule_id)][-limit:]


    store = MemorySchedules()
    store.add(Schedule("daily", "/tmp", "report", every_s=86400, created=0.0, next_at=100.0))
    due = store.due(now=150.0)[0]
    fire = ScheduledRun(0, "daily", fire_at=100.0, status="running", started=150.0)
    run_id = store.claim(due, 86500.0, fire, owner="host:1")
    assert run_id == 1 and store.claim(due, 86500.0, fire, owner="host:2") is None  # the fire was taken
    assert store.orphans()[0][1] == "host:1"
    store.finish(run_id, "success", 160.0, "session-1", 0.01, "")
    assert not store.running("daily") and store.get("daily").runs == 1 and store.due(now=150.0) == []
    ```
    """

    def add(self, schedule: Schedule) -> None: ...

    def get(self, schedule_id: str) -> Schedule | None: ...

    def schedules(self) -> list[Schedule]: ...

    def set_paused(self, schedule_id: str, paused: bool) -> bool: ...

    def set_options(self, schedule_id: str, options: dict[str, Any]) -> bool: ...

    def remove(self, schedule_id: str) -> bool: ...

    def due(self, now: float) -> list[Schedule]: ...

    def running(self, schedule_id: str) -> bool: ...

    def claim(self, schedule: Schedule, next_at: float | None, run: ScheduledRun, owner: str) -> int | None: ...

    def finish(self, run_id: int, status: str, ended: float, session_id: str, cost_usd: float, note: str) -> None: ...

    def orphans(self) -> list[tuple[ScheduledRun, str]]: ...

    def runs(self, schedule_id: str | None = None, limit: int = 50) -> list[ScheduledRun]: ...


@dataclass(frozen=True, slots=True)
class LedgerItem:
    """One item of a routine, as its ledger records it: `status` pending, running, done, failed,
    skipped (never run: `outcome` says why) or interrupted (its process died: resumed from
    `session_id` by the next fire); `tries` counts runs, a resume not included."""

    routine: str
    item_id: str
    status: str
    tries: int = 0
    session_id: str = ""
    cost_usd: float = 0.0
    outcome: str = ""
    created: float = 0.0
    started: float | None = None
    ended: float | None = None
    owner: str = ""
    fields: str = ""  # an item POSTed to `loopwright serve`: its fields, as JSON ("" for other sources)


@dataclass(frozen=True, slots=True)
class RoutineEntry:
    """A routine the scheduler fires: its file's `key` (absolute path), `name`, project folder,
    trigger (`every_s` or `cron`) and next fire (None: not yet registered with a trigger)."""

    key: str
    name: str
    cwd: str
    every_s: int = 0
    cron: str = ""
    paused: bool = False
    next_at: float | None = None


class Ledger(Protocol):
    """Where routine items are recorded, shared by every process. `claim` is the one write that
    decides who runs an item; it answers (session id, resumed) or None when the item is not to
    be taken (done, given up, or running elsewhere).

    A minimal one, in memory, for one process:

    ```python
    import dataclasses
    import threading

    from loopwright.core.storeports import LedgerItem


    class MemoryLedger:
        def __init__(self):
            self.lock, self.rows = threading.Lock(), {}

        def note(self, routine, item_id, now):
            with self.lock:
                self.rows.setdefault((routine, item_id), LedgerItem(routine, item_id, "pending", created=now))

        def skip(self, routine, item_id, reason, now):
            with self.lock:
                item = self.rows.setdefault((routine, item_id), LedgerItem(routine, item_id, "pending", created=now))
                if item.status == "pending":
                    self.rows[routine, item_id] = dataclasses.replace(item, status="skipped", outcome=reason, ended=now)

        def get(self, routine, item_id):
            return self.rows.get((routine, item_id))

        def claim(self, routine, item_id, *, owner, session_id, now, retry_failed):
            with self.lock:  # the one decision: who runs the item
                item = self.rows.get((routine, item_id))
                if item is None or not (item.status in ("pending", "interrupted")
                                        or (item.status == "failed" and item.tries <= retry_failed)):
                    return None
                resumed = item.status == "interrupted" and bool(item.session_id)
                self.rows[routine, item_id] = dataclasses.replace(
                    item, status="running", owner=owner, started=now, ended=None, tries=item.tries + (not resumed),
                    session_id=item.session_id if resumed else session_id)
                return self.rows[routine, item_id].session_id, resumed

        def finish(self, routine, item_id, status, *, cost_usd, outcome, now, fire_at=None):
            with self.lock:
                item = self.rows[routine, item_id]
                self.rows[routine, item_id] = dataclasses.replace(
                    item, status=status, cost_usd=item.cost_usd + cost_usd, outcome=outcome, ended=now)

        def recover(self, routine, owner, alive):
            with self.lock:
                gone = [i for (r, _), i in self.rows.items()
                        if r == routine and i.status == "running" and i.owner != owner and not alive(i.owner)]
                for item in gone:
                    self.rows[routine, item.item_id] = dataclasses.replace(
                        item, status="interrupted", outcome=f"its process ({item.owner}) stopped during the run")
                return [item.item_id for item in gone]

        def items(self, routine, status=None):
            return sorted((i for (r, _), i in self.rows.items() if r == routine and status in (None, i.status)),
                          key=lambda i: (i.created, i.item_id))


    ledger = MemoryLedger()
    ledger.note("triage", "issue-7", now=1.0)
    assert ledger.claim("triage", "issue-7", owner="host:1", session_id="s1", now=2.0, retry_failed=0) == ("s1", False)
    assert ledger.claim("triage", "issue-7", owner="host:2", session_id="s2", now=2.0, retry_failed=0) is None
    assert ledger.recover("triage", "host:2", alive=lambda owner: False) == ["issue-7"]
    assert ledger.claim("triage", "issue-7", owner="host:2", session_id="s3", now=3.0, retry_failed=0) == ("s1", True)
    ledger.finish("triage", "issue-7", "done", cost_usd=0.02, outcome="labelled", now=4.0)
    assert [i.status for i in ledger.items("triage")] == ["done"]
    ```
    """

    def note(self, routine: str, item_id: str, now: float) -> None: ...

    def skip(self, routine: str, item_id: str, reason: str, now: float) -> None: ...

    def get(self, routine: str, item_id: str) -> LedgerItem | None: ...

    def claim(self, routine: str, item_id: str, *, owner: str, session_id: str, now: float,
              retry_failed: int) -> tuple[str, bool] | None: ...

    def finish(self, routine: str, item_id: str, status: str, *, cost_usd: float, outcome: str,
               now: float, fire_at: float | None = None) -> None:
        """`fire_at`: the start of the fire that ran it; the run is kept per fire too."""

    def recover(self, routine: str, owner: str, alive: Any) -> list[str]: ...

    def items(self, routine: str, status: str | None = None) -> list[LedgerItem]: ...
