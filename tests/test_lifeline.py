"""A process started through `lifeline.tethered` dies when the process that started it is killed
with SIGKILL (which leaves it no chance to end its children): through setpriv, and through the
stdlib launcher used where setpriv is missing. The child appends to a file every 50 ms; once
its parent is killed the file stops growing and the child's pid is gone."""

import os
import signal
import subprocess
import sys
import time

import pytest

from loopwright.core import lifeline
from procs import gone

WRITER = "echo $$ > {pid}; while :; do echo x >> {out}; sleep 0.05; done"

PARENT = """import subprocess, sys
from loopwright.core import lifeline
argv = lifeline.tethered(["/bin/sh", "-c", sys.argv[1]])
print(argv[0], flush=True)
subprocess.Popen(argv, start_new_session=True)
sys.stdin.read()  # until killed
"""


def size(path):
    return path.stat().st_size if path.exists() else 0


def wait_stable(path, period=0.05, reads=10, timeout=30.0):
    """True once `path`'s size is the same across `reads` reads spaced by `period` (the writer's
    own period), within `timeout`."""
    deadline, last, same = time.monotonic() + timeout, -1, 0
    while time.monotonic() < deadline:
        now = size(path)
        same = same + 1 if now == last else 0
        if same >= reads:
            return True
        last = now
        time.sleep(period)
    return False


def wait_growing(path, timeout=30.0):
    start, deadline = size(path), time.monotonic() + timeout
    while size(path) <= start:
        assert time.monotonic() < deadline, f"{path} did not grow"
        time.sleep(0.02)


@pytest.mark.parametrize("launcher", ["setpriv", "stdlib"])
def test_a_tethered_child_dies_with_its_killed_parent(tmp_path, launcher):
    if launcher == "setpriv" and lifeline._setpriv() is None:
        pytest.skip("no setpriv with --pdeathsig here")
    out, pidfile = tmp_path / "out", tmp_path / "pid"
    # without setpriv on the PATH the stdlib launcher is used
    env = dict(os.environ, PATH="/nonexistent") if launcher == "stdlib" else dict(os.environ)
    parent = subprocess.Popen([sys.executable, "-c", PARENT, WRITER.format(pid=pidfile, out=out)], env=env,
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    child = None
    try:
        used = parent.stdout.readline().strip()
        assert used.endswith("setpriv") if launcher == "setpriv" else used == sys.executable
        wait_growing(out)
        child = int(pidfile.read_text())
        parent.send_signal(signal.SIGKILL)
        parent.wait(timeout=10)
        assert wait_stable(out)
        assert gone(child, 10)
    finally:
        if parent.poll() is None:
            parent.kill()
        if child is not None and not gone(child, 0):
            os.kill(child, signal.SIGKILL)  # (only when the test failed)


def test_a_program_that_cannot_be_found_is_left_as_it_is(tmp_path):
    """Starting it then fails as before, naming the program rather than the launcher."""
    assert lifeline.tethered(["no-such-program-here", "-x"]) == ["no-such-program-here", "-x"]
    assert lifeline.tethered(["./missing"], cwd=tmp_path) == ["./missing"]
    (tmp_path / "tool").write_text("#!/bin/sh\n")
    (tmp_path / "tool").chmod(0o755)
    assert lifeline.tethered(["./tool", "a"], cwd=tmp_path)[-2:] == [str(tmp_path / "tool"), "a"]
