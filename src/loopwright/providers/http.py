"""What every model adapter's HTTP needs, in one place: a keep-alive httpx client bound to the
event loop that uses it, socket options, compact JSON bodies, closing a streamed response even
while being cancelled, and telling an API URL that never answered (a misconfiguration) from an
outage of one that did."""

from __future__ import annotations

import socket
import sys
from collections.abc import AsyncIterator, Mapping
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
# Connections per shard (see `ShardedTransport`). httpcore's pool does work quadratic in its
# connections on every request (it rescans them all to choose one and to expire idle ones):
# measured in bench/many_loops.py --shared-client, shards of this size keep that work small.
SHARD_SIZE = 1


class LoopBoundClient:
    """One keep-alive `httpx.AsyncClient` for one API, made on first use. Pooled connections
    belong to the event loop that opened them; a sync wrapper runs one loop per call, so a
    client from a loop that is gone is dropped, not awaited. Any number of loops may share it:
    its connections are split into shards (`ShardedTransport`)."""

    def __init__(self, base_url: str, timeout: httpx.Timeout) -> None:
        self.base_url, self.timeout = base_url, timeout
        self._client: httpx.AsyncClient | None = None
        self._loop: object | None = None

    def get(self) -> httpx.AsyncClient:
        loop = running_loop()
        if self._client is not None and loop is not self._loop:
            self._client = None
        if self._client is None:
            self._loop = loop
            if proxy_variables():
                # httpx applies env proxies (and NO_PROXY) only to transports it builds itself.
                limits = httpx.Limits(max_connections=MAX_CONNECTIONS, max_keepalive_connections=MAX_CONNECTIONS,
                                      keepalive_expiry=30.0)
                self._client = httpx.AsyncClient(timeout=self.timeout, limits=limits)
            else:
                # Plain http (a loopback server) never uses TLS: skip building a verifying SSL
                # context, which loads the CA bundle (measured ~40 ms of start-up).
                verify: Any = not self.base_url.startswith("http://")
                transport = ShardedTransport(verify=verify)
                self._client = httpx.AsyncClient(transport=transport, timeout=self.timeout)
        return self._client

    async def post(self, url: str, content: bytes, headers: Mapping[str, str]) -> Reply:
        client = self.get()
        return _HttpxReply(await client.send(client.build_request("POST", url, content=content, headers=headers),
                                             stream=True))

    async def aclose(self) -> None:
        client, self._client = self._client, None
        if client is not None and self._loop is running_loop():  # else its loop is gone (see get)
            await client.aclose()


class ShardedTransport(httpx.AsyncBaseTransport):
    """A pool of small connection pools. httpcore's pool rescans all its connections on every
    request, some checks costing a system call each, so one pool of a thousand connections spends
    its time choosing one. Here a request goes to a shard with room (the one freed last, so one
    loop's calls reuse one connection), a new shard is made when none has room, and only past
    `most` connections does the least busy shard queue the request."""

    def __init__(self, *, verify: Any, size: int = SHARD_SIZE, most: int = MAX_CONNECTIONS) -> None:
        self._verify = verify
        self._size = size
        self._most = max(1, most // size)
        self._shards: list[_Shard] = []
        self._roomy: list[_Shard] = []  # shards with fewer than `size` requests in flight
        self._closed = False

    def _take(self) -> "_Shard":
        if self._roomy:
            shard = self._roomy[-1]
        elif len(self._shards) < self._most:
            if isinstance(self._verify, bool):  # the SSL context, built once for every shard
                self._verify = httpx.create_ssl_context(verify=self._verify)
            limits = httpx.Limits(max_connections=self._size, max_keepalive_connections=self._size,
                                  keepalive_expiry=30.0)
            transport = httpx.AsyncHTTPTransport(retries=0, limits=limits, socket_options=socket_options(),
                                                 verify=self._verify)
            shard = _Shard(transport)
            self._shards.append(shard)
            self._roomy.append(shard)
        else:
            shard = min(self._shards, key=lambda s: s.busy)
        shard.busy += 1
        if shard.busy == self._size:
            self._roomy.pop() if self._roomy[-1] is shard else self._roomy.remove(shard)
        return shard

    def _give_back(self, shard: "_Shard") -> None:
        shard.busy -= 1
        if shard.busy == self._size - 1 and not self._closed:
            self._roomy.append(shard)

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        shard = self._take()
        try:
            response = await shard.transport.handle_async_request(request)
        except BaseException:
            self._give_back(shard)
            raise
        response.stream = _Counted(response.stream, self, shard)
        return response

    async def aclose(self) -> None:
        self._closed = True
        shards, self._shards, self._roomy = self._shards, [], []
        for shard in shards:
            await shard.transport.aclose()


class _Shard:
    __slots__ = ("transport", "busy")

    def __init__(self, transport: httpx.AsyncHTTPTransport) -> None:
        self.transport, self.busy = transport, 0  # busy: requests sent whose response is not closed


class _Counted(httpx.AsyncByteStream):
    """A response's body that gives its place in the shard back when closed (once)."""

    def __init__(self, stream: Any, owner: ShardedTransport, shard: _Shard) -> None:
        self._stream, self._owner = stream, owner
        self._shard: _Shard | None = shard

    async def __aiter__(self) -> Any:
        async for chunk in self._stream:
            yield chunk

    async def aclose(self) -> None:
        shard, self._shard = self._shard, None
        if shard is not None:
            self._owner._give_back(shard)
        await self._stream.aclose()


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
