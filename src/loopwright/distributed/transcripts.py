"""Where a session's transcript stood when a workflow first began, and how to cut it back there:
a recovered workflow replays its recorded steps from the top and writes the same records again,
so what an earlier execution wrote after that mark is removed first. A JSONL transcript is cut at
a byte offset; a PostgreSQL one loses the records added after the mark's record id. Only the
session's own transcript is cut: a subagent's (its sidechain) belongs to an Agent call whose step
a replay answers from its record, without writing it again."""

from __future__ import annotations

import os
from typing import Any


def mark(stores: Any, session_id: str) -> int:
    """The transcript's size (files) or its last record id (PostgreSQL); 0 when it has none."""
    if stores.files:
        try:
            return os.path.getsize(stores.sessions.location(session_id))
        except OSError:
            return 0
    row = stores.row("SELECT coalesce(max(id), 0) FROM loopwright.records WHERE session_id = %s", (session_id,))
    return int(row[0])


def cut_back(stores: Any, session_id: str, at: int) -> None:
    """Remove what was written after `at` (the whole session when `at` is 0)."""
    if stores.files:
        path = stores.sessions.location(session_id)
        try:
            if at == 0:
                os.unlink(path)
            elif os.path.getsize(path) > at:
                os.truncate(path, at)
        except FileNotFoundError:
            pass
        return

    def cut(db: Any) -> None:  # (run again whole if the connection drops: deleting twice is deleting once)
        with db.transaction():
            db.execute("DELETE FROM loopwright.records WHERE session_id = %s AND chain = '' AND id > %s",
                       (session_id, at))
            if at == 0:
                db.execute("DELETE FROM loopwright.sessions WHERE id = %s", (session_id,))

    stores.run(cut)
