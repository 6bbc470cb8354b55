"""Which library carries a model client's HTTP: httpx (the default: it starts faster) or aiohttp
(a third of httpx's client CPU a call, for many loops in one process), chosen per client."""

from __future__ import annotations

from collections.abc import Mapping

import httpx

from ..core.environ import environ_now
from .http import HttpClient, LoopBoundClient, Reply, proxy_variables, running_loop

__all__ = ["HTTP_LIBRARIES", "http_client"]

HTTP_LIBRARIES = ("httpx", "aiohttp")


def http_client(base_url: str, timeout: httpx.Timeout, library: str | None = None) -> HttpClient:
    """The client for one API: on httpx, or on aiohttp when `library` (else `LOOPWRIGHT_HTTP`)
    says so. aiohttp carries no proxy settings here and runs on asyncio only; with a proxy set,
    or under another event loop, the call goes through httpx."""
    from ..core.errors import UsageError

    chosen = library or environ_now().get("LOOPWRIGHT_HTTP", "").strip().lower() or "httpx"
    if chosen not in HTTP_LIBRARIES:
        where = "http=" if library else "LOOPWRIGHT_HTTP="
        raise UsageError(f"{where}{chosen!r}: expected one of {', '.join(HTTP_LIBRARIES)}")
    if chosen == "aiohttp":
        try:
            from .aiohttp_transport import AiohttpClient
        except ImportError as exc:
            raise UsageError(f"HTTP on aiohttp needs the aiohttp package ({exc}): pip install 'loopwright[aiohttp]'") \
                from exc
        if not proxy_variables():
            return _OnAsyncio(AiohttpClient(base_url, timeout), LoopBoundClient(base_url, timeout))
    return LoopBoundClient(base_url, timeout)


class _OnAsyncio:
    """aiohttp's client on asyncio, httpx's under another event loop (trio through anyio)."""

    def __init__(self, fast: HttpClient, other: HttpClient) -> None:
        self._fast, self._other = fast, other

    async def post(self, url: str, content: bytes, headers: Mapping[str, str]) -> Reply:
        return await (self._fast if running_loop() is not None else self._other).post(url, content, headers)

    async def aclose(self) -> None:
        await self._fast.aclose()
        await self._other.aclose()
