"""File checkpoints: before Write or Edit first changes a file after a user prompt, the file as
it was is kept (or the fact that it did not exist), so the code can be put back to how it was
before any prompt of the session. One checkpoint per prompt, named by the prompt's record id in
the transcript, kept in the session's store (`core.keeping.CheckpointStore`: files beside a
JSONL transcript, rows beside a PostgreSQL one). The file kept is the one the write lands on
(symlinks followed, as the permission gate judged it), so a rewind puts back what really
changed. What shell commands change is not tracked; files with more than one hard link (or over
64 MiB) are not kept, and a rewind says so."""

from __future__ import annotations

import builtins
import os
import stat
import time
from collections.abc import Callable
from dataclasses import dataclass

from ..core.keeping import CheckpointStore, KeptFile, Opened

MAX_FILE_BYTES = 64 * 1024 * 1024  # a larger file is noted as not saved


@dataclass(frozen=True)
class Checkpoint:
    number: int
    prompt_id: str
    time: float
    files: tuple[str, ...]


class Checkpoints:
    def __init__(self, store: CheckpointStore, clock: Callable[[], float] = time.time) -> None:
        self.store, self.clock = store, clock
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
        self.store.opened(Opened(self.number, prompt_id, self.clock()))

    def before_write(self, real: str) -> None:
        """Keep `real` as it is now, once per checkpoint (called by Write and Edit before they write)."""
        if self._open is None or real in self._saved:
            return
        self._saved.add(real)
        try:
            st = os.lstat(real)
        except FileNotFoundError:
            st = None  # created by this prompt: a rewind removes it
        why = _unsaved(st) if st is not None else ""
        if st is None or why:
            self.store.keep(KeptFile(self.number, real, skipped=why), None)
            return
        with open(real, "rb") as src:
            self.store.keep(KeptFile(self.number, real, mode=stat.S_IMODE(st.st_mode)), src)

    # ------------------------------------------------------------ looking back

    def list(self) -> list[Checkpoint]:
        entries = self.store.entries()
        files: dict[int, list[str]] = {}
        for e in entries:
            if isinstance(e, KeptFile):
                files.setdefault(e.number, []).append(e.path)
        return [Checkpoint(e.number, e.prompt_id, e.time, tuple(files.get(e.number, ())))
                for e in entries if isinstance(e, Opened)]

    def find(self, target: str) -> Checkpoint | None:
        """A checkpoint by its number (`3`) or its prompt's id."""
        for c in self.list():
            if target == c.prompt_id or (target.isdigit() and int(target) == c.number):
                return c
        return None

    def rewind(self, target: Checkpoint, dry_run: bool = False) -> builtins.list[str]:  # `list` is a method here
        """Every file the prompts from `target` on changed, put back as it was before `target`'s
        prompt; one line per file said."""
        first: dict[str, KeptFile] = {}
        for e in self.store.entries():
            if isinstance(e, KeptFile) and e.number >= target.number:
                first.setdefault(e.path, e)
        said = []
        for path, e in sorted(first.items()):
            if e.skipped:
                said.append(f"not restored: {path} ({e.skipped})")
            elif e.blob is None:
                if os.path.lexists(path):
                    said.append(f"removed: {path} (created after that prompt)")
                    if not dry_run:
                        os.unlink(path)
            else:
                said.append(f"restored: {path}")
                if not dry_run:
                    self._put_back(e)
        return said

    def _put_back(self, kept: KeptFile) -> None:
        """Atomically, beside the file; never through a symlink that appeared since."""
        path = kept.path
        if os.path.islink(path):
            os.unlink(path)
        folder = os.path.dirname(path)
        os.makedirs(folder, exist_ok=True)
        tmp = os.path.join(folder, f".{os.path.basename(path)}.{os.getpid()}.rewind")
        with self.store.read(kept) as src, open(tmp, "wb") as dst:
            os.fchmod(dst.fileno(), kept.mode)
            while chunk := src.read(1 << 20):
                dst.write(chunk)
        os.replace(tmp, path)


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
