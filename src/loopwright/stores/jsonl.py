"""The JSONL session store: one append-only file per session at
`<root>/projects/<cwd, non-alphanumerics as '-'>/<session-id>.jsonl`, one compact JSON record a line."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

from ..core import jsonsafe
from typing import Any, Mapping

from ..core.home import DEFAULT_HOME, home, make_private_dirs, open_private, tighten_home

try:
    import fcntl
except ImportError:  # not POSIX: no advisory lock, the rest works
    fcntl = None  # type: ignore[assignment]

__all__ = ["DEFAULT_HOME", "JsonlLog", "JsonlStore", "home", "project_name", "read_records"]

MAX_PROJECT_NAME = 200
# A record wraps what it holds in a few levels of its own (record, message, content, block), so
# a tool input at the decoding bound still reads back; a line far deeper is damage, not a crash.
RECORD_DEPTH = jsonsafe.MAX_DEPTH + 16
_SAFE_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")


def project_name(cwd: str | Path) -> str:
    """The absolute cwd with every non-alphanumeric character as '-' (Claude Code's rule); long
    names are cut and a hash of the full path keeps them apart."""
    full = str(Path(cwd).resolve())
    name = re.sub(r"[^A-Za-z0-9]", "-", full)
    if len(name) <= MAX_PROJECT_NAME:
        return name
    import hashlib

    digest = hashlib.sha256(full.encode()).hexdigest()[:16]
    return f"{name[:MAX_PROJECT_NAME]}-{digest}"


def encode(record: Mapping[str, Any]) -> bytes:
    # Compact separators: hook scripts find records with `grep '"role":"assistant"'`.
    # A lone surrogate (a model's `\ud800`, an undecodable file name) becomes its JSON escape: the
    # line stays valid UTF-8 and reads back as the same text.
    text = json.dumps(record, ensure_ascii=False, separators=(",", ":"))
    return text.encode("utf-8", "backslashreplace") + b"\n"


class JsonlStore:
    """Sessions of one project (`cwd`) under `root`; `-r ID` also finds other projects' sessions."""

    def __init__(self, root: str | Path, cwd: str | Path) -> None:
        self.root = Path(root)
        self.project = self.root / "projects" / project_name(cwd)
        tighten_home(self.root)  # a home an older version left open to others: closed once

    @classmethod
    def default(cls, cwd: str | Path, env: Mapping[str, str] | None = None) -> "JsonlStore":
        return cls(home(env), cwd)

    def find(self, session_id: str) -> Path | None:
        """This project's file for the id, else another project's, else None."""
        if not _SAFE_ID.fullmatch(session_id):
            return None  # never a path: an id is only ever a file name
        mine = self.project / f"{session_id}.jsonl"
        if mine.is_file():
            return mine
        return next(iter(sorted((self.root / "projects").glob(f"*/{session_id}.jsonl"))), None)

    def location(self, session_id: str) -> str:
        return str(self.find(session_id) or self.project / f"{session_id}.jsonl")

    def exists(self, session_id: str) -> bool:
        return self.find(session_id) is not None

    def latest(self) -> str | None:
        """The session of this project written to last."""
        files = [(p.stat().st_mtime_ns, p.name, p) for p in self.project.glob("*.jsonl") if p.is_file()]
        return max(files)[2].stem if files else None

    def load(self, session_id: str) -> tuple[list[dict[str, Any]], list[str]] | None:
        path = self.find(session_id)
        return None if path is None else read_records(path)

    def export(self, session_id: str, agent_id: str | None = None) -> bytes | None:
        """The session's transcript as it is on disk (a subagent's sidechain with `agent_id`)."""
        path = self.find(session_id)
        if path is not None and agent_id is not None:
            path = JsonlLog(path).sidechain(agent_id).path
        return path.read_bytes() if path is not None and path.is_file() else None

    def agents(self, session_id: str) -> list[str]:
        """The ids of the subagents whose sidechains the session holds."""
        path = self.find(session_id)
        folder = path.with_suffix("") / "subagents" if path is not None else None
        if folder is None or not folder.is_dir():
            return []
        return sorted(p.stem[len("agent-"):] for p in folder.glob("agent-*.jsonl"))

    def create(self, session_id: str) -> "JsonlLog":
        """The append handle of a new session of this project, without looking anywhere else
        (other projects are searched by `find`, one stat per project)."""
        return JsonlLog(self.project / f"{session_id}.jsonl")

    def open(self, session_id: str) -> "JsonlLog":
        """An existing file is locked now, so a second writer fails before its run starts (and
        before the caller reads it); a new one is created on its first append, so a run that
        records nothing leaves no file."""
        log = JsonlLog(Path(self.location(session_id)))
        if log.path.exists():
            log.acquire()
        return log


def read_records(path: Path) -> tuple[list[dict[str, Any]], list[str]]:
    """Every record of a file, and warnings. A last line without its newline is what a crash
    mid-write leaves: it is skipped with a warning unless it is a whole record. Any other line
    that is not a JSON object means the file was damaged otherwise: ValueError."""
    data = path.read_bytes()
    lines = data.split(b"\n")
    tail = lines.pop()  # b"" when the file ends with a newline
    records: list[dict[str, Any]] = []
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        record = _decode(line)
        if record is None:
            raise ValueError(f"{path}: line {number} is not a JSON record; the file was damaged")
        records.append(record)
    warnings: list[str] = []
    if tail.strip():
        record = _decode(tail)
        if record is not None:
            records.append(record)
        else:
            warnings.append(f"{path}: ignored the last line, cut off by a crash while it was written "
                            f"({len(tail)} bytes); everything before it is intact")
    return records, warnings


def _decode(line: bytes) -> dict[str, Any] | None:
    try:
        value = jsonsafe.loads(line, RECORD_DEPTH)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


class JsonlLog:
    """Append handle of one session file: created on first append (0600), locked against a second
    writer, a torn last line cut off first; each record is one write() to an O_APPEND fd."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._fd: int | None = None
        self._ready = False  # the tail was checked: appends cannot glue onto a torn line

    @property
    def location(self) -> str:
        return str(self.path)

    def append(self, record: dict[str, Any], *, sync: bool = False) -> None:
        fd = self.acquire()
        if not self._ready:
            _repair_tail(fd, self.path)
            self._ready = True
        data = memoryview(encode(record))
        start = os.fstat(fd).st_size  # (the only writer: the lock is held)
        try:
            while data:
                written = os.write(fd, data)
                data = data[written:]
        except OSError:
            # a full disk (ENOSPC, EDQUOT) can take part of a line: cut it off, so the file ends
            # with whole records and the next append (after space is freed) starts a line of its own
            try:
                os.ftruncate(fd, start)
            except OSError:
                self._ready = False  # cut when the file is next appended to (_repair_tail)
            raise
        if sync:
            os.fsync(fd)

    def sync(self) -> None:
        """fsync what was appended so far (a Recorder with deferred sync calls it)."""
        if self._fd is not None:
            os.fsync(self._fd)

    def sidechain(self, agent_id: str) -> "JsonlLog":
        """A subagent's transcript, beside this one as Claude Code keeps it:
        `<session-id>/subagents/agent-<agent_id>.jsonl`."""
        if not _SAFE_ID.fullmatch(agent_id):
            raise ValueError(f"agent id: expected letters, digits, '.', '_' or '-', got {agent_id!r}")
        return JsonlLog(self.path.with_suffix("") / "subagents" / f"agent-{agent_id}.jsonl")

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)  # also releases the lock
            self._fd = None
            self._ready = False

    def acquire(self) -> int:
        """Open the file for appending and take the single-writer lock (once)."""
        if self._fd is not None:
            return self._fd
        make_private_dirs(self.path.parent)
        created = not self.path.exists()
        fd = open_private(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND)
        try:
            _lock(fd, self.path)
        except BaseException:
            os.close(fd)
            raise
        if created:
            _sync_dir(self.path.parent)  # the new file's name must survive a power cut too
        self._fd = fd
        return fd


def _lock(fd: int, path: Path) -> None:
    if fcntl is None:
        return
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        raise BlockingIOError(f"{path} is being written by another loopwright process") from None


def _repair_tail(fd: int, path: Path) -> None:
    """Appending after a torn line would glue the next record onto it: cut the torn bytes (a
    record never completed), or end a whole last record with its missing newline."""
    size = os.fstat(fd).st_size
    if size == 0:
        return
    with open(path, "rb") as f:
        f.seek(max(0, size - 65536))
        chunk = f.read()
        if chunk.endswith(b"\n"):
            return
        if b"\n" not in chunk and size > len(chunk):  # a last line over 64 KiB: find its start
            f.seek(0)
            chunk = f.read()
    start = size - len(chunk) + chunk.rfind(b"\n") + 1
    if _decode(chunk[chunk.rfind(b"\n") + 1:]) is not None:
        os.write(fd, b"\n")
    else:
        os.ftruncate(fd, start)


def _sync_dir(directory: Path) -> None:
    try:
        dfd = os.open(directory, os.O_RDONLY)
    except OSError:
        return  # not every platform can open a directory; the file itself is still synced
    try:
        os.fsync(dfd)
    finally:
        os.close(dfd)
