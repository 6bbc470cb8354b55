"""What the embedded store keeps beside a session's JSONL transcript, in `<session-id>/` next to
`<session-id>.jsonl`: the file checkpoints (`checkpoints/index.jsonl` and the kept copies in
`checkpoints/blobs/`) and the workflow journal (`workflow.jsonl`, finished runs set aside as
`workflow-N.jsonl`). Lines are appended with one write each; a line cut off by a crash is skipped
on reading."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import IO, Any, Iterator
from contextlib import contextmanager

from ..core.keeping import Entry, KeptFile, Opened


def folder_of(transcript_path: str) -> Path:
    """`<session-id>/checkpoints/` beside the session's `<session-id>.jsonl`."""
    return Path(transcript_path).with_suffix("") / "checkpoints"


def journal_of(transcript_path: str) -> Path:
    return Path(transcript_path).with_suffix("") / "workflow.jsonl"


def _append_line(path: Path, line: bytes) -> None:
    """The whole line, or nothing: a full disk that took part of it has that part cut off again
    (a write that stops short is finished, and one that fails is undone)."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    try:
        start, data = os.fstat(fd).st_size, memoryview(line)
        try:
            while data:
                data = data[os.write(fd, data):]
        except OSError:
            try:
                os.ftruncate(fd, start)
            except OSError:
                pass  # (the reader skips a torn line, and the next append starts a new one: _lines)
            raise
    finally:
        os.close(fd)


class FileCheckpoints:
    def __init__(self, folder: Path) -> None:
        self.folder = Path(folder)
        self.index = self.folder / "index.jsonl"

    def opened(self, entry: Opened) -> None:
        self._append({"type": "checkpoint", "number": entry.number, "prompt_id": entry.prompt_id, "time": entry.time})

    def keep(self, entry: KeptFile, content: IO[bytes] | None) -> KeptFile:
        line: dict[str, object] = {"type": "file", "number": entry.number, "path": entry.path, "blob": None}
        if entry.skipped:
            line["skipped"] = entry.skipped
        elif content is not None:
            line["blob"], line["mode"] = self._copy(entry, content), entry.mode
        self._append(line)
        return KeptFile(entry.number, entry.path, line["blob"], entry.mode, entry.skipped)  # type: ignore[arg-type]

    def _copy(self, entry: KeptFile, content: IO[bytes]) -> str:
        digest = hashlib.sha256(entry.path.encode("utf-8", "surrogateescape")).hexdigest()[:16]
        name = f"{entry.number}-{digest}"
        blobs = self.folder / "blobs"
        blobs.mkdir(parents=True, exist_ok=True, mode=0o700)
        with open(blobs / name, "wb") as dst:
            os.fchmod(dst.fileno(), 0o600)
            while chunk := content.read(1 << 20):
                dst.write(chunk)
        return name

    def _append(self, entry: dict[str, object]) -> None:
        self.folder.mkdir(parents=True, exist_ok=True, mode=0o700)
        _append_line(self.index, (json.dumps(entry) + "\n").encode())

    def entries(self) -> list[Entry]:
        out: list[Entry] = []
        for e in _lines(self.index)[0]:
            try:
                if e.get("type") == "checkpoint":
                    out.append(Opened(int(e["number"]), str(e["prompt_id"]), float(e["time"])))
                elif e.get("type") == "file":
                    blob = e.get("blob")
                    out.append(KeptFile(int(e["number"]), str(e["path"]), None if blob is None else str(blob),
                                        int(e.get("mode") or 0o644), str(e.get("skipped") or "")))
            except (KeyError, TypeError, ValueError):
                continue  # not a line this store writes: skipped, as a torn one is
        return out

    @contextmanager
    def read(self, entry: KeptFile) -> Iterator[IO[bytes]]:
        with open(self.folder / "blobs" / str(entry.blob), "rb") as f:
            yield f


class FileJournal:
    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self._cut: bool | None = None  # the file ends inside a line (None: not looked yet)

    @property
    def location(self) -> str:
        return str(self.path)

    def read(self) -> tuple[list[dict[str, Any]], int]:
        records, torn, self._cut = _lines(self.path)
        return records, torn

    def append(self, record: dict[str, Any]) -> None:
        if self._cut is None:
            self.read()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        line = ("\n" if self._cut else "") + json.dumps(record, ensure_ascii=False, default=repr) + "\n"
        self._cut = False  # the next record starts on a line of its own
        _append_line(self.path, line.encode("utf-8"))

    def set_aside(self) -> None:
        if self.path.is_file():
            n = 1
            while (kept := self.path.with_name(f"{self.path.stem}-{n}.jsonl")).exists():
                n += 1
            self.path.rename(kept)
        self._cut = False


def _lines(path: Path) -> tuple[list[dict[str, Any]], int, bool]:
    """The JSON objects of a JSONL file, how many lines were not one, and whether it ends inside a line."""
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except FileNotFoundError:
        return [], 0, False
    out, torn = [], 0
    for line in text.splitlines():
        try:
            record = json.loads(line)
        except ValueError:
            torn += 1
            continue
        if isinstance(record, dict):
            out.append(record)
        else:
            torn += 1
    return out, torn, bool(text) and not text.endswith("\n")
