"""A PostgreSQL store's sessions mirrored as JSONL files, for readers of transcript files (the web
view's list and pages, which tail files as they grow). The mirror is a cache: it is made afresh
for each reader, laid out as the JSONL store lays out a home (`projects/<project>/<id>.jsonl`, a
subagent's at `<id>/subagents/agent-<agent>.jsonl`), and `sync()` appends what was written since
the last call. A session has one writer at a time, so its records arrive in id order.

`sync()` reads, by the records' primary key, only the records above the highest id it has read,
so an idle sync costs a few index look-ups however many sessions there are. Record ids come from a
sequence and are taken before their insert commits, so a record may become visible after one with
a higher id: the ids between a low-water mark and the highest read are looked over again (ids
only) for such late records, and the mark moves up to a sync's highest id once every transaction
that could still hold a lower id has ended (seen in later snapshots, `pg_current_snapshot()`).
`reconcile()` compares every transcript's last id with the mirror's: a slower check, run seldom."""

from __future__ import annotations

import os
import re
import shutil
import time
from pathlib import Path
from typing import Any

from ..core.home import make_private_dirs, open_private
from .jsonl import _SAFE_ID

_PROJECT = re.compile(r"[A-Za-z0-9-]+")  # jsonl.project_name's alphabet

# This statement's snapshot: the oldest transaction still running, the first not yet started,
# and the highest record id visible.
_MARK = ("SELECT pg_snapshot_xmin(s)::text::bigint, pg_snapshot_xmax(s)::text::bigint, "
         "(SELECT coalesce(max(id), 0) FROM loopwright.records) FROM pg_current_snapshot() s")
_ABOVE = ("SELECT r.id, r.session_id, r.chain, s.project, r.line FROM loopwright.records r "
          "LEFT JOIN loopwright.sessions s ON s.id = r.session_id WHERE r.id > %s ORDER BY r.id LIMIT %s")
_IDS = "SELECT id, session_id, chain FROM loopwright.records WHERE id > %s AND id <= %s ORDER BY id"
_THESE = ("SELECT r.id, r.session_id, r.chain, s.project, r.line FROM loopwright.records r "
          "LEFT JOIN loopwright.sessions s ON s.id = r.session_id WHERE r.id = ANY(%s) ORDER BY r.id")
_TOPS = ("SELECT r.session_id, r.chain, max(r.id), s.project FROM loopwright.records r "
         "JOIN loopwright.sessions s ON s.id = r.session_id GROUP BY r.session_id, r.chain, s.project")
_NEWER = "SELECT id, line FROM loopwright.records WHERE session_id = %s AND chain = %s AND id > %s ORDER BY id"
BATCH = 5000  # records a query: the first sync of a large store reads it in pieces
SETTLE_S = 1.0  # a record's insert takes its id and its transaction id within this (microseconds, in fact)
MAX_MARKS = 100  # snapshots kept while a long transaction holds the low-water mark back


class Mirror:
    def __init__(self, stores: Any, root: Path) -> None:
        self.stores, self.root = stores, root
        shutil.rmtree(root, ignore_errors=True)  # a cache of an earlier reader: made again
        make_private_dirs(root / "projects")
        self.seen: dict[tuple[str, str], int] = {}  # (session, chain) -> the last record id mirrored
        self.low = 0  # every record with an id at or below it has been read
        self.read_to = 0  # the highest record id read (a lower one may still commit)
        self.marks: list[tuple[float, int, int]] = []  # earlier syncs' (time, xmax, highest id), oldest first

    def sync(self) -> int:
        """Append the records written since the last call; how many there were."""
        db = self.stores.db()
        now = time.monotonic()
        xmin, xmax, top = db.execute(_MARK).fetchone()
        added = self._late(db) if self.read_to > self.low else 0
        while True:
            rows = db.execute(_ABOVE, (self.read_to, BATCH)).fetchall()
            added += self._append(rows)
            if rows:
                self.read_to = rows[-1][0]
            if len(rows) < BATCH:
                break
        self.marks.append((now, int(xmax), int(top)))
        self._raise_low(int(xmin))
        self.read_to = max(self.read_to, self.low)
        return added

    def _late(self, db: Any) -> int:
        """Records between the low-water mark and the highest id read that no transcript has yet:
        committed after a sync read past their ids. Their ids are read first, lines only for those."""
        ids = db.execute(_IDS, (self.low, self.read_to)).fetchall()
        missing = [i for i, session_id, chain in ids if i > self.seen.get((session_id, chain), 0)]
        return self._append(db.execute(_THESE, (missing,)).fetchall()) if missing else 0

    def _raise_low(self, xmin: int) -> None:
        """Move the low-water mark to the highest id of the latest sync j such that a snapshot
        taken at least SETTLE_S after j saw no transaction that is still running now: then every
        insert that took an id at or below j's highest had its transaction id by that snapshot,
        and has ended; what it wrote, this sync read."""
        marks = self.marks
        for k in range(len(marks) - 1, 0, -1):
            at, xmax, _ = marks[k]
            if xmax > xmin:
                continue
            j = next((j for j in range(k - 1, -1, -1) if at - marks[j][0] >= SETTLE_S), None)
            if j is not None:
                self.low = max(self.low, marks[j][2])
                del marks[:j + 1]
                break
        del marks[:-MAX_MARKS]  # dropping a mark only keeps the low-water mark lower: safe

    def _append(self, rows: list[tuple[Any, ...]]) -> int:
        """Each transcript's new records (`rows` in id order) appended to its file, one write a file."""
        files: dict[tuple[str, str], tuple[str, list[bytes]]] = {}
        last: dict[tuple[str, str], int] = {}
        for record_id, session_id, chain, project, line in rows:
            key = (session_id, chain)
            if record_id <= self.seen.get(key, 0):
                continue  # mirrored already
            if project is None or not _safe(session_id, chain, project):
                continue  # no session row yet (`reconcile` finds it), or a name no writer of ours makes
            files.setdefault(key, (project, []))[1].append(bytes(line))
            last[key] = record_id
        for (session_id, chain), (project, lines) in files.items():
            self._write(project, session_id, chain, lines)
            self.seen[(session_id, chain)] = last[(session_id, chain)]
        return sum(len(lines) for _, lines in files.values())

    def reconcile(self) -> int:
        """Compare every transcript's last record id with the mirror's and append what any lacks
        (what `sync` could miss: a subagent's record written before its session's first); how
        many records that added. It reads every record's id: slower than `sync`, run it seldom."""
        db, added = self.stores.db(), 0
        for session_id, chain, top, project in db.execute(_TOPS).fetchall():
            have = self.seen.get((session_id, chain), 0)
            if top <= have or not _safe(session_id, chain, project):
                continue
            rows = db.execute(_NEWER, (session_id, chain, have)).fetchall()
            if rows:
                self._write(project, session_id, chain, [bytes(line) for _, line in rows])
                self.seen[(session_id, chain)] = rows[-1][0]
                added += len(rows)
        return added

    def _write(self, project: str, session_id: str, chain: str, lines: list[bytes]) -> None:
        path = self.path(project, session_id, chain)
        make_private_dirs(path.parent)
        fd = open_private(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT)
        try:
            data = memoryview(b"".join(line + b"\n" for line in lines))
            while data:
                data = data[os.write(fd, data):]
        finally:
            os.close(fd)

    def path(self, project: str, session_id: str, chain: str = "") -> Path:
        folder = self.root / "projects" / project
        return folder / f"{session_id}.jsonl" if not chain else folder / session_id / "subagents" / f"agent-{chain}.jsonl"


def _safe(session_id: str, chain: str, project: str) -> bool:
    """Names that make a path inside the mirror, as our writers make them."""
    return bool(_SAFE_ID.fullmatch(session_id) and (not chain or _SAFE_ID.fullmatch(chain))
                and _PROJECT.fullmatch(project))
