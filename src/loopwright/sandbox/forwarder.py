"""The sandbox's way out to the network proxy: `python -I -S -c SOURCE FD -- COMMAND...`, run
inside bubblewrap (its own network namespace: nothing but its own loopback) before the command.
Built-in modules only; passed as source text, so it runs wherever loopwright is installed.

It listens on 127.0.0.1 (a free port, in the sandbox's namespace), starts COMMAND with the proxy
variables pointing there, and waits for it: its exit status becomes this process's. For each
connection it accepts, it asks loopwright for a stream on FD, the inherited end of a unix socket
pair made on the host: it writes one byte (`c`), and loopwright answers one byte with, for `y`,
the sandbox's end of a fresh connected pair attached (SCM_RIGHTS; receiving is not filtered, and
nothing here creates a unix socket, which the seccomp filter forbids). It then copies bytes both
ways. Every such stream ends at the proxy: nothing on FD reaches anything else, so the command
gains nothing by using FD itself.
"""

# The interpreter's built-in modules only: `socket`, `signal` and `threading` would cost more
# than the rest of the start-up (they build enums); these add nothing measurable to a command.
import _signal  # type: ignore[import-not-found]  # the C module behind `signal`: typeshed has no stub for it
import _socket
import _thread
import os
import sys
import time

REFUSED = 126
_CHUNK = 65536


def main(argv):
    if len(argv) < 4 or argv[2] != "--" or not argv[1].isdigit():
        _say("the sandbox's network forwarder expects FD -- COMMAND...")
        return REFUSED
    try:
        channel = _socket.socket(fileno=int(argv[1]))
        os.set_inheritable(channel.fileno(), False)  # the command never holds the channel
        listener = _socket.socket(_socket.AF_INET, _socket.SOCK_STREAM)
        listener.bind(("127.0.0.1", 0))
        listener.listen(128)
        address = f"http://127.0.0.1:{listener.getsockname()[1]}"
        env = dict(os.environ)
        for name in ("http_proxy", "https_proxy", "all_proxy"):
            env[name] = env[name.upper()] = address
        env["no_proxy"] = env["NO_PROXY"] = "localhost,127.0.0.1"
        # Python ignores SIGPIPE and SIGXFSZ; the command gets the usual dispositions back.
        pid = os.posix_spawnp(argv[3], argv[3:], env, setsigdef=(_signal.SIGPIPE, _signal.SIGXFSZ))
    except OSError as exc:
        _say(f"the sandbox's network forwarder could not start: {exc}")
        return REFUSED
    _thread.start_new_thread(_accept, (listener, channel))
    status = os.waitpid(pid, 0)[1]
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        _signal.signal(sig, _signal.SIG_DFL)
        os.kill(os.getpid(), sig)  # end the way the command did, so the caller sees the signal
        return 128 + sig
    return os.waitstatus_to_exitcode(status)


def _accept(listener, channel):
    while True:
        try:
            client = _socket.socket(fileno=listener._accept()[0])
        except OSError:
            time.sleep(0.05)  # out of descriptors, say: let connections end rather than spin
            continue
        try:
            upstream = _stream(channel)
        except OSError:
            upstream = None
        if upstream is None:  # loopwright refused (too many connections) or is gone
            client.close()
            continue
        _thread.start_new_thread(_connection, (client, upstream))


def _stream(channel):
    """A new stream to the proxy, or None when loopwright said no."""
    channel.sendall(b"c")
    data, ancillary, _flags, _ = channel.recvmsg(1, _socket.CMSG_SPACE(4), _socket.MSG_CMSG_CLOEXEC)
    fds = [int.from_bytes(d[:4], sys.byteorder) for level, kind, d in ancillary
           if level == _socket.SOL_SOCKET and kind == _socket.SCM_RIGHTS and len(d) >= 4]
    if data != b"y" or len(fds) != 1:
        for fd in fds:
            os.close(fd)
        if not data:
            raise OSError("loopwright closed the channel")
        return None
    return _socket.socket(fileno=fds[0])


def _connection(client, upstream):
    back_done = _thread.allocate_lock()
    back_done.acquire()
    _thread.start_new_thread(_pump, (upstream, client, back_done))
    _pump(client, upstream, None)
    back_done.acquire()  # both ways finished
    client.close()
    upstream.close()


def _pump(source, sink, done):
    try:
        while True:
            data = source.recv(_CHUNK)
            if not data:
                break
            sink.sendall(data)
    except OSError:
        pass
    try:
        sink.shutdown(_socket.SHUT_WR)  # pass the end on: the other side may still answer
    except OSError:
        pass
    if done is not None:
        done.release()


def _say(text):
    os.write(2, f"loopwright: {text}\n".encode("utf-8", "replace"))


if __name__ == "__main__":
    code = main(sys.argv)
    os._exit(code)  # the connection threads end with the process
