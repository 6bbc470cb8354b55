"""A workflow's journal: one JSON line per finished step (an agent's answer, a clock reading, a
random number), keyed by where the step sits in the script's call order and a hash of its
inputs, written beside the session's transcript as each step ends. A resumed run reads it back
and replays those steps instead of running them again; a step whose inputs differ from the
record is the script being non-deterministic, and the run stops with that said."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

from ..core.errors import LoopwrightError


class NotDeterministic(LoopwrightError):
    """Replay met a step whose inputs differ from the record."""


def input_hash(kind: str, inputs: dict[str, Any]) -> str:
    text = json.dumps({"kind": kind, **inputs}, sort_keys=True, ensure_ascii=False, default=repr)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:32]


class Journal:
    """`path`: the JSONL file (None: kept in memory only, for a session that is not recorded)."""

    def __init__(self, path: Path | None) -> None:
        self.path = path
        self.header: dict[str, Any] | None = None
        self.steps: dict[str, dict[str, Any]] = {}
        self.finished: dict[str, Any] | None = None
        self.torn = 0  # lines that were not whole JSON (a crash mid-write): skipped
        self._cut = False  # the file ends inside a line: the next record starts on a new one
        if path is not None and path.is_file():
            self._read(path)

    def _read(self, path: Path) -> None:
        text = path.read_text(encoding="utf-8", errors="replace")
        self._cut = bool(text) and not text.endswith("\n")
        for line in text.splitlines():
            try:
                record = json.loads(line)
            except ValueError:
                self.torn += 1
                continue
            if not isinstance(record, dict):
                self.torn += 1
            elif record.get("type") == "workflow":
                self.header = record
            elif record.get("type") == "step" and isinstance(record.get("key"), str):
                self.steps[record["key"]] = record
            elif record.get("type") == "finished":
                self.finished = record

    def set_aside(self) -> None:
        """Keep a finished workflow's journal as `workflow-N.jsonl` and start an empty one."""
        if self.path is not None and self.path.is_file():
            n = 1
            while (kept := self.path.with_name(f"{self.path.stem}-{n}.jsonl")).exists():
                n += 1
            self.path.rename(kept)
        self.header, self.steps, self.finished, self._cut = None, {}, None, False

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
        if self.path is None:
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        line = ("\n" if self._cut else "") + json.dumps(record, ensure_ascii=False, default=repr) + "\n"
        self._cut = False
        fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        try:
            os.write(fd, line.encode("utf-8"))
        finally:
            os.close(fd)
