"""Opening a session for a run: start a new one, resume one (`-r`, `-c`) or fork it, with the store
injected; what a run needs comes back as an `OpenedSession` (id, history, transcript path, recorder)."""

from __future__ import annotations

from dataclasses import field
from typing import Any, Callable, Literal

from ..core.fastclass import dataclass
from ..core.ids import uuid4
from ..core.types import Message
from ..core.storeports import SessionLog, SessionStore
from .recorder import Recorder
from ..core.errors import SessionError
from .records import Record, Restored, UserEntry, restore

Source = Literal["startup", "resume", "fork"]  # SessionStart's `source`


@dataclass
class OpenedSession:
    """A session ready to run: `loopwright.Session.opened(s)` is the library's conversation over it
    (`agent.run(…, session=…)`). `recorder` is None when nothing is written (`--no-session-persistence`)."""

    session_id: str
    source: Source
    history: list[Message]
    transcript_path: str
    recorder: Recorder | None
    warnings: list[str] = field(default_factory=list)
    resumed_from: str | None = None
    records: list[Record] = field(default_factory=list)  # the resumed session's, e.g. to restore a goal

    def close(self) -> None:
        if self.recorder is not None:
            self.recorder.close()


def open_session(store: SessionStore, cwd: str, *, resume: str | None = None, continue_last: bool = False,
                 fork: bool = False, session_id: str | None = None, persist: bool = True,
                 new_id: Callable[[], str] = uuid4, defer_sync: bool = True,
                 opening: dict[str, Any] | None = None) -> OpenedSession:
    """A new session (`session_id` or a fresh one), or the one named by `resume`, or the latest of
    this project (`continue_last`); `fork` copies a resumed one into a new id. `defer_sync`: the
    records are fsynced once before each tool run, on the group-commit thread (see `Recorder`);
    False: each record that must survive a power cut as it is written. `opening`: fields for a new
    session's first record (its project's `gitHead`, see `gitstate`), or for the first record a
    resume appends (its command line: a replay runs each prompt with the flags it was given)."""
    if resume is None and not continue_last:
        sid = _new_session_id(store, session_id, new_id)
        if not persist:
            return OpenedSession(sid, "startup", [], "", None)
        log = store.create(sid)
        return OpenedSession(sid, "startup", [], log.location, Recorder(log, sid, cwd, defer_sync=defer_sync,
                                                                      opening=opening))
    old = resume if resume is not None else store.latest()
    if old is None:
        raise SessionError("No conversation found to continue")
    # Lock before reading, so no other writer can add a record that this replay would miss.
    held = _open(store, old) if persist and not fork and store.exists(old) else None
    raw, warnings = _load(store, old)
    records = _parse(raw, store.location(old))
    restored = restore(records)
    if fork:
        sid = _new_session_id(store, session_id, new_id)
        recorder = _copy(store, sid, cwd, raw, old, defer_sync) if persist else None
    else:
        sid = old
        recorder = Recorder(held, sid, cwd, parent=restored.last_uuid, defer_sync=defer_sync,
                            opening=opening) if held is not None else None
    warnings += _recover(restored, recorder, old)
    return OpenedSession(sid, "fork" if fork else "resume", list(restored.messages),
                   store.location(sid) if persist else "", recorder, warnings, old, records)


def _new_session_id(store: SessionStore, chosen: str | None, new_id: Callable[[], str]) -> str:
    """The caller's id if no session has it yet; else a fresh random one, in use nowhere, so
    there is nothing to search for."""
    if chosen is None:
        return new_id()
    if store.exists(chosen):
        raise SessionError(f"Session ID {chosen} is already in use")
    return chosen


def _open(store: SessionStore, session_id: str) -> SessionLog:
    try:
        return store.open(session_id)
    except OSError as exc:
        raise SessionError(f"cannot open session {session_id}: {exc}") from None


def _load(store: SessionStore, session_id: str) -> tuple[list[dict[str, Any]], list[str]]:
    try:
        loaded = store.load(session_id)
    except ValueError as exc:
        raise SessionError(f"cannot resume session {session_id}: {exc}") from None
    if loaded is None:
        raise SessionError(f"No conversation found with session ID: {session_id}")
    return loaded[0], list(loaded[1])


def _parse(raw: list[dict[str, Any]], where: str) -> list[Record]:
    try:
        return [Record.from_json(r) for r in raw]
    except SessionError as exc:
        raise SessionError(f"{where}: {exc}") from None


def _copy(store: SessionStore, sid: str, cwd: str, raw: list[dict[str, Any]], old: str, defer_sync: bool) -> Recorder:
    """The fork's file starts with every record of the old session, under the new id."""
    log = store.create(sid)
    try:
        for i, record in enumerate(raw):
            log.append(record | {"sessionId": sid}, sync=i == len(raw) - 1)
    except OSError as exc:
        raise SessionError(f"cannot write the transcript {log.location}: {exc}") from exc
    recorder = Recorder(log, sid, cwd, parent=raw[-1].get("uuid") if raw else None, defer_sync=defer_sync)
    recorder.notice(f"Forked from session {old}", subtype="session_forked", forkedFrom=old)
    return recorder


def _recover(restored: Restored, recorder: Recorder | None, old: str) -> list[str]:
    """Record the results made up for tool calls a crash left unanswered, so the transcript is a
    valid conversation again, and say what happened."""
    if restored.recovery is None:
        return []
    if recorder is not None:
        recorder.append(UserEntry(restored.recovery, synthetic=True), sync=True)
    unknown = [name for name, how in restored.recovered if how == "unknown"]
    not_run = [name for name, how in restored.recovered if how == "not_run"]
    parts = [f"{len(restored.recovered)} tool call(s) were left without results"]
    if unknown:
        parts.append(f"outcome unknown, not run again: {', '.join(unknown)}")
    if not_run:
        parts.append(f"never started: {', '.join(not_run)}")
    return [f"session {old} was interrupted mid-turn: " + "; ".join(parts)]
