"""A workflow's journal: one record per finished step (an agent's answer, a clock reading, a
random number), keyed by where the step sits in the script's call order and a hash of its
inputs, written to the session's store as each step ends (`core.keeping.JournalStore`). A
resumed run reads it back and replays those steps instead of running them again; a step whose
inputs differ from the record is the script being non-deterministic, and the run stops with
that said."""

from __future__ import annotations

import hashlib
import json
from typing import Any

from ..core.errors import LoopwrightError
from ..core.keeping import JournalStore


class NotDeterministic(LoopwrightError):
    """Replay met a step whose inputs differ from the record."""


def input_hash(kind: str, inputs: dict[str, Any]) -> str:
    text = json.dumps({"kind": kind, **inputs}, sort_keys=True, ensure_ascii=False, default=repr)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:32]


class Journal:
    """`store`: where the session keeps it (None: in memory only, for a session that is not recorded)."""

    def __init__(self, store: JournalStore | None) -> None:
        self.store = store
        self.header: dict[str, Any] | None = None
        self.steps: dict[str, dict[str, Any]] = {}
        self.finished: dict[str, Any] | None = None
        self.torn = 0  # records cut off by a crash mid-write: skipped
        if store is not None:
            self._read(store)

    @property
    def location(self) -> str | None:
        return self.store.location if self.store is not None else None

    def _read(self, store: JournalStore) -> None:
        records, self.torn = store.read()
        for record in records:
            if record.get("type") == "workflow":
                self.header = record
            elif record.get("type") == "step" and isinstance(record.get("key"), str):
                self.steps[record["key"]] = record
            elif record.get("type") == "finished":
                self.finished = record

    def set_aside(self) -> None:
        """Keep a finished workflow's journal aside and start an empty one."""
        if self.store is not None:
            self.store.set_aside()
        self.header, self.steps, self.finished = None, {}, None

    def start(self, name: str, args: list[str], file: str) -> None:
        if self.header is None:
            self.header = {"type": "workflow", "name": name, "args": args, "file": file}
            self._write(self.header)

    def replay(self, key: str, kind: str, digest: str, shown: str) -> dict[str, Any] | None:
        """The record of step `key`, if it finished before; an error if it was another step."""
        record = self.steps.get(key)
        if record is None:
            return None
        if record.get("kind") != kind or record.get("hash") != digest:
            raise NotDeterministic(
                f"the workflow is not deterministic between steps: step {key} was recorded as "
                f"{record.get('shown', record.get('kind'))} and is now {shown}; a workflow must make the same calls "
                "with the same inputs on every run (read the clock and random numbers through wf.now() and "
                "wf.random()), or start it afresh without --resume")
        return record

    def record(self, key: str, kind: str, digest: str, shown: str, **fields: Any) -> None:
        record = {"type": "step", "key": key, "kind": kind, "hash": digest, "shown": shown, **fields}
        self.steps[key] = record
        self._write(record)

    def finish(self, subtype: str, result: str) -> None:
        self.finished = {"type": "finished", "subtype": subtype, "result": result[:2000]}
        self._write(self.finished)

    def _write(self, record: dict[str, Any]) -> None:
        if self.store is not None:
            self.store.append(record)
