"""A process started through `lifeline.tether` dies when the process that started it is killed
with SIGKILL (which leaves it no chance to end its children): held by the keeper (the default),
through setpriv, and through the stdlib launcher used where setpriv is missing. The child appends
to a file every 50 ms; once its parent is killed the file stops growing and the child's pid is gone."""

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from loopwright.core import helpers, lifeline
from procs import gone

WRITER = "echo $$ > {pid}; while :; do echo x >> {out}; sleep 0.05; done"

# Starts each command line given on stdin, tethered, and prints the keeper's pid (0: none) and
# what the tether starts.
PARENT = """import subprocess, sys
from loopwright.core import lifeline
for line in sys.stdin:
    tether = lifeline.tether(["/bin/sh", "-c", line])
    proc = subprocess.Popen(tether.argv, start_new_session=True)
    tether.hold(proc.pid)
    keeper = lifeline._current
    print(keeper.process.pid if tether._keeper else 0, tether.argv[0], flush=True)
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


def wait_for(predicate, timeout=30.0):
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.02)


class Parent:
    """A Python process that starts tethered commands on request, to be killed with SIGKILL."""

    def __init__(self, env):
        self.proc = subprocess.Popen([sys.executable, "-c", PARENT], env=env, stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, text=True)
        self.children = []

    def start(self, command, pidfile):
        self.proc.stdin.write(command.replace("\n", " ") + "\n")
        self.proc.stdin.flush()
        keeper, used = self.proc.stdout.readline().split()
        wait_for(lambda: pidfile.exists() and pidfile.read_text().strip())
        self.children.append(int(pidfile.read_text()))
        return int(keeper), used

    def kill(self):
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(timeout=10)

    def close(self):
        if self.proc.poll() is None:
            self.proc.kill()
        for child in self.children:  # (only when the test failed)
            if not gone(child, 0):
                os.kill(child, signal.SIGKILL)


@pytest.mark.parametrize("launcher", ["keeper", "setpriv", "stdlib"])
def test_a_tethered_child_dies_with_its_killed_parent(tmp_path, launcher):
    if launcher == "setpriv" and lifeline._setpriv() is None:
        pytest.skip("no setpriv with --pdeathsig here")
    if launcher == "keeper" and not helpers.pidfds():
        pytest.skip("no pidfds here")
    out, pidfile = tmp_path / "out", tmp_path / "pid"
    env = dict(os.environ)
    if launcher != "keeper":
        env["LOOPWRIGHT_KEEPER"] = "off"
    if launcher == "stdlib":
        env["PATH"] = "/nonexistent"  # without setpriv on the PATH the stdlib launcher is used
    parent = Parent(env)
    try:
        keeper, used = parent.start(WRITER.format(pid=pidfile, out=out), pidfile)
        expected = {"keeper": "/bin/sh", "setpriv": "setpriv", "stdlib": sys.executable}[launcher]
        assert used.endswith(expected)
        assert (keeper != 0) == (launcher == "keeper")
        wait_growing(out)
        parent.kill()
        assert wait_stable(out)
        assert gone(parent.children[0], 10)
        if keeper:
            assert gone(keeper, 10)  # its work done, the keeper ends too
    finally:
        parent.close()


needs_pidfds = pytest.mark.skipif(not helpers.pidfds(), reason="no pidfds here")


@needs_pidfds
def test_a_keeper_killed_by_someone_is_replaced(tmp_path):
    """The next command is held by a new keeper; what the killed one held is no longer covered
    (the limit the module's docstring states)."""
    first_out, first_pid = tmp_path / "out1", tmp_path / "pid1"
    second_out, second_pid = tmp_path / "out2", tmp_path / "pid2"
    parent = Parent(dict(os.environ))
    try:
        keeper, _ = parent.start(WRITER.format(pid=first_pid, out=first_out), first_pid)
        os.kill(keeper, signal.SIGKILL)
        assert gone(keeper, 10)
        second_keeper, _ = parent.start(WRITER.format(pid=second_pid, out=second_out), second_pid)
        assert second_keeper not in (0, keeper)
        wait_growing(second_out)
        parent.kill()
        assert wait_stable(second_out)
        assert gone(parent.children[1], 10)
        assert not gone(parent.children[0], 0)
    finally:
        parent.close()


@needs_pidfds
def test_the_keeper_ends_a_background_job_with_its_shell(tmp_path):
    """The whole process group dies, which a parent-death signal alone would not reach."""
    out, pidfile, job_pid = tmp_path / "out", tmp_path / "pid", tmp_path / "job"
    parent = Parent(dict(os.environ))
    job = None
    try:
        command = f"sh -c 'echo $$ > {job_pid}; exec sleep 300' & " + WRITER.format(pid=pidfile, out=out)
        parent.start(command, pidfile)
        wait_for(lambda: job_pid.exists() and job_pid.read_text().strip())
        job = int(job_pid.read_text())
        parent.kill()
        assert gone(parent.children[0], 10)
        assert gone(job, 10)
    finally:
        parent.close()
        if job is not None and not gone(job, 0):
            os.kill(job, signal.SIGKILL)


@needs_pidfds
def test_the_keeper_lets_go_of_processes_that_ended(tmp_path):
    """Each held process costs the keeper a descriptor until it ends, not for the keeper's life:
    fifty commands that came and went leave it with what it started with."""
    parent = Parent(dict(os.environ))
    try:
        keeper, _ = parent.start(f"echo $$ > {tmp_path / 'first'}", tmp_path / "first")
        fds = Path(f"/proc/{keeper}/fd")
        at_rest = 3  # its socket and the two /dev/null: nothing held
        wait_for(lambda: len(list(fds.iterdir())) == at_rest)
        for i in range(50):
            parent.start(f"echo $$ > {tmp_path / str(i)}", tmp_path / str(i))
        wait_for(lambda: len(list(fds.iterdir())) == at_rest)
    finally:
        parent.close()


def test_every_spawner_holds_what_it_tethers():
    """A tether's process is held once started: a module that asks for one and never holds it
    would leave its processes running after loopwright was killed."""
    root = Path(lifeline.__file__).resolve().parents[1]
    users = []
    for path in root.rglob("*.py"):
        text = path.read_text()
        asked = len(re.findall(r"\blifeline\.tether\(", text))
        if asked:
            users.append(path.relative_to(root).as_posix())
            assert len(re.findall(r"\btether\.hold\(", text)) >= asked, path
    assert len(users) >= 6, users  # procs, background, hooks, MCP, the workspace's checks, workflows


def test_a_program_that_cannot_be_found_is_left_as_it_is(tmp_path, monkeypatch):
    """With a launcher, starting it then fails as before, naming the program rather than the launcher."""
    monkeypatch.setenv("LOOPWRIGHT_KEEPER", "off")
    assert lifeline.tether(["no-such-program-here", "-x"]).argv == ["no-such-program-here", "-x"]
    assert lifeline.tether(["./missing"], cwd=tmp_path).argv == ["./missing"]
    (tmp_path / "tool").write_text("#!/bin/sh\n")
    (tmp_path / "tool").chmod(0o755)
    assert lifeline.tether(["./tool", "a"], cwd=tmp_path).argv[-2:] == [str(tmp_path / "tool"), "a"]
