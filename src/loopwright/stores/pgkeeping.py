"""What a PostgreSQL store keeps besides a session's transcript (`core.keeping`): its file
checkpoints (`checkpoints`, and `checkpoint_files` with each file's bytes as they were, its path
as the file system's bytes) and its workflow journal (`workflow_journal`, one JSON record a row;
a finished run's rows are set aside under a number, the current run's under 0). Every write is
one autocommitted statement on the process's shared connection, so it outlives the process; one
cut off by a dropped connection is tried again, looking first for what it may have left
(`pgreconnect`)."""

from __future__ import annotations

import io
import json
import os
from contextlib import contextmanager
from typing import IO, Any, Iterator

from ..core.keeping import Entry, KeptFile, Opened


def _refused(stores: Any, exc: BaseException) -> OSError:
    """A failed write, as a full disk would be said (the callers' OSError)."""
    said = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
    return OSError(f"the store {stores.url} refused the write: {said}")


def _write(stores: Any, work: Any, landed: Any) -> Any:
    """`work` on the shared connection, tried again after a drop unless `landed` finds it committed."""
    import psycopg

    try:
        return stores.run(work, landed)
    except psycopg.Error as exc:
        raise _refused(stores, exc) from None


class PgCheckpoints:
    def __init__(self, stores: Any, session_id: str) -> None:
        self.stores, self.session_id = stores, session_id

    def opened(self, entry: Opened) -> None:
        key = (self.session_id, entry.number)
        _write(self.stores, lambda db: db.execute(
            "INSERT INTO loopwright.checkpoints (session_id, number, prompt_id, at) VALUES (%s, %s, %s, %s)",
            (*key, entry.prompt_id, entry.time)),
            # the checkpoint's row, if the cut-off insert committed (one writer numbers them)
            lambda db: db.execute("SELECT 1 FROM loopwright.checkpoints WHERE session_id = %s AND number = %s AND "
                                  "prompt_id = %s", (*key, entry.prompt_id)).fetchone())

    def keep(self, entry: KeptFile, content: IO[bytes] | None) -> KeptFile:
        data = content.read() if content is not None and not entry.skipped else None
        key = (self.session_id, entry.number, os.fsencode(entry.path))
        row = _write(self.stores, lambda db: db.execute(
            "INSERT INTO loopwright.checkpoint_files (session_id, number, path, content, mode, skipped) "
            "VALUES (%s, %s, %s, %s, %s, %s) ON CONFLICT (session_id, number, path) DO NOTHING RETURNING id",
            (*key, data, entry.mode, entry.skipped)).fetchone() or (None,),
            # a cut-off insert that committed: its row (one writer keeps a path once a checkpoint)
            lambda db: db.execute("SELECT id FROM loopwright.checkpoint_files WHERE session_id = %s AND number = %s "
                                  "AND path = %s", key).fetchone())
        row = None if row[0] is None else row
        # a path kept twice for one checkpoint (never by one writer): the first copy stays, as a rewind reads it
        blob = str(row[0]) if row is not None and data is not None else None
        return KeptFile(entry.number, entry.path, blob, entry.mode, entry.skipped)

    def entries(self) -> list[Entry]:
        opened = self.stores.rows("SELECT number, prompt_id, at FROM loopwright.checkpoints WHERE session_id = %s",
                                  (self.session_id,))
        files = self.stores.rows("SELECT id, number, path, content IS NOT NULL, mode, skipped FROM "
                                 "loopwright.checkpoint_files WHERE session_id = %s ORDER BY id", (self.session_id,))
        ordered: list[tuple[tuple[int, int, int], Entry]] = [
            ((n, 0, 0), Opened(n, prompt_id, at)) for n, prompt_id, at in opened]
        ordered += [((n, 1, i), KeptFile(n, os.fsdecode(bytes(path)), str(i) if kept else None, mode, skipped))
                    for i, n, path, kept, mode, skipped in files]
        return [e for _, e in sorted(ordered, key=lambda pair: pair[0])]  # as written: a checkpoint, then its files

    @contextmanager
    def read(self, entry: KeptFile) -> Iterator[IO[bytes]]:
        row = self.stores.row("SELECT content FROM loopwright.checkpoint_files WHERE id = %s AND session_id = %s",
                              (int(str(entry.blob)), self.session_id))
        if row is None or row[0] is None:
            raise FileNotFoundError(f"{self.stores.url}: session {self.session_id} has no kept copy of {entry.path}")
        yield io.BytesIO(bytes(row[0]))


class PgJournal:
    def __init__(self, stores: Any, session_id: str) -> None:
        self.stores, self.session_id = stores, session_id

    @property
    def location(self) -> str:
        return f"{self.stores.url}#session={self.session_id}&journal"

    def read(self) -> tuple[list[dict[str, Any]], int]:
        rows = self.stores.rows("SELECT record FROM loopwright.workflow_journal WHERE session_id = %s "
                                "AND set_aside = 0 ORDER BY id", (self.session_id,))
        records, damaged = [], 0
        for (text,) in rows:
            try:
                record = json.loads(text)
            except ValueError:
                record = None
            if isinstance(record, dict):
                records.append(record)
            else:
                damaged += 1
        return records, damaged

    def append(self, record: dict[str, Any]) -> None:
        text = json.dumps(record, default=repr)  # ASCII: a lone surrogate is kept as its escape

        def landed(db: Any) -> bool | None:
            """The cut-off insert committed: its record is the run's last (a run never writes one
            record twice in a row: a step's key, its header and its end are each written once)."""
            row = db.execute("SELECT record FROM loopwright.workflow_journal WHERE session_id = %s AND set_aside = 0 "
                             "ORDER BY id DESC LIMIT 1", (self.session_id,)).fetchone()
            return True if row is not None and row[0] == text else None

        _write(self.stores, lambda db: db.execute(
            "INSERT INTO loopwright.workflow_journal (session_id, record) VALUES (%s, %s)", (self.session_id, text)),
            landed)

    def set_aside(self) -> None:  # (run again after a drop: a second pass finds nothing left at 0)
        self.stores.run(lambda db: db.execute(
            "UPDATE loopwright.workflow_journal SET set_aside = (SELECT coalesce(max(set_aside), 0) + 1 FROM "
            "loopwright.workflow_journal WHERE session_id = %s) WHERE session_id = %s AND set_aside = 0",
            (self.session_id, self.session_id)))
