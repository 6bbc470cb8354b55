"""The warm helper: one `python -I -S` per loopwright process, started with its first sandboxed
command (`warm.py`), which forks a watcher per command instead of starting a launcher's
interpreter for each. loopwright starts bwrap itself: bwrap stays its own child (it dies with
loopwright by `--die-with-parent` and its tether, gets its signals, and its exit status is the
command's), while the watcher lives outside the command's process group and loopwright's own, so
a killed loopwright leaves it to clean up (launch.py's step 5).

The helper's stdin is a unix SEQPACKET socket to loopwright. Each message on it carries one
descriptor: a socket of its own for one command. The helper keeps one spare child forked ahead,
waiting on that socket: the spare takes the next command and becomes its watcher while the
helper forks the next spare, so no fork (~1-3 ms) is on a command's way. At the end of that
socket (loopwright is gone) the spare and the helper exit; the watchers go on.

A watcher, on its command's socket:
1. receives the `marshal`led spec (launch.py's) with the read end of bwrap's info pipe;
2. does launch.py's steps 1 to 3 (unfinished checks, guards, locks, the pending record) and
   answers ("go", the guards' bwrap arguments, lines) — or ("refused", lines): loopwright then
   runs the command through the launcher, which refuses it again and says why (exit 126). The
   lines name what it set aside of earlier commands; loopwright puts them in the output;
3. receives b"started" with the command's output (its stdout and stderr from then on: a runner
   reading to the end has the result only after the clean-up, and the line about what was set
   aside) and a pidfd of bwrap — or the socket's end (bwrap could not start, or loopwright died
   before it said so). The output comes only now: a watcher loopwright gave up on holds none;
4. waits for bwrap and the sandbox it names on the info pipe to end, then cleans up, as the
   launcher's watcher does. Without bwrap's pidfd the info pipe says it: it ends when bwrap has
   named its sandbox or died, and loopwright's copy of its write end is gone with loopwright.
"""

import array
import marshal
import posix

import _signal  # type: ignore[import-not-found]  # the C module: `signal` would import enum and more
import _socket  # likewise: `socket` imports selectors, enum, ...

try:
    from . import launch
except ImportError:  # run as the helper: a top-level module beside launch.py
    import launch  # type: ignore[import-not-found, no-redef]

MAX_SPEC = 1 << 20


def serve():
    control = _socket.socket(_socket.AF_UNIX, _socket.SOCK_SEQPACKET, 0, 0)
    _signal.signal(_signal.SIGCHLD, _signal.SIG_IGN)  # the kernel reaps the watchers
    while True:
        taken, tell = posix.pipe()
        if posix.fork() == 0:
            posix.close(taken)
            _signal.signal(_signal.SIGCHLD, _signal.SIG_DFL)
            _spare(control, tell)
        posix.close(tell)
        said = posix.read(taken, 1)
        posix.close(taken)
        if said != b"j":
            posix._exit(0)  # the spare saw loopwright go (or died): so do we


def _spare(control, tell):
    """The next command's watcher, forked before the command comes, so no fork is on its way:
    it takes one command's socket from loopwright and becomes that command's watcher (which tells
    the helper to fork the next spare). At the socket's end (loopwright is gone) it exits without
    a word, and so does the helper."""
    try:
        _data, fds = _receive(control, 16, 1)
        if not fds:
            return
        control.close()  # fd 0: /dev/null takes its place before anything else is opened
        null = posix.open("/dev/null", posix.O_RDONLY)
        if null != 0:
            posix.dup2(null, 0)
            posix.close(null)
        for extra in fds[1:]:
            posix.close(extra)
        _watcher(fds[0], [tell])
    finally:
        posix._exit(0)


def _watcher(fd, tell):
    """One command's watcher (see the module's docstring); never returns. Once it has answered,
    it tells the helper (`_next`) to fork the next spare (that fork then runs beside bwrap's
    start, not before the answer)."""
    try:
        channel = _socket.socket(_socket.AF_UNIX, _socket.SOCK_SEQPACKET, 0, fd)
        data, fds = _receive(channel, MAX_SPEC, 1)
        if len(fds) != 1:
            return
        info, lines = fds[0], []
        spec = marshal.loads(data)
        try:
            mounts, clean_up = launch.prepare(spec, lines.append)
        except (launch.Refused, OSError):
            _send(channel, marshal.dumps(("refused", lines)))
            return
        _send(channel, marshal.dumps(("go", mounts, lines)))
        _next(tell)
        try:
            said, got = _receive(channel, 16, 2)
        except OSError:
            said, got = b"", []
        pidfd = None
        if said == b"started" and got:
            posix.dup2(got[0], 1)  # the command's output: what the clean-up says reaches its result
            posix.dup2(got[0], 2)
            posix.close(got[0])
            pidfd = got[1] if len(got) > 1 else None
        else:
            for extra in got:
                posix.close(extra)
        channel.close()
        launch._watch(pidfd, None, info, clean_up)
    finally:
        _next(tell)
        posix._exit(0)


def _next(tell):
    """Tell the helper to fork the next spare, once: `tell` is a list holding the pipe's end
    until then (its number, once closed, may be reused by a lock's descriptor)."""
    while tell:
        fd = tell.pop()
        try:
            posix.write(fd, b"j")
        except OSError:
            pass  # the helper is gone
        posix.close(fd)


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
