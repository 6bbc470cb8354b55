"""The model clients' HTTP on aiohttp, for a process that runs many loops at once (asyncio only).

aiohttp parses HTTP in C: a streamed model call costs a third of httpx's client CPU
(bench/many_loops.py), which is what keeps a thousand loops started together near their ideal
time. It is chosen with `http="aiohttp"` on a model or `LOOPWRIGHT_HTTP=aiohttp` (the `aiohttp`
extra installs it); httpx stays the default, as it starts faster. aiohttp's failures are raised
as httpx's exception types, so the adapters translate every failure in one place
(`anthropic_errors.map_errors`) whichever library carried the call."""

from __future__ import annotations

import socket
from collections.abc import AsyncIterator, Mapping
from typing import Any

import aiohttp
import httpx

from .http import MAX_CONNECTIONS, running_loop, socket_options

__all__ = ["AiohttpClient"]


def _socket_with_options(addr_info: Any) -> socket.socket:
    family, kind, proto = addr_info[0], addr_info[1], addr_info[2]
    sock = socket.socket(family=family, type=kind, proto=proto)
    for level, option, value in socket_options():
        sock.setsockopt(level, option, value)
    return sock


def _as_httpx(exc: BaseException) -> Exception:
    """The httpx exception that says what `exc` (an aiohttp or socket failure) says."""
    message = str(exc) or type(exc).__name__
    if isinstance(exc, aiohttp.ConnectionTimeoutError):
        return httpx.ConnectTimeout(message)
    if isinstance(exc, (aiohttp.ServerTimeoutError, TimeoutError)):
        return httpx.ReadTimeout(message)
    if isinstance(exc, aiohttp.ClientConnectorError):
        return httpx.ConnectError(message)
    if isinstance(exc, aiohttp.NonHttpUrlClientError):
        return httpx.UnsupportedProtocol(message)
    if isinstance(exc, aiohttp.InvalidURL):
        return httpx.InvalidURL(message)
    if isinstance(exc, aiohttp.ClientResponseError):  # the server's bytes are not HTTP
        return httpx.RemoteProtocolError(message)
    return httpx.ReadError(message)  # disconnected mid-body, a reset, any other client error


_FAILURES = (aiohttp.ClientError, TimeoutError, OSError)


class AiohttpReply:
    """One response, as `http.Reply` describes."""

    __slots__ = ("_response", "status", "headers")

    def __init__(self, response: aiohttp.ClientResponse) -> None:
        self._response = response
        self.status: int = response.status
        self.headers: Mapping[str, str] = response.headers

    async def read(self) -> bytes:
        try:
            return await self._response.read()
        except _FAILURES as exc:
            raise _as_httpx(exc) from exc

    async def chunks(self) -> AsyncIterator[bytes]:
        content = self._response.content
        while True:
            try:
                chunk = await content.readany()
            except _FAILURES as exc:
                raise _as_httpx(exc) from exc
            if not chunk:
                return
            yield chunk

    async def close(self) -> None:
        # Gives the connection back when the body was read to its end, and closes it otherwise;
        # synchronous, so a cancelled caller cannot leave it half done.
        self._response.release()


class AiohttpClient:
    """One `aiohttp.ClientSession` for one API, made on first use and bound to the event loop
    that made it (as `http.LoopBoundClient`); any number of loops may share it."""

    def __init__(self, base_url: str, timeout: httpx.Timeout) -> None:
        self.base_url = base_url
        self._timeout = aiohttp.ClientTimeout(total=None, connect=timeout.pool, sock_connect=timeout.connect,
                                              sock_read=timeout.read)
        self._session: aiohttp.ClientSession | None = None
        self._loop: object | None = None

    def _current(self) -> aiohttp.ClientSession:
        loop = running_loop()
        if self._session is not None and loop is not self._loop:
            _drop(self._session)
            self._session = None
        if self._session is None:
            self._loop = loop
            ssl: Any = False if self.base_url.startswith("http://") else True
            connector = aiohttp.TCPConnector(limit=MAX_CONNECTIONS, keepalive_timeout=30.0, ssl=ssl,
                                             socket_factory=_socket_with_options)
            # No cookies (an API answer's cookie must not ride on the next loop's call), our own
            # user-agent, and redirects answered as themselves (as the httpx client does).
            self._session = aiohttp.ClientSession(connector=connector, timeout=self._timeout,
                                                  cookie_jar=aiohttp.DummyCookieJar(),
                                                  skip_auto_headers=("User-Agent",))
        return self._session

    async def post(self, url: str, content: bytes, headers: Mapping[str, str]) -> AiohttpReply:
        session = self._current()
        try:
            response = await session.post(url, data=content, headers=headers, allow_redirects=False)
        except _FAILURES as exc:
            raise _as_httpx(exc) from exc
        return AiohttpReply(response)

    async def aclose(self) -> None:
        session, self._session = self._session, None
        if session is not None:
            if self._loop is running_loop():
                await session.close()
            else:
                _drop(session)

    def __del__(self) -> None:
        # A client dropped unclosed (its owner never called aclose, its loop may have ended):
        # its sockets close with it, as an httpx client's do, without aiohttp's reports.
        session, self._session = self._session, None
        if session is not None and not session.closed:
            _drop(session)


def _drop(session: aiohttp.ClientSession) -> None:
    """Forget a session whose event loop has ended (a sync call runs a loop of its own): its
    sockets close with it, and nothing is logged about a session left open."""
    connector = session.connector
    session.detach()
    if connector is not None:
        connector._close()  # what close() does, without awaiting on the ended loop

