"""What every model adapter's HTTP needs, in one place: keep-alive connections bound to the event
loop that uses them (httpcore's here, aiohttp's in `aiohttp_transport.py`), socket options,
compact JSON bodies, closing a streamed response even while being cancelled, and telling an API
URL that never answered (a misconfiguration) from an outage of one that did."""

from __future__ import annotations

import socket
import sys
from collections.abc import AsyncIterator, Mapping
from functools import lru_cache
from typing import Any, Protocol

import httpx

from ..core.environ import environ_now
from ..core.types import compact_json
from ..core.fastclass import dataclass

_PROXY_VARS = frozenset({"http_proxy", "https_proxy", "all_proxy"})


def proxy_variables() -> list[str]:
    """The proxy variables set in this process's environment (HTTPS_PROXY, all_proxy, …), sorted."""
    return sorted(k for k in environ_now() if k.lower() in _PROXY_VARS)


def socket_options() -> list[tuple[int, int, int]]:
    # Nagle + delayed ACK cost ~40 ms per call on loopback (measured); keepalive probes keep a
    # long, quiet stream alive through NAT and notice a dead peer.
    options = [(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1), (socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1)]
    for name, value in (("TCP_KEEPIDLE", 60), ("TCP_KEEPINTVL", 60), ("TCP_KEEPCNT", 5)):
        opt = getattr(socket, name, None)
        if opt is not None:
            options.append((socket.IPPROTO_TCP, opt, value))
    return options


def encode_json(body: dict[str, Any]) -> bytes:
    return compact_json(body)


# Sent as the key to an API on this machine when none is set: a loopback server (the simulator, a
# local model) wants the header, never a real secret. A remote URL still needs a real key.
LOOPBACK_KEY = "loopback-no-key"


def is_loopback(url: str) -> bool:
    """Whether `url` points at this machine (127.0.0.0/8, ::1, localhost)."""
    from urllib.parse import urlsplit

    host = (urlsplit(url).hostname or "").lower()
    return host == "localhost" or host == "::1" or host.startswith("127.")


def checked_base_url(url: str, variable: str, *, appends: str) -> str:
    """`url` without a trailing slash, or a `UsageError` naming `variable` when it cannot be
    an API's base URL: no http(s) scheme or no host, or a path that already ends with what
    the client appends itself (`appends`: "/v1" for Anthropic's `/v1/messages`)."""
    from urllib.parse import urlsplit

    from ..core.errors import UsageError

    base = url.strip().rstrip("/")
    parts = urlsplit(base)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise UsageError(f"{variable}={url!r} is not a URL: expected http:// or https:// and a host, such as "
                         f"https://api.example.com or http://127.0.0.1:8080")
    if appends and parts.path.rstrip("/").endswith(appends):
        fixed = base[: -len(appends)]
        raise UsageError(f"{variable}={url!r} ends with {appends}, which loopwright adds itself (requests would "
                         f"go to {appends}{appends}/…): set it to {fixed}")
    return base


def running_loop() -> object | None:
    asyncio = sys.modules.get("asyncio")
    if asyncio is None:
        return None
    try:
        loop: object = asyncio.get_running_loop()  # sys.modules gives an untyped module
        return loop
    except RuntimeError:  # not under asyncio (trio)
        return None


class Reply(Protocol):
    """A model API's response, whichever library carried it: its status and headers at once, the
    body read whole or streamed, then closed. Failures are raised as httpx's exception types."""

    @property
    def status(self) -> int: ...

    @property
    def headers(self) -> Mapping[str, str]: ...

    async def read(self) -> bytes: ...

    def chunks(self) -> AsyncIterator[bytes]: ...

    async def close(self) -> None: ...


class HttpClient(Protocol):
    """POSTs to one API over keep-alive connections (`LoopBoundClient`, `AiohttpClient`)."""

    async def post(self, url: str, content: bytes, headers: Mapping[str, str]) -> Reply: ...

    async def aclose(self) -> None: ...


class _HttpxReply:
    """A response through httpx's client (the path with a proxy set)."""

    __slots__ = ("_response", "status", "headers")

    def __init__(self, response: httpx.Response) -> None:
        self._response = response
        self.status, self.headers = response.status_code, response.headers

    async def read(self) -> bytes:
        return await self._response.aread()

    def chunks(self) -> AsyncIterator[bytes]:
        return self._response.aiter_bytes()

    async def close(self) -> None:
        """Close even while being cancelled: a cancelled scope would otherwise abort the close."""
        import anyio

        with anyio.CancelScope(shield=True):
            await self._response.aclose()


# Connections a client may hold at once, as the official SDKs allow: one per loop in flight, for
# a thousand loops sharing one client.
MAX_CONNECTIONS = 1000

class LoopBoundClient:
    """Keep-alive connections to one API, made on first use, on httpcore (httpx's transport)
    directly: httpx's client layer (its request and response models, auth, redirects and cookie
    flows) costs more CPU a call than the rest of the call, and the adapters use none of it.
    With a proxy variable set, httpx's client carries the calls (it applies proxies and NO_PROXY).
    Pooled connections belong to the event loop that opened them; a sync wrapper runs one loop per
    call, so connections from a loop that is gone are dropped, not awaited. Any number of loops may
    share the client (`Connections`)."""

    def __init__(self, base_url: str, timeout: httpx.Timeout) -> None:
        self.base_url, self.timeout = base_url, timeout
        self._pool: Connections | httpx.AsyncClient | None = None
        self._loop: object | None = None
        self._extensions = {"timeout": timeout.as_dict()}
        self._targets: dict[str, tuple[Any, bytes, bytes]] = {}  # url -> (httpcore.URL, Host, origin)
        self._headers: tuple[Mapping[str, str], list[tuple[bytes, bytes]]] | None = None

    def _current(self) -> Connections | httpx.AsyncClient:
        loop = running_loop()
        if self._pool is not None and loop is not self._loop:
            self._pool = None
        if self._pool is None:
            self._loop = loop
            if proxy_variables():
                # httpx applies env proxies (and NO_PROXY) only to transports it builds itself.
                limits = httpx.Limits(max_connections=MAX_CONNECTIONS, max_keepalive_connections=MAX_CONNECTIONS,
                                      keepalive_expiry=30.0)
                self._pool = httpx.AsyncClient(timeout=self.timeout, limits=limits)
            else:
                # Plain http (a loopback server) never uses TLS: skip building a verifying SSL
                # context, which loads the CA bundle (measured ~40 ms of start-up).
                self._pool = Connections(verify=not self.base_url.startswith("http://"))
        return self._pool

    async def post(self, url: str, content: bytes, headers: Mapping[str, str]) -> Reply:
        pool = self._current()
        if isinstance(pool, httpx.AsyncClient):
            return _HttpxReply(await pool.send(pool.build_request("POST", url, content=content, headers=headers),
                                               stream=True))
        import httpcore

        target, host, origin = self._target(url)
        request = httpcore.Request(b"POST", target, headers=[
            (b"host", host), (b"content-length", b"%d" % len(content)), *self._encoded(headers)],
            content=content, extensions=self._extensions)
        try:
            connection = await pool.take(target.origin, origin, self.timeout.pool)
            try:
                response = await connection.handle_async_request(request)
            except BaseException:
                await pool.give_back(connection, origin)
                raise
        except _core_errors() as exc:
            raise _from_httpcore(exc) from exc
        return _CoreReply(response, pool, connection, origin)

    def _target(self, url: str) -> tuple[Any, bytes, bytes]:
        """`url` as httpcore takes it, its Host header and its origin (scheme and host), parsed once
        (by httpx's parser: an invalid URL raises httpx.InvalidURL, as through httpx's client)."""
        found = self._targets.get(url)
        if found is None:
            import httpcore

            parsed = httpx.URL(url)
            if parsed.scheme not in ("http", "https"):
                raise httpx.UnsupportedProtocol(f"{url!r}: expected an http:// or https:// URL")
            found = (httpcore.URL(scheme=parsed.raw_scheme, host=parsed.raw_host, port=parsed.port,
                                  target=parsed.raw_path), parsed.netloc, parsed.raw_scheme + b"://" + parsed.netloc)
            self._targets[url] = found
        return found

    def _encoded(self, headers: Mapping[str, str]) -> list[tuple[bytes, bytes]]:
        """The headers as bytes. An adapter sends the same mapping, never changed, on every call:
        the last one's encoding is kept. Bodies come back as sent (no content coding asked for)."""
        kept = self._headers
        if kept is not None and kept[0] is headers:
            return kept[1]
        encoded = [(k.lower().encode("ascii"), v.encode("latin-1")) for k, v in headers.items()
                   if k.lower() not in ("host", "content-length", "accept-encoding")]
        encoded.append((b"accept-encoding", b"identity"))
        self._headers = (headers, encoded)
        return encoded

    async def aclose(self) -> None:
        pool, self._pool = self._pool, None
        if pool is not None and self._loop is running_loop():  # else its loop is gone (see _current)
            await pool.aclose()


@lru_cache(maxsize=1)
def _core_errors() -> tuple[type[BaseException], ...]:
    """httpcore's failures (imported when one is raised: httpx imports httpcore lazily too)."""
    import httpcore

    return (httpcore.TimeoutException, httpcore.NetworkError, httpcore.ProtocolError, httpcore.UnsupportedProtocol,
            httpcore.ProxyError)


def _from_httpcore(exc: BaseException) -> Exception:
    """httpx's exception of the same name as httpcore's `exc` (as httpx's own transport maps them),
    so the adapters translate failures in one place whichever layer raised them."""
    kind = getattr(httpx, type(exc).__name__, None)
    if not (isinstance(kind, type) and issubclass(kind, httpx.TransportError)):
        kind = httpx.TransportError
    return kind(str(exc) or type(exc).__name__)


class _CoreReply:
    """A response from httpcore, as `Reply` describes; its connection is given back when it is
    closed (once)."""

    __slots__ = ("_response", "_owner", "_connection", "_origin", "status", "headers")

    def __init__(self, response: Any, owner: Connections, connection: Any, origin: Any) -> None:
        self._response, self._owner, self._connection, self._origin = response, owner, connection, origin
        self.status: int = response.status
        self.headers: Mapping[str, str] = httpx.Headers(response.headers)

    async def read(self) -> bytes:
        return b"".join([chunk async for chunk in self.chunks()])

    async def chunks(self) -> AsyncIterator[bytes]:
        try:
            async for chunk in self._response.aiter_stream():
                yield chunk
        except _core_errors() as exc:
            raise _from_httpcore(exc) from exc

    async def close(self) -> None:
        """Close even while being cancelled: a cancelled scope would otherwise abort the close."""
        import anyio

        connection, self._connection = self._connection, None
        if connection is None:
            return
        with anyio.CancelScope(shield=True):
            try:
                await self._response.aclose()  # a body not read to its end closes the connection
            finally:
                await self._owner.give_back(connection, self._origin)


class Connections:
    """Keep-alive connections (httpcore's, one request at a time each) for any number of loops:
    a request takes an idle connection to its origin (the one freed last, so one loop's calls
    reuse one connection), or opens one while fewer than `most` are open; past that it waits, up
    to the pool timeout, for one to be freed. Taking and giving back cost no scan of the others:
    httpcore's own pool rescans all its connections on every request and on every response's
    end, some checks a system call each, so a pool of a thousand spends its time choosing one
    (bench/many_loops.py --shared-client)."""

    def __init__(self, *, verify: bool, most: int | None = None) -> None:
        self._verify = verify
        self._ssl: Any = None
        self._most = most or MAX_CONNECTIONS
        self._open = 0
        self._idle: dict[bytes, list[Any]] = {}  # by origin (b"https://host:port"): idle connections, the last freed last
        self._freed: Any = None  # an anyio Event set when a connection is freed while one waits
        self._closed = False

    async def take(self, origin: Any, key: bytes, pool_timeout: float | None) -> Any:
        """A connection to `origin` (`key` names it: b"scheme://host[:port]"), idle or new."""
        import anyio
        import httpcore

        while True:
            idle = self._idle.get(key)
            while idle:
                connection = idle.pop()
                if connection.is_idle() and not connection.has_expired():
                    return connection
                self._open -= 1
                await _close(connection)
            if self._open < self._most:
                break
            if self._freed is None:
                self._freed = anyio.Event()
            try:
                with anyio.fail_after(pool_timeout):
                    await self._freed.wait()
            except TimeoutError:
                raise httpx.PoolTimeout(f"no connection was freed within {pool_timeout} s") from None
        if self._verify and self._ssl is None:  # the SSL context, built once for every connection
            self._ssl = httpx.create_ssl_context(verify=True)
        self._open += 1
        return httpcore.AsyncHTTPConnection(origin=origin, ssl_context=self._ssl, keepalive_expiry=30.0,
                                            socket_options=socket_options())

    async def give_back(self, connection: Any, key: bytes) -> None:
        if not self._closed and connection.is_idle() and not connection.is_closed():  # (a failed connect is "idle")
            self._idle.setdefault(key, []).append(connection)
        else:
            self._open -= 1
            await _close(connection)
        if self._freed is not None:
            self._freed.set()
            self._freed = None

    async def aclose(self) -> None:
        self._closed = True
        idle, self._idle = self._idle, {}
        for connections in idle.values():
            for connection in connections:
                self._open -= 1
                await _close(connection)


async def _close(connection: Any) -> None:
    import anyio

    with anyio.CancelScope(shield=True):
        await connection.aclose()


# Base URLs that gave an HTTP response (any status) in this process. Until one has, a refused
# connection or a failed name lookup is far likelier a wrong URL than an outage.
_ANSWERED: set[str] = set()


@dataclass(frozen=True)
class Endpoint:
    """An API base URL and where it came from, for the one line that says it cannot be reached.
    `origin` completes "the URL comes from …"; `fix` says what to change."""

    base_url: str
    origin: str
    fix: str

    def answered(self) -> None:
        _ANSWERED.add(self.base_url)

    def unreachable(self, exc: BaseException) -> str | None:
        """The one-line explanation when `exc` is a refused connection or a failed name lookup and
        this URL never answered in this process; None when it is something else (or an outage)."""
        if self.base_url in _ANSWERED:
            return None
        cause = _connect_failure(exc)
        if cause is None:
            return None
        proxies = proxy_variables()
        if proxies:  # the refusal may be the proxy's
            cause += f", through the proxy set in {proxies[0]}"
        return f"cannot reach the model API at {self.base_url} ({cause}); the URL comes from {self.origin}: {self.fix}"


def _connect_failure(exc: BaseException) -> str | None:
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:  # httpx wraps httpcore wraps the OSError
        seen.add(id(current))
        if isinstance(current, ConnectionRefusedError):
            return "connection refused: nothing listens there"
        if isinstance(current, socket.gaierror):
            return "the host name could not be resolved"
        current = current.__cause__ or current.__context__
    return None


def endpoint_for(base_url: str, variable: str, default: str, env: Any, origins: Any) -> Endpoint:
    """Where `base_url` came from: `variable` (set in the environment, or by a settings file
    named in `origins`), or else the built-in `default`."""
    if env.get(variable):
        where = origins.get(variable)
        if where:
            return Endpoint(base_url, f"{variable} in the `env` of {where}",
                            f"check that the server is running and the address is right, or remove {variable} "
                            f"there to use {default}")
        return Endpoint(base_url, f"the environment variable {variable}",
                        f"check that the server is running and the address is right, or unset {variable} "
                        f"to use {default}")
    if base_url.rstrip("/") == default.rstrip("/"):
        return Endpoint(base_url, "the default",
                        "check the network connection, DNS and any proxy (HTTPS_PROXY), or set "
                        f"{variable} to the API you mean")
    return Endpoint(base_url, "the base URL given to the client", "check that the server is running and the address is right")
