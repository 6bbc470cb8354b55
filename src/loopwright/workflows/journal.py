"""A workflow's journal: one JSON line per finished step (an agent's answer, a clock reading, a
random number), keyed by where the step sits in the script's call order and a hash of its
inputs, written where the session's transcript is as each step ends (a JSONL file beside it, or
among its records in a database store: `Lines`). A resumed run reads it back
and replays those steps instead of running them again; a step whose inputs differ from the
record is the script being non-deterministic, and the run stops with that said."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any, Protocol

from ..core.errors import LoopwrightError


class NotDeterministic(LoopwrightError):
    """Replay met a step whose inputs differ from the record."""


def input_hash(kind: str, inputs: dict[str, Any]) -> str:
    text = json.dumps({"kind": kind, **inputs}, sort_keys=True, ensure_ascii=False, default=repr)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:32]


class Lines(Protocol):
    """Where a journal's records are kept."""

    location: str

    def read(self) -> str:
        """The records written so far, as JSONL text ("" when there are none)."""

    def append(self, record: dict[str, Any]) -> None: ...

    def set_aside(self) -> None:
        """Keep the records under another name; the journal starts empty."""


class FileLines:
    """A journal's JSONL file (`workflow.jsonl` beside the transcript)."""

    def __init__(self, path: Path) -> None:
        self.path, self.location = path, str(path)
        self._cut = False  # the file ends inside a line: the next record starts on a new one

    def read(self) -> str:
        if not self.path.is_file():
            return ""
        text = self.path.read_text(encoding="utf-8", errors="replace")
        self._cut = bool(text) and not text.endswith("\n")
        return text

    def append(self, record: dict[str, Any]) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        line = ("\n" if self._cut else "") + json.dumps(record, ensure_ascii=False, default=repr) + "\n"
        self._cut = False
        fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        try:
            os.write(fd, line.encode("utf-8"))
        finally:
            os.close(fd)

    def set_aside(self) -> None:
        """Keep a finished workflow's journal as `workflow-N.jsonl`."""
        if self.path.is_file():
            n = 1
            while (kept := self.path.with_name(f"{self.path.stem}-{n}.jsonl")).exists():
                n += 1
            self.path.rename(kept)
        self._cut = False


class Journal:
    """`path`: the JSONL file (None: kept in memory only, for a session that is not recorded);
    `lines`: where the records are kept instead of a file (a database store's session)."""

    def __init__(self, path: Path | None, lines: Lines | None = None) -> None:
        self.path = path
        self.lines = lines if lines is not None else FileLines(path) if path is not None else None
        self.location = self.lines.location if self.lines is not None else None
        self.header: dict[str, Any] | None = None
        self.steps: dict[str, dict[str, Any]] = {}
        self.finished: dict[str, Any] | None = None
        self.torn = 0  # lines that were not whole JSON (a crash mid-write): skipped
        if self.lines is not None:
            self._read(self.lines.read())

    def _read(self, text: str) -> None:
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
        """Keep a finished workflow's journal aside (`workflow-N`) and start an empty one."""
        if self.lines is not None:
            self.lines.set_aside()
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

    def close(self) -> None:
        close = getattr(self.lines, "close", None)
        if close is not None:
            close()

    def _write(self, record: dict[str, Any]) -> None:
        if self.lines is not None:
            self.lines.append(record)
