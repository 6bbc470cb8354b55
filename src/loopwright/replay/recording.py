"""A recorded session as a replay reads it: the session's own transcript and its subagents'
sidechains (raw records, as written), from a transcript file or from any store (`--store`), and
what its first record says about how it started (the project's git commit, the run's spec, the
command line)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..core.errors import SessionError, UsageError
from ..core.storeports import ListsSidechains, SessionStore
from ..session.records import Record


@dataclass
class Recording:
    session_id: str
    cwd: str
    main: list[dict[str, Any]]
    sidechains: dict[str, list[dict[str, Any]]] = field(default_factory=dict)  # agent id -> records
    where: str = ""
    warnings: list[str] = field(default_factory=list)

    @property
    def first(self) -> dict[str, Any]:
        return self.main[0] if self.main else {}

    @property
    def git_head(self) -> str | None:
        return self.first.get("gitHead")

    @property
    def git_root(self) -> str | None:
        return self.first.get("gitRoot")

    @property
    def argv(self) -> list[str] | None:
        argv = self.first.get("argv")
        return [str(a) for a in argv] if isinstance(argv, list) else None

    @property
    def spec(self) -> dict[str, Any] | None:
        """The run's `RunSpec` as the first record keeps it (JSON; recorded since this version)."""
        spec = self.first.get("spec")
        return spec if isinstance(spec, dict) else None

    def parsed(self, raw: list[dict[str, Any]]) -> list[Record]:
        try:
            return [Record.from_json(r) for r in raw]
        except SessionError as exc:
            raise UsageError(f"{self.where}: {exc}") from None


def load(session: str, *, store: str | None = None, cwd: str = ".") -> Recording:
    """`session`: a transcript file (`….jsonl`, its sidechains beside it) or a session id, looked
    for in the store (this project first, then every project, as `-r` does)."""
    path = Path(session)
    if session.endswith(".jsonl") or path.is_file():
        if not path.is_file():
            raise UsageError(f"{session}: no such transcript file")
        return _from_file(path)
    from ..stores import open_store, store_url

    stores = open_store(store_url(store), cwd)
    sessions = stores.sessions
    if not sessions.exists(session):
        raise UsageError(f"{session}: no such session (give its id from `loopwright sessions --all`, "
                         "or the path of a .jsonl transcript)")
    loaded = sessions.load(session)
    assert loaded is not None
    raw, warnings = loaded
    where = sessions.location(session)
    chains = {}
    for agent in _agents(sessions, session):
        data = sessions.export(session, agent)
        if data:
            chains[agent] = _lines(data, f"{where} (agent {agent})")
    return _recording(raw, chains, where, list(warnings))


def _agents(sessions: SessionStore, session_id: str) -> list[str]:
    return sessions.agents(session_id) if isinstance(sessions, ListsSidechains) else []


def _from_file(path: Path) -> Recording:
    from ..stores.jsonl import read_records

    raw, warnings = read_records(path)
    chains = {}
    folder = path.with_suffix("") / "subagents"
    for side in sorted(folder.glob("agent-*.jsonl")) if folder.is_dir() else []:
        chains[side.stem[len("agent-"):]] = read_records(side)[0]
    return _recording(raw, chains, str(path), list(warnings))


def _lines(data: bytes, where: str) -> list[dict[str, Any]]:
    out = []
    for number, line in enumerate(data.splitlines(), 1):
        if not line.strip():
            continue
        try:
            out.append(json.loads(line))
        except ValueError:
            raise UsageError(f"{where}: record {number} is not JSON") from None
    return out


def _recording(raw: list[dict[str, Any]], chains: dict[str, list[dict[str, Any]]], where: str,
               warnings: list[str]) -> Recording:
    if not raw:
        raise UsageError(f"{where}: the session has no records")
    first = raw[0]
    return Recording(str(first.get("sessionId", "")), str(first.get("cwd", "")), raw, chains, where, warnings)
