"""Crash logs: the traceback of an unexpected exception, written to `<loopwright home>/logs/` (a
private file), so that the terminal shows one line that names the file, never the traceback."""

from __future__ import annotations

import os
import secrets
import sys
import time
import traceback
from pathlib import Path
from typing import Mapping

from .jsonl import home


def write_crash_log(exc: BaseException, env: Mapping[str, str] | None = None) -> str | None:
    """Write `exc` with its traceback; the file's path, or None when it cannot be written (the
    error line then says only what happened)."""
    directory = home(env) / "logs"
    path = directory / f"crash-{time.strftime('%Y%m%d-%H%M%S')}-{os.getpid()}-{secrets.token_hex(3)}.log"
    try:
        text = "".join(traceback.format_exception(exc))
    except Exception as failure:  # noqa: BLE001 - formatting must not hide the crash it reports
        text = f"{type(exc).__name__}: {exc!r} (the traceback could not be formatted: {failure!r})\n"
    header = f"loopwright crashed: python {sys.version.split()[0]}, pid {os.getpid()}, argv {sys.argv!r}\n\n"
    try:
        directory.mkdir(parents=True, exist_ok=True, mode=0o700)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0), 0o600)
        with os.fdopen(fd, "w", encoding="utf-8", errors="backslashreplace") as f:
            f.write(header + text)
    except OSError:
        return None
    return str(Path(path))
