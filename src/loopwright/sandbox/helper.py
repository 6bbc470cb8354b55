"""The warm helper: one `python -I -S` per loopwright process, started with its first sandboxed
command (`warm.py`), which watches every sandboxed command of that process — the work of the
launcher's watcher (launch.py's steps 1 to 3 and 5), a thread each, in one process started once
instead of an interpreter per command. loopwright starts bwrap itself: bwrap stays its own child
(it dies with loopwright by `--die-with-parent`, gets its signals, and its exit status is the
command's), while the helper lives in a session of its own, outside the command's process group
and loopwright's, and outlives a killed loopwright to clean up.

The helper's stdin is a unix SEQPACKET socket to loopwright. Each message on it carries one
descriptor: a socket of its own for one command, which a new thread of the helper serves:
1. it receives the `marshal`led spec (launch.py's) with the read end of bwrap's info pipe;
2. does launch.py's steps 1 to 3 (unfinished checks, guards, locks, the pending record) and
   answers ("go", the guards' bwrap arguments, lines) — or ("refused", lines): loopwright then
   runs the command through the launcher, which refuses it again and says why (exit 126). The
   lines name what it set aside of earlier commands; loopwright puts them in the output;
3. receives b"started" with the command's output (the line about what the clean-up set aside
   goes there, and a runner reading to the end has the result only once the helper closed it,
   after the clean-up) and a pidfd of bwrap — or the socket's end (bwrap could not start, or
   loopwright died before it said so). The output comes only now: a command loopwright gave up
   on (the helper did not answer in time) is not held open by the helper;
4. waits for bwrap and the sandbox it names on the info pipe to end — the kernel ends every
   process of a PID namespace before its PID 1 is gone, so nothing of the command runs any more —
   then cleans up as the launcher's watcher does (step 5). Without bwrap's pidfd the info pipe
   says when: it ends when bwrap has named its sandbox or died, and loopwright's copy of its
   write end is gone with loopwright.
At the end of its socket (loopwright is gone) the helper takes no more commands and exits once
every command it watches is cleaned up. It ignores TERM, INT and HUP, as the watcher did.
"""

import _thread
import array
import marshal
import posix
import select
import time

import _signal  # type: ignore[import-not-found]  # the C module: `signal` would import enum and more
import _socket  # likewise: `socket` imports selectors, enum, ...

try:
    from . import launch
except ImportError:  # run as the helper: a top-level module beside launch.py
    import launch  # type: ignore[import-not-found, no-redef]

MAX_SPEC = 1 << 20
_watching = [0]  # commands not cleaned up yet
_count = _thread.allocate_lock()
_owner = [0]  # loopwright's pid: the helper's parent until loopwright is gone


def serve():
    for sig in (_signal.SIGTERM, _signal.SIGINT, _signal.SIGHUP):
        _signal.signal(sig, _signal.SIG_IGN)
    _owner[0] = posix.getppid()
    _thread.stack_size(1 << 19)  # a thread only waits and calls the kernel: no deep stack
    _more_descriptors()
    control = _socket.socket(_socket.AF_UNIX, _socket.SOCK_SEQPACKET, 0, 0)
    while True:
        data, fds = _receive(control, 16, 1)
        if not data and not fds:
            break  # loopwright is gone
        for fd in fds:
            with _count:
                _watching[0] += 1
            _thread.start_new_thread(_command, (fd,))
    control.close()
    while _watching[0]:
        time.sleep(0.05)  # the clean-ups still to come (exiting would end their threads)
    posix._exit(0)


def _more_descriptors():
    """Up to the hard limit: each command in flight holds a handful (its locks, record, output,
    pidfds), and a worker may have a hundred at once."""
    try:
        import resource

        _soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    except (ImportError, ValueError, OSError):
        pass  # the soft limit then: more commands at once than it allows fail over to the launcher


class _Output:
    """Where a command's lines go: its output once loopwright handed it over."""

    def __init__(self):
        self.fd = -1

    def say(self, line):
        if self.fd >= 0:
            try:
                posix.write(self.fd, (line + "\n").encode("utf-8", "surrogateescape"))
            except OSError:
                pass  # nobody reads it any more


def _command(fd):
    """One command, steps 1 to 4 of the module's docstring. On an unexpected error between the
    guards' set-up and the clean-up nothing is cleaned up or released: its locks stay held (no
    placeholder is removed under the sandbox, its record is not finished early) until the helper
    ends, as if its watcher had hung."""
    channel, info, output, pidfds, lines, holding = None, -1, _Output(), [], [], False
    try:
        channel = _socket.socket(_socket.AF_UNIX, _socket.SOCK_SEQPACKET, 0, fd)
        data, fds = _receive(channel, MAX_SPEC, 1)
        if len(fds) != 1:
            _close(*fds)
            return
        info = fds[0]
        try:  # lines said before the output is handed over go back with the answer
            mounts, clean_up = launch.prepare(marshal.loads(data),
                                              lambda line: output.say(line) if output.fd >= 0 else lines.append(line))
        except (launch.Refused, OSError, EOFError, ValueError, TypeError, KeyError):
            _send(channel, marshal.dumps(("refused", lines)))
            return
        holding = True
        _send(channel, marshal.dumps(("go", mounts, lines)))
        try:
            said, got = _receive(channel, 16, 2)
        except OSError:
            said, got = b"", []
        if said == b"started" and got:
            output.fd, pidfds = got[0], got[1:]
        else:
            _close(*got)
        channel.close()
        channel = None
        # the launcher's own reading of the info pipe: to its end, then closed
        sandbox, info = launch._sandbox_pidfd(info), -1
        if sandbox is not None:
            pidfds.append(sandbox)  # after bwrap's: bwrap outlives its child unless killed
            if posix.getppid() != _owner[0]:
                _orphaned(sandbox)
        for pidfd in pidfds:
            _ended(pidfd)
        clean_up()
        holding = False
    finally:
        if not holding:
            if channel is not None:
                channel.close()
            _close(info, output.fd, *pidfds)
        with _count:
            _watching[0] -= 1


def _orphaned(sandbox):
    """loopwright died before bwrap named its sandbox, so maybe before bwrap set its parent-death
    signal (it does so before making the sandbox: a loopwright alive once the sandbox is named is
    one the signal covers). Nothing of a command whose loopwright is gone may run: its sandbox
    (its PID 1, and with it every process of its PID namespace) is killed."""
    try:
        _signal.pidfd_send_signal(sandbox, _signal.SIGKILL)
    except OSError:
        pass  # ended already


def _ended(pidfd):
    """Wait until the process of `pidfd` has ended (poll, not select: a busy helper's descriptors
    may number above select's 1024)."""
    waiting = select.poll()
    waiting.register(pidfd, select.POLLIN)
    while not waiting.poll():
        pass


def _close(*fds):
    for fd in fds:
        if fd >= 0:
            try:
                posix.close(fd)
            except OSError:
                pass


def _receive(sock, size, most):
    """One message and the descriptors it carries (at most `most`)."""
    data, ancillary, _flags, _address = sock.recvmsg(size, _socket.CMSG_SPACE(most * 4))
    fds = array.array("i")
    for level, kind, payload in ancillary:
        if level == _socket.SOL_SOCKET and kind == _socket.SCM_RIGHTS:
            fds.frombytes(payload[:len(payload) - len(payload) % fds.itemsize])
    return data, list(fds)


def _send(sock, data):
    try:
        sock.send(data)
    except OSError:
        pass  # loopwright is gone or gave up: the info pipe's end says when to clean up
