"""A PostgreSQL store's sessions mirrored as JSONL files, for readers of transcript files (the web
view's list and pages, which tail files as they grow). The mirror is a cache: it is made afresh
for each reader, laid out as the JSONL store lays out a home (`projects/<project>/<id>.jsonl`, a
subagent's at `<id>/subagents/agent-<agent>.jsonl`), and `sync()` appends what was written since
the last call. A session has one writer at a time, so its records arrive in id order."""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path
from typing import Any

from ..core.home import make_private_dirs, open_private
from .jsonl import _SAFE_ID

_PROJECT = re.compile(r"[A-Za-z0-9-]+")  # jsonl.project_name's alphabet

_TOPS = ("SELECT r.session_id, r.chain, max(r.id), s.project FROM loopwright.records r "
         "JOIN loopwright.sessions s ON s.id = r.session_id GROUP BY r.session_id, r.chain, s.project")
_NEWER = "SELECT id, line FROM loopwright.records WHERE session_id = %s AND chain = %s AND id > %s ORDER BY id"


class Mirror:
    def __init__(self, stores: Any, root: Path) -> None:
        self.stores, self.root = stores, root
        shutil.rmtree(root, ignore_errors=True)  # a cache of an earlier reader: made again
        make_private_dirs(root / "projects")
        self.seen: dict[tuple[str, str], int] = {}  # (session, chain) -> the last record id mirrored

    def sync(self) -> int:
        """Append the records written since the last call; how many there were."""
        db, added = self.stores.db(), 0
        for session_id, chain, top, project in db.execute(_TOPS).fetchall():
            have = self.seen.get((session_id, chain), 0)
            if top <= have or not _SAFE_ID.fullmatch(session_id) or (chain and not _SAFE_ID.fullmatch(chain)) \
                    or not _PROJECT.fullmatch(project):
                continue  # a name no writer of ours makes: never a path outside the mirror
            rows = db.execute(_NEWER, (session_id, chain, have)).fetchall()
            if not rows:
                continue
            path = self.path(project, session_id, chain)
            make_private_dirs(path.parent)
            fd = open_private(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT)
            try:
                os.write(fd, b"".join(bytes(line) + b"\n" for _, line in rows))
            finally:
                os.close(fd)
            self.seen[(session_id, chain)] = rows[-1][0]
            added += len(rows)
        return added

    def path(self, project: str, session_id: str, chain: str = "") -> Path:
        folder = self.root / "projects" / project
        return folder / f"{session_id}.jsonl" if not chain else folder / session_id / "subagents" / f"agent-{chain}.jsonl"
