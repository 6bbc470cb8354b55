"""File checkpoints: before Write or Edit first changes a file after a user prompt, the file as
it was is kept (or the fact that it did not exist), so the code can be put back to how it was
before any prompt of the session. One checkpoint per prompt, named by the prompt's record id in
the transcript; kept beside the transcript (`<session-id>/checkpoints/`): an `index.jsonl` and
the saved copies. The file kept is the one the write lands on (symlinks followed, as the
permission gate judged it), so a rewind puts back what really changed. What shell commands
change is not tracked; files with more than one hard link (or over 64 MiB) are not kept, and a
rewind says so."""

from __future__ import annotations

import hashlib
import json
import os
import stat
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

MAX_FILE_BYTES = 64 * 1024 * 1024  # a larger file is noted as not saved


def folder_of(transcript_path: str) -> Path:
    """`<session-id>/checkpoints/` beside the session's `<session-id>.jsonl`."""
    path = Path(transcript_path)
    return path.with_suffix("") / "checkpoints"


@dataclass(frozen=True)
class Checkpoint:
    number: int
    prompt_id: str
    time: float
    files: tuple[str, ...]


class Checkpoints:
    def __init__(self, folder: Path, clock: Callable[[], float] = time.time) -> None:
        self.folder, self.clock = Path(folder), clock
        self.index = self.folder / "index.jsonl"
        self.number = len(self.list())  # checkpoints already made (a resumed session goes on counting)
        self._armed = False  # a prompt has begun; its checkpoint is written when its record exists
        self._open: str | None = None  # the prompt id of the running checkpoint
        self._saved: set[str] = set()

    # ------------------------------------------------------------ while the session runs

    def begin(self) -> None:
        """A user prompt is about to be recorded: the next `prompt(id)` opens its checkpoint."""
        self._armed, self._open, self._saved = True, None, set()

    def prompt(self, prompt_id: str) -> None:
        if not self._armed or not prompt_id:
            return
        self._armed = False
        self.number += 1
        self._open = prompt_id
        self._append({"type": "checkpoint", "number": self.number, "prompt_id": prompt_id, "time": self.clock()})

    def before_write(self, real: str) -> None:
        """Keep `real` as it is now, once per checkpoint (called by Write and Edit before they write)."""
        if self._open is None or real in self._saved:
            return
        self._saved.add(real)
        entry: dict[str, object] = {"type": "file", "number": self.number, "path": real, "blob": None}
        try:
            st = os.lstat(real)
        except FileNotFoundError:
            st = None  # created by this prompt: a rewind removes it
        if st is not None:
            why = _unsaved(st)
            if why:
                entry["skipped"] = why
            else:
                entry["blob"], entry["mode"] = self._keep(real), stat.S_IMODE(st.st_mode)
        self._append(entry)

    def _keep(self, real: str) -> str:
        name = f"{self.number}-{hashlib.sha256(real.encode('utf-8', 'surrogateescape')).hexdigest()[:16]}"
        blobs = self.folder / "blobs"
        blobs.mkdir(parents=True, exist_ok=True, mode=0o700)
        with open(real, "rb") as src, open(blobs / name, "wb") as dst:
            os.fchmod(dst.fileno(), 0o600)
            while chunk := src.read(1 << 20):
                dst.write(chunk)
        return name

    def _append(self, entry: dict[str, object]) -> None:
        self.folder.mkdir(parents=True, exist_ok=True, mode=0o700)
        fd = os.open(self.index, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        try:
            os.write(fd, (json.dumps(entry) + "\n").encode())
        finally:
            os.close(fd)

    # ------------------------------------------------------------ looking back

    def _entries(self) -> list[dict[str, object]]:
        try:
            lines = self.index.read_text().splitlines()
        except FileNotFoundError:
            return []
        out = []
        for line in lines:
            try:
                out.append(json.loads(line))
            except ValueError:
                continue  # a line cut by a crash: the rest still counts
        return out

    def list(self) -> list[Checkpoint]:
        entries = self._entries()
        files: dict[int, list[str]] = {}
        for e in entries:
            if e.get("type") == "file":
                files.setdefault(int(e["number"]), []).append(str(e["path"]))  # type: ignore[call-overload]
        return [Checkpoint(int(e["number"]), str(e["prompt_id"]), float(e["time"]),  # type: ignore[arg-type]
                           tuple(files.get(int(e["number"]), ())))  # type: ignore[call-overload]
                for e in entries if e.get("type") == "checkpoint"]

    def find(self, target: str) -> Checkpoint | None:
        """A checkpoint by its number (`3`) or its prompt's id."""
        for c in self.list():
            if target == c.prompt_id or (target.isdigit() and int(target) == c.number):
                return c
        return None

    def rewind(self, target: Checkpoint, dry_run: bool = False) -> list[str]:
        """Every file the prompts from `target` on changed, put back as it was before `target`'s
        prompt; one line per file said."""
        first: dict[str, dict[str, object]] = {}
        for e in self._entries():
            if e.get("type") == "file" and int(e["number"]) >= target.number:  # type: ignore[call-overload]
                first.setdefault(str(e["path"]), e)
        said = []
        for path, e in sorted(first.items()):
            if e.get("skipped"):
                said.append(f"not restored: {path} ({e['skipped']})")
            elif e.get("blob") is None:
                if os.path.lexists(path):
                    said.append(f"removed: {path} (created after that prompt)")
                    if not dry_run:
                        os.unlink(path)
            else:
                said.append(f"restored: {path}")
                if not dry_run:
                    _put_back(self.folder / "blobs" / str(e["blob"]), path, int(e.get("mode") or 0o644))  # type: ignore[call-overload]
        return said


def _unsaved(st: os.stat_result) -> str:
    if stat.S_ISLNK(st.st_mode):
        return "a symbolic link"
    if not stat.S_ISREG(st.st_mode):
        return "not a regular file"
    if st.st_nlink > 1:
        return "a file with more than one hard link"
    if st.st_size > MAX_FILE_BYTES:
        return f"larger than {MAX_FILE_BYTES // (1024 * 1024)} MiB"
    return ""


def _put_back(blob: Path, path: str, mode: int) -> None:
    """Atomically, beside the file; never through a symlink that appeared since."""
    if os.path.islink(path):
        os.unlink(path)
    folder = os.path.dirname(path)
    os.makedirs(folder, exist_ok=True)
    tmp = os.path.join(folder, f".{os.path.basename(path)}.{os.getpid()}.rewind")
    with open(blob, "rb") as src, open(tmp, "wb") as dst:
        os.fchmod(dst.fileno(), mode)
        while chunk := src.read(1 << 20):
            dst.write(chunk)
    os.replace(tmp, path)
