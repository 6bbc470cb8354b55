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


def kill_mid_tool(args: list[str], cwd: Path, env: dict, marker: Path, timeout: float = 60) -> None:
    """Start `loopwright ARGS` in `cwd`, wait until its tool wrote its process group's id to
    `marker` (the tool is then running), `kill -9` the run, and kill the tool it orphaned."""
    import signal
    import subprocess
    import sys

    proc = subprocess.Popen([sys.executable, "-m", "loopwright", *args], cwd=cwd, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + timeout
    while not (marker.exists() and marker.read_text().strip()):
        assert time.monotonic() < deadline and proc.poll() is None, proc.communicate()
        time.sleep(0.02)
    os.kill(proc.pid, signal.SIGKILL)
    proc.communicate(timeout=10)
    kill_orphan(marker)


def kill_orphan(marker: Path) -> None:
    """Kill the process group whose id a tool wrote to `marker` (`echo $$`), orphaned by a killed
    run — when it is the tool's: a sandboxed tool writes its PID namespace's number, which on
    the host is some other process (and the sandbox ended with the run anyway), so the group is
    killed only when that process works in the marker's folder."""
    import signal

    pid = int(marker.read_text())
    try:
        if os.path.realpath(os.readlink(f"/proc/{pid}/cwd")) != os.path.realpath(marker.parent):
            return
    except OSError:
        return  # gone already
    try:
        os.killpg(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
