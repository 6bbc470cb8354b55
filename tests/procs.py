"""Process checks shared by the shell and background-shell tests."""

import os
import time
from pathlib import Path


def gone(pid: int, within: float = 5.0) -> bool:
    """No such process, or only a zombie (this container's PID 1 may not reap orphans), now or
    within `within` seconds: a killed process needs a moment on a loaded machine to die."""
    deadline = time.monotonic() + within
    while not _gone(pid):
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.02)
    return True


def _gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return True
    return "State:\tZ" in status or "State:\tX" in status
