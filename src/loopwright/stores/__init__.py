"""Where sessions, schedules and routine ledgers live, named by one URL (`--store`, else
`LOOPWRIGHT_STORE`): unset or `sqlite:` is the embedded default (JSONL transcripts under the home,
schedules and ledgers in `<home>/schedules.db`), `sqlite:///PATH` the same with the SQLite file at
PATH, `postgresql://…` everything in one PostgreSQL database. Adapters are imported only when a URL
needs them: psycopg never loads for the default store."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Mapping

from ..core.errors import UsageError
from .urls import redact

SCHEMES = ("sqlite", "postgresql")
ENV = "LOOPWRIGHT_STORE"
_EXPECTED = "expected sqlite:///PATH (the default: JSONL transcripts and a SQLite file) or postgresql://…"


def store_url(flag: str | None, env: Mapping[str, str] | None = None) -> str:
    """The store's URL: the `--store` flag wins over `LOOPWRIGHT_STORE`; '' is the default."""
    if flag is not None:
        return flag.strip()
    return ((os.environ if env is None else env).get(ENV) or "").strip()


def open_store(url: str | None, cwd: str | Path, env: Mapping[str, str] | None = None) -> Any:
    """The stores the URL names, for the project in `cwd` (a `core.storeports.Stores`); a URL of any
    other shape is a UsageError naming it and the schemes taken."""
    url = (url or "").strip()
    scheme = url.partition(":")[0].lower() if ":" in url else url.lower()
    where = f"--store/{ENV} {redact(url)!r}"
    if not url or scheme == "sqlite":
        return LocalStores(_sqlite_path(url, where), cwd, env, url)
    if scheme in ("postgresql", "postgres"):
        if not url.partition(":")[2].startswith("//"):
            raise UsageError(f"{where}: {_EXPECTED}")
        from .postgres import PostgresStores

        return PostgresStores(url, cwd)
    raise UsageError(f"{where}: unknown scheme {scheme!r}; {_EXPECTED}")


def _sqlite_path(url: str, where: str) -> Path | None:
    """`sqlite:` or `sqlite://` alone: None (the home's schedules.db); `sqlite:///PATH`: PATH."""
    rest = url.partition(":")[2]
    if rest in ("", "//"):
        return None
    if not rest.startswith("///") or rest == "///":
        raise UsageError(f"{where}: expected sqlite:///PATH with an absolute PATH to the SQLite file "
                         f"(e.g. sqlite:///home/me/loops.db), or sqlite: for the default")
    path = Path("/" + rest.lstrip("/"))
    if path.is_dir():
        raise UsageError(f"{where}: {path} is a folder; expected sqlite:///PATH naming the SQLite file "
                         f"(e.g. sqlite:///home/me/loops.db)")
    return path


class LocalStores:
    """The embedded default: JSONL transcripts under the home (checkpoints and workflow journals beside
    them), a SQLite file for schedules and ledgers."""

    files = True

    def __init__(self, db: Path | None, cwd: str | Path, env: Mapping[str, str] | None, url: str = "") -> None:
        from ..core.home import home

        self.url = url or "sqlite:"
        self.root = home(env)
        self.db_path = db if db is not None else self.root / "schedules.db"
        self.own_folder = db is None  # a file the URL names sits in the user's folder: left as it is
        self.cwd = Path(cwd)
        self._sessions: Any = None

    @property
    def sessions(self) -> Any:
        if self._sessions is None:
            from .jsonl import JsonlStore

            self._sessions = JsonlStore(self.root, self.cwd)
        return self._sessions

    def schedules(self) -> Any:
        from .schedules import SqliteScheduleStore

        return SqliteScheduleStore(self.db_path, own_folder=self.own_folder)

    def ledger(self) -> Any:
        from .ledger import SqliteLedger

        return SqliteLedger(self.db_path, own_folder=self.own_folder)

    def checkpoints(self, session_id: str) -> Any:
        """Beside the session's transcript file (this project's, else the one `-r ID` finds)."""
        from .keptfiles import FileCheckpoints, folder_of

        return FileCheckpoints(folder_of(self.sessions.location(session_id)))

    def journal(self, session_id: str) -> Any:
        from .keptfiles import FileJournal, journal_of

        return FileJournal(journal_of(self.sessions.location(session_id)))
