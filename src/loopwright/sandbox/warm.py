"""Sandboxed commands started through the warm helper (`helper.py`): the launcher's host-side
work (guards, locks, the watch and the clean-up) done by one helper process per loopwright
process, started once, and bwrap started here, as this process's own child — what a command
costs over bare bwrap is then a few messages instead of an interpreter start (`docs/speed.md`).

Fail closed: when the helper is off (`LOOPWRIGHT_SANDBOX_HELPER=off`), cannot start, is gone,
does not answer within `REPLY_TIMEOUT_S`, or refuses the command or fails before bwrap starts,
`spawn` returns None and the caller runs the launcher's command line as it always did — never
the command without its sandbox. A helper that cannot be reached or did not answer in time gets
no more commands (it ends by itself once it has cleaned up after the ones it has) and the next
command starts a new one."""

from __future__ import annotations

import array
import marshal
import os
import socket
import subprocess
import threading
from typing import TYPE_CHECKING

from ..core import helpers

if TYPE_CHECKING:
    from collections.abc import Mapping

    from .bwrap import Launch

REPLY_TIMEOUT_S = 10.0  # the helper waits for the lock around placeholders; far longer means it is stuck


class Helper:
    """A running helper and this process's end of its socket."""

    def __init__(self) -> None:
        # its own session: a terminal's ^C or a signal to loopwright's group does not reach it;
        # it ends once its socket does (with this process, however it ends) and it cleaned up
        self.process, ours = helpers.start(os.path.dirname(os.path.abspath(__file__)), "helper")
        ours.setblocking(False)  # a burst that fills its queue waits on the event loop, not in it
        self.control, self.owner = ours, os.getpid()

    @property
    def pid(self) -> int:
        return self.process.pid

    def usable(self) -> bool:
        return self.owner == os.getpid() and self.process.poll() is None

    async def hand(self, channel: socket.socket) -> None:
        """Give the helper one command's socket (a thread of it serves that command)."""
        import anyio

        while True:
            try:
                return _send(self.control, b"c", channel.fileno())
            except BlockingIOError:
                await anyio.sleep(0.001)  # hundreds of commands at once: the helper catches up

    def stop(self) -> None:
        """Send it no more commands. Never killed: it ends by itself once the commands it watches
        are cleaned up (killing it would leave their placeholders and records to chance)."""
        self.control.close()
        if self.owner == os.getpid():
            self.process.poll()  # reaped if it has ended


_lock = threading.Lock()
_current: Helper | None = None


def current() -> Helper | None:
    """This process's helper, started when there is none (or the last one is gone); None when it
    is off or cannot run here."""
    global _current
    # without pidfds the helper could not tell when bwrap ended: the launcher (its own way) is used
    if os.environ.get("LOOPWRIGHT_SANDBOX_HELPER") == "off" or not helpers.pidfds():
        return None
    with _lock:
        if _current is not None and not _current.usable():
            _current.stop()
            _current = None
        if _current is None:
            try:
                _current = Helper()
            except OSError:
                return None
        return _current


def _drop(helper: Helper) -> None:
    global _current
    with _lock:
        if _current is helper:
            _current = None
    helper.stop()


async def spawn(line: Launch, *, output: int, cwd: str | os.PathLike[str], env: Mapping[str, str],
                pass_fds: tuple[int, ...] = ()) -> subprocess.Popen[bytes] | None:
    """Start the command `line` (what `wrap` returned) under bwrap, a child of this process in a
    session of its own, `output` its stdout and stderr, `pass_fds` inherited — its host side done
    by the helper, which keeps `output` open until its clean-up is done. None when
    the helper cannot do it (see the module's docstring): run `line` itself then."""
    import anyio

    helper = current()
    if helper is None:
        return None
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    info_read, info_write = os.pipe()  # bwrap names its sandbox on it (`--info-fd`) for the helper
    try:
        try:
            _send(ours, marshal.dumps(line.spec), info_read)  # waits in the pair for the helper
        finally:
            os.close(info_read)
            info_read = -1
        answer = b""
        ours.setblocking(False)
        with anyio.move_on_after(REPLY_TIMEOUT_S) as waited:
            try:
                await helper.hand(theirs)
            except OSError:
                _drop(helper)  # gone: the next command starts a new one
                return None
            finally:
                theirs.close()
            answer = await _receive(ours)
        if waited.cancelled_caught:
            _drop(helper)  # stuck (or waiting very long for the lock): the next command gets a new one
        mounts, lines = _answer(answer)
        if lines:
            os.write(output, "".join(f"{t}\n" for t in lines).encode("utf-8", "surrogateescape"))
        if mounts is None:
            return None
        proc = _start(line, mounts, info_write, output, cwd, env, pass_fds)
        try:
            pidfd = os.pidfd_open(proc.pid)  # before anyone reaps it: this names bwrap for good
        except OSError:
            pidfd = -1  # the helper then waits for the sandbox bwrap names on the info pipe
        try:
            _send(ours, b"started", output, *([pidfd] if pidfd >= 0 else []))
        except OSError:
            pass  # the helper died: what it was to clean up is finished by the next command
        finally:
            if pidfd >= 0:
                os.close(pidfd)
        return proc
    finally:
        ours.close()
        theirs.close()
        os.close(info_write)
        if info_read >= 0:
            os.close(info_read)


def _start(line: Launch, mounts: list[str], info: int, output: int, cwd: str | os.PathLike[str],
           env: Mapping[str, str], pass_fds: tuple[int, ...]) -> subprocess.Popen[bytes]:
    """bwrap with the guards' mounts, the socket filter on a pipe and the info pipe, as the
    launcher would exec it."""
    at, extra, handed = line.spec["insert"], list(mounts), [info, *pass_fds]
    read = -1
    if line.spec["seccomp"] is not None:
        read, write = os.pipe()
        try:
            os.write(write, line.spec["seccomp"])  # a few hundred bytes: the pipe never blocks
        finally:
            os.close(write)
        extra += ["--seccomp", str(read)]
        handed.append(read)
    extra += ["--info-fd", str(info)]
    argv = [*line.bwrap[:at], *extra, *line.bwrap[at:]]
    try:
        # Not `lifeline.tether`: bwrap's own --die-with-parent gives it (and the sandbox's first
        # process) the same parent-death signal, without setpriv's exec (~4 ms)
        return subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=output,
                                stderr=output, cwd=cwd, env=env, start_new_session=True, pass_fds=tuple(handed))
    finally:
        if read >= 0:
            os.close(read)


def _answer(reply: bytes) -> tuple[list[str] | None, list[str]]:
    """The guards' bwrap arguments from the helper's answer (None for a refusal, or when it ended
    without one), and its lines about earlier commands."""
    try:
        said = marshal.loads(reply) if reply else None
    except (EOFError, ValueError, TypeError):
        return None, []
    if not isinstance(said, tuple) or not said or not _texts(said[-1]):
        return None, []
    if len(said) == 3 and said[0] == "go" and _texts(said[1]):
        return said[1], said[2]
    return None, said[-1]


def _texts(value: object) -> bool:
    return isinstance(value, list) and all(isinstance(v, str) for v in value)


async def _receive(sock: socket.socket) -> bytes:
    import asyncio

    try:
        return await asyncio.get_running_loop().sock_recv(sock, 1 << 16)
    except OSError:
        return b""


def _send(sock: socket.socket, data: bytes, *fds: int) -> None:
    sock.sendmsg([data], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", fds))] if fds else [])
