"""Processes started for the model's tools, hooks and MCP servers die with the process that
started them, even when it dies by SIGKILL and has no chance to end them itself.

`tether(argv)` says how to start `argv` so: start `.argv`, then hand the process to `.hold(pid)`.
On Linux with pidfds (5.3+) a keeper does it (`keeper.py`): one small process per loopwright
process, in a session of its own, that holds a pidfd of each tethered process and kills those still
running, with their process groups, when loopwright's end of its socket closes — however loopwright
ended. The command is started as it is (`bash -c …` costs one exec, ~1.5 ms, not two); holding it is
one message. The keeper starts with the first tethered process, beside it, on its own core.

Elsewhere, or with `LOOPWRIGHT_KEEPER=off`, the process is started with a parent-death signal
(Linux's PR_SET_PDEATHSIG, SIGKILL): the kernel kills it the moment its parent goes. The signal is
set between fork and exec by a launcher, not by a `preexec_fn`: Python code run in a child forked
from a threaded process (a worker runs DBOS's threads) may deadlock, and a `preexec_fn` costs a
full fork of a large process instead of a vfork (~13 ms against ~1 ms for a 300 MB process). The
launcher is util-linux's `setpriv --pdeathsig KILL` (a ~1 ms exec), else a stdlib Python
one-liner (~12 ms) that also checks its parent did not die before the signal was set.

What it covers and what it does not:
- every spawner starts its child in a session and process group of its own. The keeper kills the
  group of a tethered process still running; the signal reaches the direct child (the shell, the
  sandbox launcher, the MCP server) only. A group whose leader has ended is ended by whoever
  outlives the parent (a worker at its exit, or the survivor that takes over a dead worker's loops
  on the same machine: distributed/leftovers.py);
- a process is held once it has started: were loopwright killed in the microseconds between its
  start and the message, it would live on (with setpriv, the window is setpriv's own start);
- with the signal, "the parent" is the *thread* that started the child: spawn from a thread that
  lives as long as the work does (the event loop's thread), never from a short-lived worker
  thread; a setuid program clears the signal when it is exec'd;
- under bubblewrap the sandbox's own `--die-with-parent` and PID namespace take every process of
  the sandbox down with it.

`started`/`ended` tell observers (a worker records them in its store) which process groups the
tools hold, with each leader's start time, so a reused process id is never mistaken for them."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import threading
from functools import lru_cache
from typing import Callable, Mapping, Sequence

# The fallback launcher: set the signal, make sure the parent that started us is still the parent
# (else it died before the signal was set, and no signal will come), then become the command.
_LAUNCHER = ("import ctypes,os,sys\n"
             "ctypes.CDLL(None,use_errno=True).prctl(1,9)\n"
             "os.getppid()==int(sys.argv[1]) or os._exit(137)\n"
             "os.execv(sys.argv[2],sys.argv[2:])")

# ("started", process group id, its leader's start ticks) or ("ended", process group id, None)
Observer = Callable[[str, int, "int | None"], None]
_observers: list[Observer] = []


@lru_cache(maxsize=1)
def _setpriv() -> str | None:
    """setpriv's path when it knows --pdeathsig (util-linux 2.33+), checked once."""
    found = shutil.which("setpriv")
    if found is None:
        return None
    try:
        done = subprocess.run([found, "--pdeathsig", "KILL", "--", "/bin/true"], stdin=subprocess.DEVNULL,
                              capture_output=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return None
    return found if done.returncode == 0 else None


class Tether:
    """How to start one process so that it dies with this one: start `argv`, then `hold(pid)`."""

    __slots__ = ("argv", "_keeper")

    def __init__(self, argv: list[str], keeper: "_Keeper | None") -> None:
        self.argv, self._keeper = argv, keeper

    def hold(self, pid: int) -> None:
        """Hand the started process to the keeper (nothing to do when a launcher set its signal).
        A keeper that has gone is replaced; when none can take the process, it is killed and
        OSError raised: it never runs on untethered."""
        if self._keeper is None:
            return
        import signal

        try:
            pidfd = os.pidfd_open(pid)
        except ProcessLookupError:
            return  # ended and reaped already: nothing left to hold
        try:
            keeper: _Keeper | None = self._keeper
            for _attempt in range(2):
                if keeper is not None:
                    try:
                        return keeper.hand(pid, pidfd)
                    except OSError:
                        _drop(keeper)
                keeper = _keeper()
            try:
                signal.pidfd_send_signal(pidfd, signal.SIGKILL)
            except OSError:
                pass
            raise OSError(f"process {pid} could not be tied to this one (its keeper could not be started), "
                          "so it was killed")
        finally:
            os.close(pidfd)


def tether(argv: Sequence[str], *, cwd: str | os.PathLike[str] | None = None,
           env: Mapping[str, str] | None = None) -> Tether:
    """How to start `argv` so that it dies with this process (see the module's docstring). With a
    launcher, the program is resolved here as exec would resolve it in the child (PATH from `env`,
    a relative path from `cwd`); when it cannot be, `argv` is left as it is, so starting it fails
    as it always did ("No such file or directory" naming the program, not the launcher).
    Elsewhere than Linux: as is."""
    argv = list(argv)
    if not argv or not sys.platform.startswith("linux"):
        return Tether(argv, None)
    keeper = _keeper()
    if keeper is not None:
        return Tether(argv, keeper)
    program = _resolve(argv[0], cwd, env)
    if program is None:
        return Tether(argv, None)
    setpriv = _setpriv()
    if setpriv is not None:
        return Tether([setpriv, "--pdeathsig", "KILL", "--", program, *argv[1:]], None)
    return Tether([sys.executable, "-I", "-S", "-c", _LAUNCHER, str(os.getpid()), program, *argv[1:]], None)


SEND_TIMEOUT_S = 5.0  # the keeper reads as fast as messages come; far longer means it is stuck


class _Keeper:
    """A running keeper and this process's end of its socket."""

    def __init__(self) -> None:
        from . import helpers

        self.process, self.control = helpers.start(os.path.dirname(os.path.abspath(__file__)), "keeper")
        self.control.settimeout(SEND_TIMEOUT_S)
        self.owner = os.getpid()

    def usable(self) -> bool:
        return self.owner == os.getpid() and self.process.poll() is None

    def hand(self, pid: int, pidfd: int) -> None:
        import array
        import socket

        self.control.sendmsg([str(pid).encode()], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", [pidfd]))])


_lock = threading.Lock()
_current: _Keeper | None = None


def _keeper() -> _Keeper | None:
    """This process's keeper, started when there is none (or the last one is gone); None when it is
    off, cannot run here (no pidfds) or cannot be started."""
    global _current
    from .helpers import pidfds

    if os.environ.get("LOOPWRIGHT_KEEPER") == "off" or not pidfds():
        return None
    with _lock:
        if _current is not None and not _current.usable():
            _current.control.close()
            _current = None
        if _current is None:
            try:
                _current = _Keeper()
            except OSError:
                return None
        return _current


_retired: list[_Keeper] = []  # keepers that failed a message, their sockets open until we end


def _drop(keeper: _Keeper) -> None:
    """Give `keeper` no more processes. Its socket stays open: closing it would have a keeper that
    is only slow kill the processes it holds, which still run."""
    global _current
    with _lock:
        if _current is keeper:
            _current = None
            _retired.append(keeper)


def _resolve(program: str, cwd: str | os.PathLike[str] | None, env: Mapping[str, str] | None) -> str | None:
    if os.sep in program:
        full = os.path.join(os.fspath(cwd), program) if cwd is not None else program
        return os.path.abspath(full) if os.access(full, os.X_OK) and not os.path.isdir(full) else None
    path = (env if env is not None else os.environ).get("PATH", os.defpath)
    found = shutil.which(program, path=path)
    return os.path.abspath(found) if found else None


def stat_fields(pid: int | str) -> list[bytes] | None:
    """/proc/PID/stat's fields after the command name (state, ppid, pgrp, session, …, starttime
    at index 19); None when there is no such process (or no /proc). The command name may hold
    spaces and ')': the fields resume after the last ')'."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            stat = f.read()
    except OSError:
        return None
    return stat.rpartition(b")")[2].split()


def start_ticks(pid: int) -> int | None:
    """When `pid` started, in clock ticks since boot (/proc/PID/stat's 22nd field); None when there
    is no such process (or no /proc). With the pid it names one process for good: a pid the kernel
    reuses comes with a later start."""
    fields = stat_fields(pid)
    return int(fields[19]) if fields is not None and len(fields) > 19 else None


def observe(observer: Observer) -> Callable[[], None]:
    """Call `observer` as tool process groups start and end; returns how to stop."""
    _observers.append(observer)
    return lambda: _observers.remove(observer) if observer in _observers else None


def started(pgid: int) -> None:
    """A tool started process group `pgid` (its leader is the process `pgid`)."""
    if _observers:
        ticks = start_ticks(pgid)
        if ticks is not None:
            for observer in list(_observers):
                observer("started", pgid, ticks)


def ended(pgid: int) -> None:
    """The tool is done with group `pgid`; said only once no process of it is left (a command that
    left a job running keeps its group known until whoever outlives it ends it)."""
    if not _observers:
        return
    try:
        os.killpg(pgid, 0)
        return  # some member (or an unreaped zombie) is still there
    except ProcessLookupError:
        pass
    except PermissionError:
        return
    for observer in list(_observers):
        observer("ended", pgid, None)
