"""Process checks shared by the shell and background-shell tests."""

import os
from pathlib import Path


def gone(pid: int) -> bool:
    """No such process, or only a zombie (this container's PID 1 may not reap orphans)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return True
    return "State:\tZ" in status or "State:\tX" in status
