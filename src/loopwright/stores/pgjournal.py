"""A workflow's journal kept among its session's records in PostgreSQL: the records of the
chain `workflow` (a finished workflow's are kept aside as `workflow-N`), so any process that
carries the session on, on any machine, reads the same journal. `loopwright session export ID
--agent workflow` shows it."""

from __future__ import annotations

import json
from typing import Any

CHAIN = "workflow"


class PgJournalLines:
    """`workflows.journal.Lines` on a `PgSessionStore`; appends wait for the disk (a step that
    finished must be found again after a crash)."""

    def __init__(self, sessions: Any, session_id: str, log: Any) -> None:
        """`log`: the append handle of the chain (`PgLog`)."""
        self.sessions, self.session_id, self._log = sessions, session_id, log
        self.location = sessions.location(session_id, CHAIN)

    def read(self) -> str:
        lines = self.sessions.lines(self.session_id, CHAIN) or []
        return "".join(line.decode("utf-8", errors="replace") + "\n" for line in lines)

    def append(self, record: dict[str, Any]) -> None:
        self._log.append(json.loads(json.dumps(record, ensure_ascii=False, default=repr)), sync=True)

    def set_aside(self) -> None:
        db = self.sessions.stores.db()
        with db.transaction():
            taken = {r[0] for r in db.execute("SELECT DISTINCT chain FROM loopwright.records WHERE session_id = %s "
                                              "AND chain LIKE %s", (self.session_id, CHAIN + "-%")).fetchall()}
            n = 1
            while f"{CHAIN}-{n}" in taken:
                n += 1
            db.execute("UPDATE loopwright.records SET chain = %s WHERE session_id = %s AND chain = %s",
                       (f"{CHAIN}-{n}", self.session_id, CHAIN))

    def close(self) -> None:
        self._log.close()
