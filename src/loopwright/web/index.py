"""The session list's cache: one SQLite row per transcript, keyed by path and checked against
the file's mtime and size, so a list request stats the files and parses only the changed ones.
The cache lives in the loopwright home (`cache/serve-index.db`, private) and can be deleted."""

from __future__ import annotations

import json
import os
import threading
import time
from pathlib import Path
from typing import Any

from ..stores.jsonl import project_name
from ..stores.sqlitedb import connect, create_schema, write_transaction
from .summary import summarize_file

_SCHEMA = """
CREATE TABLE IF NOT EXISTS sessions (
    path TEXT PRIMARY KEY, mtime_ns INTEGER NOT NULL, size INTEGER NOT NULL, id TEXT NOT NULL,
    project TEXT NOT NULL, folder TEXT NOT NULL, started TEXT NOT NULL, model TEXT NOT NULL,
    turns INTEGER NOT NULL, cost_usd REAL NOT NULL, duration_ms INTEGER NOT NULL, outcome TEXT NOT NULL,
    goal TEXT NOT NULL, first_prompt TEXT NOT NULL, damaged INTEGER NOT NULL, costs TEXT NOT NULL,
    attempt TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS sessions_by_start ON sessions (started DESC);
CREATE INDEX IF NOT EXISTS sessions_by_id ON sessions (id);
"""
VERSION = 2  # bump when a summary field changes: the cache is rebuilt (2: the attempt mark)
COLUMNS = ("id", "project", "folder", "started", "model", "turns", "cost_usd", "duration_ms", "outcome", "goal",
           "first_prompt", "damaged", "costs", "path", "attempt")
FILTERS = ("project", "model", "outcome", "goal")


class SessionIndex:
    """Rows of the transcripts under `root/projects` (one project's when `cwd` is given)."""

    def __init__(self, root: Path, cwd: str | None, db_path: Path | None = None, min_interval_s: float = 1.0) -> None:
        self.projects = root / "projects"
        self.only = project_name(cwd) if cwd is not None else None
        db_path = db_path or root / "cache" / "serve-index.db"
        self.db = connect(db_path, own_folder=False, threads=True)  # `lock` serializes the threads
        with write_transaction(self.db):  # two servers of one home may start at once
            if self.db.execute("PRAGMA user_version").fetchone()[0] != VERSION:
                self.db.execute("DROP TABLE IF EXISTS sessions")
                self.db.execute(f"PRAGMA user_version={VERSION}")
            create_schema(self.db, _SCHEMA)
        self.lock = threading.Lock()  # the database
        self._pass = threading.Lock()  # one refresh at a time
        self.min_interval_s, self._refreshed = min_interval_s, 0.0
        self._known = {p: (m, s) for p, m, s in self.db.execute("SELECT path, mtime_ns, size FROM sessions")}
        self._choices: dict[str, list[str]] = {}

    def refresh(self, force: bool = False) -> int:
        """Bring the cache up to date with the files, now; returns how many were (re)read. The
        files are stated and parsed outside `lock`, so list requests go on meanwhile."""
        with self._pass:
            if not force and time.monotonic() - self._refreshed < self.min_interval_s:
                return 0
            known = self._known
            changed, seen = [], set()
            for project, path, st in self._files():
                seen.add(path)
                if known.get(path) != (st.st_mtime_ns, st.st_size):
                    changed.append((project, path, st, summarize_file(Path(path))))
            gone = [p for p in known if p not in seen]
            with self.lock:
                with write_transaction(self.db):
                    for project, path, st, row in changed:
                        self._put(project, path, st, row)
                    self.db.executemany("DELETE FROM sessions WHERE path = ?", [(p,) for p in gone])
                for project, path, st, row in changed:
                    known[path] = (st.st_mtime_ns, st.st_size)
                for path in gone:
                    del known[path]
                if changed or gone:
                    self._choices.clear()
            self._refreshed = time.monotonic()
            return len(changed)

    def refresh_soon(self, wait_s: float = 0.1) -> None:
        """For a page: a cache never filled is filled first; else a refresh starts in the background
        (once the last one is `min_interval_s` old) and the page waits for it at most `wait_s`,
        then shows what the cache holds. Stating 10,000 files takes about 0.1 s here."""
        if self._refreshed == 0.0:
            self.refresh()
            return
        if time.monotonic() - self._refreshed < self.min_interval_s or self._pass.locked():
            return
        worker = threading.Thread(target=self.refresh, daemon=True)
        worker.start()
        worker.join(wait_s)

    def _files(self) -> Any:
        try:
            folders = [self.only] if self.only is not None else sorted(os.listdir(self.projects))
        except OSError:
            return
        for project in folders:
            try:
                entries = list(os.scandir(self.projects / project))
            except OSError:
                continue
            for entry in entries:
                if entry.name.endswith(".jsonl") and entry.is_file(follow_symlinks=False):
                    yield project, entry.path, entry.stat(follow_symlinks=False)

    def _put(self, project: str, path: str, st: os.stat_result, row: dict[str, Any]) -> None:
        self.db.execute(
            "INSERT OR REPLACE INTO sessions (path, mtime_ns, size, id, project, folder, started, model, turns, cost_usd,"
            " duration_ms, outcome, goal, first_prompt, damaged, costs, attempt)"
            " VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
            (path, st.st_mtime_ns, st.st_size, row["id"], project, row["folder"], row["started"], row["model"],
             row["turns"], row["cost_usd"], row["duration_ms"], row["outcome"], row["goal"], row["first_prompt"],
             row["damaged_lines"], json.dumps(row["costs"]), json.dumps(row["attempt"]) if row["attempt"] else ""))

    def page(self, filters: dict[str, str], text: str = "", offset: int = 0, limit: int = 50) -> tuple[list[dict[str, Any]], int]:
        """One page of rows, newest first, and how many rows match in all."""
        where, args = self._where(filters, text)
        with self.lock:
            total = self.db.execute(f"SELECT COUNT(*) FROM sessions {where}", args).fetchone()[0]
            rows = self.db.execute(f"SELECT {', '.join(COLUMNS)} FROM sessions {where} ORDER BY started DESC, id "
                                   "LIMIT ? OFFSET ?", (*args, limit, offset)).fetchall()
        out = [dict(zip(COLUMNS, r)) for r in rows]
        for r in out:  # the mark of an attempt of a `--attempts N` run (stores.sessionlist.attempt_mark)
            r["attempt"] = json.loads(r["attempt"]) if r["attempt"] else None
        return out, total

    def _where(self, filters: dict[str, str], text: str) -> tuple[str, tuple[Any, ...]]:
        clauses, args = [], []
        if self.only is not None:
            clauses.append("project = ?")
            args.append(self.only)
        for key in FILTERS:
            if filters.get(key):
                clauses.append(f"{key} = ?")
                args.append(filters[key])
        if text:
            clauses.append("(first_prompt LIKE ? ESCAPE '\\' OR id LIKE ? ESCAPE '\\' OR folder LIKE ? ESCAPE '\\')")
            like = "%" + text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
            args += [like, like, like]
        return ("WHERE " + " AND ".join(clauses)) if clauses else "", tuple(args)

    def choices(self, column: str) -> list[str]:
        """The distinct values of a filter column, for the filter form."""
        assert column in FILTERS
        with self.lock:
            if column not in self._choices:
                self._choices[column] = [r[0] for r in self.db.execute(
                    f"SELECT DISTINCT {column} FROM sessions WHERE {column} != '' ORDER BY {column} LIMIT 500")]
            return self._choices[column]

    def path_of(self, session_id: str) -> Path | None:
        """The transcript of an id, only ever a file under `projects/` that the index holds."""
        where, args = self._where({}, "")
        where = f"{where} AND id = ?" if where else "WHERE id = ?"
        with self.lock:
            row = self.db.execute(f"SELECT path FROM sessions {where} LIMIT 1", (*args, session_id)).fetchone()
        if row is None:
            return None
        path = Path(row[0])
        return path if path.resolve().parent.parent == self.projects.resolve() else None

    def costs(self) -> list[tuple[str, str, float]]:
        """(day, model, cost) of every session in scope, summed."""
        where, args = self._where({}, "")
        totals: dict[tuple[str, str], float] = {}
        with self.lock:
            rows = self.db.execute(f"SELECT substr(started, 1, 10), costs FROM sessions {where}", args).fetchall()
        for day, costs in rows:
            for model, cost in json.loads(costs).items():
                totals[(day, model)] = totals.get((day, model), 0.0) + cost
        return sorted((d, m, c) for (d, m), c in totals.items())

    def close(self) -> None:
        self.db.close()
