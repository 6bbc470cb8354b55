"""The lifeline's keeper: one `python -I -S` per loopwright process, started by `lifeline.py` with
the first process it tethers, in a session of its own. loopwright hands it a pidfd of each process
it starts for a tool, a hook, an MCP server or a check; when loopwright is gone, however it ended
(its end of the socket closes with it, SIGKILL included), the keeper kills those still running,
each with its process group, and exits. Built-in modules only (run as source beside the standard
library's, it costs ~10 ms once, on its own core); it ignores TERM, INT and HUP, so a terminal's ^C
or a signal to loopwright's group cannot end it before it has done its work.

The keeper's stdin is a unix SEQPACKET socket. Each message is one process id in decimal, with a
pidfd of that process attached (SCM_RIGHTS). A held process that ends is let go (its pidfd turns
readable). The pidfd names the process for good: a process id the kernel reuses is never killed.
"""

from __future__ import annotations

import _signal  # type: ignore[import-not-found]  # the C module behind `signal`: typeshed has no stub for it
import _socket
import array
import posix
import select


def serve() -> None:
    for sig in (_signal.SIGTERM, _signal.SIGINT, _signal.SIGHUP):
        _signal.signal(sig, _signal.SIG_IGN)
    control = _socket.socket(_socket.AF_UNIX, _socket.SOCK_SEQPACKET, 0, 0)
    poller = select.poll()
    poller.register(0, select.POLLIN)
    held: dict[int, int] = {}  # pidfd -> process id
    while True:
        for fd, _events in poller.poll():
            if fd != 0:  # a held process ended
                poller.unregister(fd)
                posix.close(fd)
                del held[fd]
                continue
            pid, pidfd = _receive(control)
            if pid is None:  # loopwright is gone
                end(held)
                posix._exit(0)
            if pidfd is not None:
                held[pidfd] = pid
                poller.register(pidfd, select.POLLIN)


def _receive(control: _socket.socket) -> tuple[int | None, int | None]:
    """(process id, its pidfd) from one message; (0, None) for a malformed one; (None, None) at the
    socket's end."""
    try:
        data, ancillary, _flags, _address = control.recvmsg(32, _socket.CMSG_SPACE(4), _socket.MSG_CMSG_CLOEXEC)
    except OSError:
        return None, None
    fds = array.array("i")
    for level, kind, payload in ancillary:
        if level == _socket.SOL_SOCKET and kind == _socket.SCM_RIGHTS:
            fds.frombytes(payload[:len(payload) - len(payload) % fds.itemsize])
    if not data and not fds:
        return None, None
    if len(fds) != 1 or not data.isdigit():
        for fd in fds:
            posix.close(fd)
        return 0, None
    return int(data), fds[0]


def end(held: dict[int, int]) -> None:
    """SIGKILL every process of `held` (pidfd -> process id) still running, and its process group
    when it leads one (every spawner starts its child in a session of its own)."""
    poller = select.poll()
    for pidfd in held:
        poller.register(pidfd, select.POLLIN)
    ended = {fd for fd, _events in poller.poll(0)}
    for pidfd, pid in held.items():
        if pidfd in ended:
            continue
        try:
            if posix.getpgid(pid) == pid:  # it is alive (its pidfd says so), so the id is still its own
                posix.killpg(pid, _signal.SIGKILL)
        except OSError:
            pass
        try:
            _signal.pidfd_send_signal(pidfd, _signal.SIGKILL)
        except OSError:
            pass
