"""How Grep reads and matches files without ever hanging: regular files only, opened beneath
the folder searched as the kernel resolves them (`core.beneath`: a symlink leading out of it is
never followed, a FIFO, a device or a socket never opened for reading), at most
`MAX_FILE_BYTES` each; patterns on RE2 (linear time, off the event loop, the GIL released while
it matches), and the few that need backtracking on Python's `re` in a worker process. A search
runs in a thread that checks `stop` as it goes, so a deadline, Ctrl-C or SIGTERM ends it at once
and the abandoned thread ends soon after."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

from ..core.beneath import Beneath
from ..core.regex import PatternError, compile_re2
from .grepworker import split_lines
from .paths import is_binary

MAX_FILE_BYTES = 64 << 20  # a bigger file is skipped (and counted): Grep holds one file at a time
SEARCH_TIMEOUT_S = 60.0  # one Grep call; then it is the tool's error, with advice to narrow it
_CHECK_EVERY = 256  # matches between two looks at the stop flag
WORKER = Path(__file__).with_name("grepworker.py")


class Stopped(Exception):
    """The search was stopped (deadline, interrupt) while a thread still ran it, or the
    backtracking worker died."""


class TooLarge(Exception):
    """A regular file over the size Grep searches."""


class Engine:
    """One Grep call's matcher. `search(path)` runs in a worker thread and gives the file's lines
    and the indexes of the matching ones, or None for a file that is skipped. `close()` (from the
    event loop, never blocking) stops it."""

    backtracking = False

    def __init__(self) -> None:
        self.stop = threading.Event()
        self.skipped_large = 0

    def search(self, root: Beneath, path: str | Path) -> tuple[list[str], list[int]] | None:
        """`path` (relative to `root`, or absolute inside it) opened beneath `root`; `Unsafe`
        when it leads out of it."""
        if self.stop.is_set():
            raise Stopped
        try:
            raw = read_regular(root, path, MAX_FILE_BYTES)
        except TooLarge:
            self.skipped_large += 1
            return None
        if raw is None or is_binary(raw):
            return None
        return self.match(raw)

    def match(self, raw: bytes) -> tuple[list[str], list[int]]:
        raise NotImplementedError

    def close(self) -> None:
        self.stop.set()

    def note(self) -> str:
        if not self.skipped_large:
            return ""
        files = "1 file" if self.skipped_large == 1 else f"{self.skipped_large} files"
        return f"\n({files} over {MAX_FILE_BYTES >> 20} MiB not searched.)"

    def timed_out(self, seconds: float) -> str:
        return (f"The search was stopped after {seconds:g} s without finishing. Narrow it: a path, a glob or a "
                "type, or a more specific pattern.")


def compile_pattern(pattern: str, *, ignore_case: bool, multiline: bool) -> Engine:
    """The engine for the pattern: RE2 when it can run it, else the backtracking worker.
    Raises `PatternError` for a pattern that is not a regular expression at all."""
    try:
        regex = compile_re2(pattern, ignore_case=ignore_case, multiline=True, dot_all=multiline,
                            line_bounded=not multiline)
    except PatternError as exc:
        if not exc.unsupported:
            raise
        return Backtracking(pattern, ignore_case, multiline, str(exc))
    return Linear(regex, multiline)


def read_regular(root: Beneath, path: str | Path, limit: int) -> bytes | None:
    """A regular file's bytes, or None for an unreadable one; `TooLarge` past `limit`, `Unsafe`
    for anything but a regular file reached beneath `root` (a device is never opened: opening
    some has effects; the descriptor is non-blocking, so a FIFO swapped in cannot hang us)."""
    try:
        fd = root.open(path)
    except OSError:  # gone, unreadable (an `Unsafe` is no OSError: it goes to the caller)
        return None
    try:
        info = os.fstat(fd)
        if info.st_size > limit:
            raise TooLarge
        chunks, left = [], limit + 1
        while left > 0 and (chunk := os.read(fd, min(left, 1 << 20))):
            chunks.append(chunk)
            left -= len(chunk)
        if left <= 0:
            raise TooLarge  # it grew while we read it
        return b"".join(chunks)
    except OSError:
        return None
    finally:
        os.close(fd)


def _text(raw: bytes) -> tuple[str, bytes]:
    """The file as text and as the UTF-8 bytes RE2 searches (invalid bytes replaced in both)."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        text = raw.decode("utf-8", "replace")
        raw = text.encode("utf-8")
    return text, raw


class Linear(Engine):
    """RE2 over the whole file at once; `never_nl` keeps every match within one line, as a
    line-by-line search would, without a call per line."""

    def __init__(self, regex: Any, multiline: bool) -> None:
        super().__init__()
        self.regex, self.multiline = regex, multiline

    def match(self, raw: bytes) -> tuple[list[str], list[int]]:
        text, data = _text(raw)
        lines = split_lines(text)
        data = data.replace(b"\r\n", b"\n")  # the lines Grep shows do not end in \r: neither may `$`
        if data.endswith(b"\r"):
            data = data[:-1]
        spans = self._multiline(data) if self.multiline else self._per_line(data)
        return lines, [i for i in spans if i < len(lines)]

    def _per_line(self, data: bytes) -> list[int]:
        matched: list[int] = []
        pos, line, counted = 0, 0, 0
        while pos <= len(data):
            found = self.regex.search(data, pos)
            if found is None:
                break
            start = found.start()
            line += data.count(b"\n", counted, start)
            matched.append(line)
            end = data.find(b"\n", start)
            if end < 0:
                break
            pos = counted = end + 1  # the rest of this line cannot add anything
            line += 1
            if len(matched) % _CHECK_EVERY == 0 and self.stop.is_set():
                raise Stopped
        return matched

    def _multiline(self, data: bytes) -> list[int]:
        matched: set[int] = set()
        line, counted = 0, 0
        for n, found in enumerate(self.regex.finditer(data), 1):
            start, end = found.span()
            line += data.count(b"\n", counted, start)
            counted = start
            matched.update(range(line, line + data.count(b"\n", start, max(end - 1, start)) + 1))
            if n % _CHECK_EVERY == 0 and self.stop.is_set():
                raise Stopped
        return sorted(matched)


class Backtracking(Engine):
    """Python's `re` in a worker process (`grepworker.py`), fed one file at a time. `close()`
    kills it, which also wakes a thread waiting for its answer."""

    backtracking = True

    def __init__(self, pattern: str, ignore_case: bool, multiline: bool, needs: str) -> None:
        super().__init__()
        self.spec = json.dumps({"pattern": pattern, "ignore_case": ignore_case, "multiline": multiline})
        self.needs = needs  # what in the pattern RE2 cannot run, for the timeout message
        self.proc: subprocess.Popen[bytes] | None = None
        self._lock = threading.Lock()

    def match(self, raw: bytes) -> tuple[list[str], list[int]]:
        text, data = _text(raw)
        proc = self._worker()
        assert proc.stdin is not None and proc.stdout is not None
        try:
            proc.stdin.write(b"%d\n" % len(data) + data)
            proc.stdin.flush()
            answer = proc.stdout.readline()
        except (OSError, ValueError):
            raise Stopped from None
        if not answer:
            raise Stopped  # killed (stopped), or it failed: the caller reports either
        return split_lines(text), list(json.loads(answer))

    def _worker(self) -> subprocess.Popen[bytes]:
        with self._lock:
            if self.stop.is_set():
                raise Stopped
            if self.proc is None:
                self.proc = subprocess.Popen(
                    [sys.executable, "-I", "-S", str(WORKER)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                    stderr=subprocess.DEVNULL, start_new_session=True, close_fds=True)
                assert self.proc.stdin is not None
                self.proc.stdin.write(self.spec.encode() + b"\n")
            return self.proc

    def close(self) -> None:
        with self._lock:
            super().close()
            proc = self.proc
        if proc is None:
            return
        try:
            os.killpg(proc.pid, signal.SIGKILL)  # our own single worker: no grace period needed
        except (ProcessLookupError, PermissionError):
            pass
        try:
            proc.wait(timeout=5)  # a killed process is gone at once; this only reaps it
        except subprocess.TimeoutExpired:
            pass
        for pipe in (proc.stdin, proc.stdout):  # a thread still reading gets EOF first: it is dead
            try:
                if pipe is not None:
                    pipe.close()
            except (OSError, ValueError, RuntimeError):
                pass

    def timed_out(self, seconds: float) -> str:
        return (f"The search was stopped after {seconds:g} s: the pattern uses {self.needs}, which only a "
                "backtracking engine can run, and there a pattern such as (a+)+$ can take exponential time. "
                "Rewrite it without that (RE2 syntax matches in linear time), or search fewer files.")
