"""The ports of what outlives a run: a session's log and the store it lives in, the schedules
and their runs, the routine ledger, and `Stores`, everything one store URL names. Adapters in
`stores/` implement these."""

from __future__ import annotations

from dataclasses import field
from typing import Any, Mapping, Protocol

from .fastclass import dataclass


class SessionLog(Protocol):
    """One session's append-only log. `append` writes one record durably enough that a killed
    process loses nothing already appended; `sync=True` also survives power loss. A log that
    has a `sidechain(agent_id)` method keeps subagents' transcripts beside the session's."""

    @property
    def location(self) -> str: ...

    def append(self, record: dict[str, Any], *, sync: bool = False) -> None: ...

    def close(self) -> None: ...


class SessionStore(Protocol):
    """Where sessions live. `load` gives a session's raw records and warnings (a torn last line),
    None for an unknown id, and raises ValueError for a damaged session. `open` gives the append
    handle: an existing session is locked against other writers at once (OSError — BlockingIOError
    when another process writes it — if it cannot be), a new one is created on its first append.
    `create` gives the handle of a new session without searching for the id (the caller knows it
    is unused). `location` names the session for people and hooks (`transcript_path`)."""

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
    user. A session's checkpoints and workflow journal: `core.keeping.SessionKeeping`."""

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
    `options["args"]` are the `-p` flags of every run."""

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
    `next_at` only if no one else has, and records the fire (running, or skipped with a note)."""

    def add(self, schedule: Schedule) -> None: ...

    def get(self, schedule_id: str) -> Schedule | None: ...

    def schedules(self) -> list[Schedule]: ...

    def set_paused(self, schedule_id: str, paused: bool) -> bool: ...

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
    be taken (done, given up, or running elsewhere)."""

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
