"""The network proxy of sandboxed commands allowed some domains (`sandbox.network.allowedDomains`).

The command keeps its own network namespace (nothing but its own loopback); `forwarder.py`,
started inside before it, is its only way out, and leads here only. Per command loopwright makes a
`Channel`: a unix socket pair whose sandbox end the command's process inherits. For each TCP
connection the forwarder accepts, it asks on that end for a stream; the proxy makes a fresh pair,
sends one end back (SCM_RIGHTS) and serves the other as one proxy client: HTTP `CONNECT host:port`
(tunnels, for https and anything else) or a plain-HTTP request with an absolute `http://` URL.
Each host is checked against the command's allowlist (`core/domains.py`), resolved here, and
connected to at an address that passed the check, never resolved twice. A refused host gets
403, a body naming the setting that would allow it, and a line in the command's refusal log.

The proxy runs on one thread with its own event loop, started when the first channel opens and
stopped when the last one ends (a command's channel ends when its sandbox closes its end, or when
loopwright closes it after the command). Bounded: the request header's size and the time to send
it, connections at once (per command and in all), the time to connect, and idle tunnels.
"""

from __future__ import annotations

import asyncio
import os
import socket
import sys
import threading
from array import array
from functools import lru_cache
from typing import Awaitable, Callable

from ..core.fastclass import dataclass
from ..core.domains import SETTING, Allowlist, Match, address_refusal, ip_literal, normalise_host

__all__ = ["Channel", "Limits", "NetworkProxy", "Resolver", "shared_proxy"]

FORWARDER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "forwarder.py")
Resolver = Callable[[str, int], Awaitable[list[str]]]  # (host, port) -> addresses
MAX_LOGGED = 20  # refused hosts kept per command
CLOSE_WAIT_S = 5.0  # for the proxy's thread to let a channel go (it takes microseconds)
_CHUNK = 65536
# headers that concern one hop only: never passed on (Connection's own list is added per request)
_HOP = frozenset({"connection", "keep-alive", "proxy-connection", "proxy-authorization", "proxy-authenticate",
                  "te", "trailer", "upgrade", "host"})
_TOKEN = frozenset("!#$%&'*+-.^_`|~0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")


@dataclass(frozen=True, slots=True)
class Limits:
    max_head: int = 64 * 1024  # a request line and its headers, bytes
    head_timeout_s: float = 30.0  # to send them
    connect_timeout_s: float = 30.0  # to resolve and connect upstream
    idle_timeout_s: float = 300.0  # a connection with no bytes either way is closed
    connections: int = 128  # at once, every command together (each holds two descriptors here)
    per_command: int = 64  # at once, one command


class NetworkProxy:
    """Channels for commands; the thread that serves them runs while any is open. `resolver`
    replaces the system's (tests name hosts that point at their own servers)."""

    def __init__(self, *, resolver: Resolver | None = None, limits: Limits = Limits()) -> None:
        self.resolver = resolver
        self.limits = limits
        self._lock = threading.Lock()
        self._server: _Server | None = None

    def open(self, allowlist: Allowlist) -> Channel:
        """A channel for one command; pass `channel.fd` to its process, start it with
        `channel.command(argv)` inside the sandbox, then `release()` (or `close()` when done)."""
        with self._lock:
            if self._server is None or self._server.stopping:
                self._server = _Server(self)
            channel = Channel(allowlist, self._server)
            self._server.channels.add(channel)
            self._server.loop.call_soon_threadsafe(self._server.attach, channel)
            return channel

    @property
    def running(self) -> bool:
        """A thread serves channels now."""
        with self._lock:
            return self._server is not None and not self._server.stopping


@lru_cache(maxsize=1)
def shared_proxy() -> NetworkProxy:
    """The process's proxy: every session's sandboxed commands share its thread."""
    return NetworkProxy()


class Channel:
    """One command's way to the proxy, and the hosts the proxy refused it."""

    def __init__(self, allowlist: Allowlist, server: _Server) -> None:
        self.allowlist = allowlist
        self._server = server
        self._host, self._box = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        self._host.setblocking(False)
        self._refused: dict[str, str] = {}
        self._closed = False
        self._ended = threading.Event()  # set on the proxy's thread once the channel is gone
        self.tasks: set[asyncio.Task[None]] = set()

    @property
    def fd(self) -> int:
        """The sandbox's end: inherited by the command's process (`pass_fds`)."""
        return self._box.fileno()

    def command(self, argv: list[str]) -> list[str]:
        """`argv` started by the forwarder, which runs inside the sandbox."""
        return [sys.executable, "-I", "-S", "-c", _forwarder_source(), str(self.fd), "--", *argv]

    def release(self) -> None:
        """Close loopwright's copy of the sandbox's end (once the process has it): the channel
        then ends when the sandbox's copies do."""
        self._box.close()

    def close(self) -> tuple[str, ...]:
        """End the channel and its connections; returns `refusals()`. When it returns, the
        proxy holds nothing of the channel (and has stopped if it was the last)."""
        self.release()
        with self._server.proxy._lock:
            if not self._closed:
                self._closed = True
                self._server.loop.call_soon_threadsafe(self._server.detach, self)
        self._ended.wait(CLOSE_WAIT_S)
        return self.refusals()

    def refusals(self) -> tuple[str, ...]:
        """One line per host refused so far, for the command's result."""
        return tuple(f"the sandbox's proxy refused {host} ({why})" for host, why in list(self._refused.items()))

    def refuse(self, host: str, why: str) -> None:
        if len(self._refused) < MAX_LOGGED:
            self._refused.setdefault(_printable(normalise_host(host) or host), why)

    def __enter__(self) -> Channel:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class _Server:
    """One run of the proxy's thread and event loop."""

    def __init__(self, proxy: NetworkProxy) -> None:
        self.proxy = proxy
        self.limits = proxy.limits
        self.channels: set[Channel] = set()  # under proxy._lock
        self.stopping = False
        self.connections = 0
        self.loop = asyncio.new_event_loop()
        threading.Thread(target=self._run, name="loopwright-network-proxy", daemon=True).start()

    def _run(self) -> None:
        loop = self.loop
        asyncio.set_event_loop(loop)
        try:
            loop.run_forever()
            tasks = asyncio.all_tasks(loop)
            for task in tasks:
                task.cancel()
            loop.run_until_complete(asyncio.gather(*tasks, return_exceptions=True))
            loop.run_until_complete(loop.shutdown_default_executor())
        finally:
            loop.close()

    # ---- the channel: requests for streams (runs on the proxy's thread)

    def attach(self, channel: Channel) -> None:
        if channel._closed:
            return
        self.loop.add_reader(channel._host.fileno(), self._requested, channel)

    def detach(self, channel: Channel) -> None:
        if channel._host.fileno() != -1:  # not detached yet (its end and loopwright's close may both ask)
            self.loop.remove_reader(channel._host.fileno())
            channel._host.close()
        for task in list(channel.tasks):
            task.cancel()
        with self.proxy._lock:
            channel._closed = True
            self.channels.discard(channel)
            if not self.channels and not self.stopping:
                self.stopping = True
                self.loop.stop()
        channel._ended.set()

    def _requested(self, channel: Channel) -> None:
        try:
            data = channel._host.recv(256)
        except BlockingIOError:
            return
        except OSError:
            data = b""
        # each byte asks for one stream; anything else, or an answer the sandbox does not read
        # (its end full), ends the channel
        if not data or data.strip(b"c"):
            self.detach(channel)
            return
        for _ in data:
            if not self._answer(channel):
                self.detach(channel)
                return

    def _answer(self, channel: Channel) -> bool:
        if len(channel.tasks) >= self.limits.per_command or self.connections >= self.limits.connections:
            return _send(channel._host, b"n", None)
        mine, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            sent = _send(channel._host, b"y", theirs.fileno())
        finally:
            theirs.close()
        if not sent:
            mine.close()
            return False
        task = self.loop.create_task(self._serve(channel, mine))
        channel.tasks.add(task)
        self.connections += 1

        def done(t: asyncio.Task[None]) -> None:
            channel.tasks.discard(t)
            self.connections -= 1

        task.add_done_callback(done)
        return True

    # ---- one client connection

    async def _serve(self, channel: Channel, sock: socket.socket) -> None:
        writer = None
        try:
            reader, writer = await asyncio.open_connection(sock=sock, limit=self.limits.max_head)
            await self._exchange(channel, reader, writer)
        except (OSError, asyncio.IncompleteReadError, asyncio.TimeoutError):
            pass  # the client went away or stalled: nothing to tell anyone
        finally:
            if writer is not None:
                writer.close()
            else:
                sock.close()

    async def _exchange(self, channel: Channel, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        limits = self.limits
        try:
            head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), limits.head_timeout_s)
        except (asyncio.LimitOverrunError, ValueError):
            return await _reply(writer, 431, "Request Header Fields Too Large",
                                f"loopwright's sandbox proxy takes request headers up to {limits.max_head} bytes")
        except asyncio.TimeoutError:
            return await _reply(writer, 408, "Request Timeout", "the request's header did not arrive in time")
        request = parse_request(head)
        if isinstance(request, str):
            return await _reply(writer, 400, "Bad Request", f"loopwright's sandbox proxy: {request}")
        method, host, port, upstream_head = request
        match = channel.allowlist.match(host)
        if match is None:
            return await self._refuse(channel, writer, host, f"not in {SETTING}")
        try:
            addresses = await asyncio.wait_for(self._resolve(match, port), limits.connect_timeout_s)
        except (OSError, asyncio.TimeoutError) as exc:
            return await _reply(writer, 502, "Bad Gateway", f"cannot resolve {match.host}: {_why(exc)}")
        usable = [a for a in addresses if address_refusal(a, match) is None]
        if not usable:
            why = address_refusal(addresses[0], match) if addresses else "it resolves to no address"
            return await self._refuse(channel, writer, host, why or "")
        try:
            up_reader, up_writer = await asyncio.wait_for(_connect(usable, port), limits.connect_timeout_s)
        except (OSError, asyncio.TimeoutError) as exc:
            return await _reply(writer, 502, "Bad Gateway", f"cannot connect to {match.host}:{port}: {_why(exc)}")
        try:
            if upstream_head is None:
                writer.write(b"HTTP/1.1 200 Connection established\r\n\r\n")
            else:
                up_writer.write(upstream_head)
            await _splice(reader, writer, up_reader, up_writer, limits.idle_timeout_s)
        finally:
            up_writer.close()

    async def _refuse(self, channel: Channel, writer: asyncio.StreamWriter, host: str, why: str) -> None:
        channel.refuse(host, why)  # logged before the answer: the command sees 403 after the log has it
        body = (f"loopwright's sandbox refused {_printable(host)}: {why}. Hosts are allowed by {SETTING} in your "
                "user settings or --settings (a project's settings cannot open the network).")
        await _reply(writer, 403, "Forbidden", body)

    async def _resolve(self, match: Match, port: int) -> list[str]:
        literal = ip_literal(match.host)
        if literal is not None:
            return [str(literal)]
        if self.proxy.resolver is not None:
            return list(await self.proxy.resolver(match.host, port))
        found = await self.loop.getaddrinfo(match.host, port, type=socket.SOCK_STREAM)
        return list(dict.fromkeys(str(info[4][0]) for info in found))


def parse_request(head: bytes) -> tuple[str, str, int, bytes | None] | str:
    """(method, host, port, the head to send upstream — None for CONNECT) or what is wrong.
    A forwarded request names its server in an absolute `http://` URL; it goes on with the path
    only, the URL's host as Host, the hop-by-hop headers dropped and `Connection: close`, so one
    connection carries one request (a second would go to the same server anyway)."""
    lines = head.decode("latin-1")[:-4].split("\r\n")
    parts = lines[0].split(" ")
    if len(parts) != 3 or not parts[2].startswith("HTTP/1.") or not parts[0] or set(parts[0]) - _TOKEN:
        return "expected a request line `METHOD TARGET HTTP/1.x`"
    method, target, version = parts
    if any(ord(c) < 0x21 or ord(c) == 0x7F for c in target):
        return "the request target has control characters"
    headers: list[tuple[str, str]] = []
    for line in lines[1:]:
        name, sep, value = line.partition(":")
        if not sep or not name or set(name) - _TOKEN or "\r" in value or "\n" in value:
            return f"malformed header line {line[:60]!r}"
        headers.append((name, value.strip()))
    if method == "CONNECT":
        authority = _authority(target)
        return authority if isinstance(authority, str) else (method, *authority, None)
    if not target[:7].lower() == "http://":
        return ("only absolute http:// URLs are forwarded (https and other protocols go through CONNECT, "
                "which clients do when HTTPS_PROXY is set)")
    from urllib.parse import urlsplit

    url = urlsplit(target)
    if "@" in url.netloc:
        return "user names and passwords in the URL are not forwarded"
    authority = _authority(url.netloc if ":" in url.netloc.rsplit("]", 1)[-1] else f"{url.netloc}:80")
    if isinstance(authority, str):
        return authority
    path = (url.path or "/") + (f"?{url.query}" if url.query else "")
    dropped = _HOP | {t.strip().lower() for n, v in headers if n.lower() == "connection" for t in v.split(",")}
    out = [f"{method} {path} {version}", f"Host: {url.netloc}"]
    out += [f"{n}: {v}" for n, v in headers if n.lower() not in dropped]
    out += ["Connection: close", "", ""]
    return method, *authority, "\r\n".join(out).encode("latin-1")


def _authority(text: str) -> tuple[str, int] | str:
    """`host:port` (IPv6 in brackets) as (host, port), or what is wrong."""
    host, sep, port = text.rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
        return f"expected host:port, got {text[:80]!r}"
    if host.startswith("["):
        if not host.endswith("]"):
            return f"expected host:port, got {text[:80]!r}"
        host = host[1:-1]
    return host, int(port)


async def _connect(addresses: list[str], port: int) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    error: OSError = OSError("no address")
    for address in addresses:
        try:
            return await asyncio.open_connection(address, port)
        except OSError as exc:
            error = exc
    raise error


async def _splice(a_reader: asyncio.StreamReader, a_writer: asyncio.StreamWriter,
                  b_reader: asyncio.StreamReader, b_writer: asyncio.StreamWriter, idle_s: float) -> None:
    """Copy both ways until both ends are done, one fails, or nothing moved for `idle_s`."""
    loop = asyncio.get_running_loop()
    last = [loop.time()]

    async def pump(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while data := await reader.read(_CHUNK):
            last[0] = loop.time()
            writer.write(data)
            await writer.drain()
        if writer.can_write_eof():
            writer.write_eof()  # half-closed: the other way may still carry the answer

    tasks = {loop.create_task(pump(a_reader, b_writer)), loop.create_task(pump(b_reader, a_writer))}
    try:
        while tasks:
            done, tasks = await asyncio.wait(tasks, timeout=max(0.0, last[0] + idle_s - loop.time()))
            if any(t.exception() is not None for t in done):
                return  # one side failed: end both
            if not done and loop.time() - last[0] >= idle_s:
                return
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)


async def _reply(writer: asyncio.StreamWriter, status: int, reason: str, text: str) -> None:
    body = (text + "\n").encode("utf-8", "replace")
    writer.write(f"HTTP/1.1 {status} {reason}\r\nContent-Type: text/plain; charset=utf-8\r\n"
                 f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n".encode("latin-1") + body)
    await writer.drain()


def _send(sock: socket.socket, tag: bytes, fd: int | None) -> bool:
    """One answer on a channel; False when it cannot go now (the sandbox does not read)."""
    ancillary = [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array("i", [fd]))] if fd is not None else []
    try:
        return sock.sendmsg([tag], ancillary) == 1
    except OSError:
        return False


def _printable(host: str) -> str:
    text = "".join(c if c.isprintable() else "?" for c in host[:100])
    return text + ("…" if len(host) > 100 else "")


def _why(exc: BaseException) -> str:
    if isinstance(exc, asyncio.TimeoutError):
        return "timed out"
    return getattr(exc, "strerror", None) or str(exc) or type(exc).__name__


@lru_cache(maxsize=1)
def _forwarder_source() -> str:
    with open(FORWARDER, encoding="utf-8") as f:
        return f.read()
