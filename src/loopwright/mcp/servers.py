"""Connections to MCP servers through the official `mcp` SDK's client (imported only here, and
only when a server is configured). Each server lives in a task of its own that holds the SDK's
context open; calls come from the loop's tool tasks. A server that fails to start is reported
and left out; one that dies is answered for (its pending calls end as errors) and started again
once, on the next call."""

from __future__ import annotations

import asyncio
import os
import tempfile
from typing import Any, Callable, Mapping

from ..core import lifeline
from .config import ServerSpec

__all__ = ["Connection", "ServerGone", "connect_timeout", "tool_timeout"]

CONNECT_TIMEOUT_S = 30.0  # MCP_TIMEOUT (ms) overrides
MAX_RESTARTS = 1
MAX_PAGES = 100
CONNECTION_CLOSED = -32000  # the JSON-RPC error the SDK raises when the server's end closed


class ServerGone(Exception):
    """The server is not connected (it failed to start, died, or was closed)."""


class Connection:
    """One server. `status`: pending, connected, failed, closed."""

    def __init__(self, spec: ServerSpec, cwd: str, env: Mapping[str, str], on_change: Callable[[], None]) -> None:
        self.spec, self.cwd, self.env, self.on_change = spec, cwd, dict(env), on_change
        self.status, self.error, self.instructions = "pending", "", ""
        self.tools: list[Any] = []  # mcp Tool objects
        self.restarts = 0
        self._client: Any = None
        self._task: asyncio.Task[None] | None = None
        self._ready = asyncio.Event()
        self._closing = asyncio.Event()
        self._errlog: Any = None
        self._shut = False  # closed for good (the session ended)
        self._stale = False  # the server said its tools changed; not listed again yet
        self._listing = asyncio.Lock()

    # ------------------------------------------------------------ lifetime

    async def start(self, timeout: float) -> None:
        self._ready, self._closing = asyncio.Event(), asyncio.Event()
        self.status, self.error = "pending", ""
        self._task = asyncio.get_running_loop().create_task(self._serve(), name=f"mcp:{self.spec.name}")
        try:
            await asyncio.wait_for(self._ready.wait(), timeout)
        except asyncio.TimeoutError:
            self.error = f"did not answer within {timeout:g} s"
            await self.close()
            self.status = "failed"

    async def _serve(self) -> None:
        from mcp import Client
        from mcp.types import Implementation

        try:
            target = self._target()
            async with Client(target, mode="legacy", message_handler=self._on_message,
                              client_info=Implementation(name="loopwright", version=_version())) as client:
                self.instructions = (client.instructions or "")[:2048]
                self._client = client
                await self._list_tools()
                self.status = "connected"
                self.on_change()
                self._ready.set()
                await self._closing.wait()
        except BaseException as exc:  # noqa: BLE001 - a server's failure is reported, never raised
            if self.status != "closed":
                self.status = "failed"
                self.error = self.error or _describe(exc, self._stderr_tail())
            if isinstance(exc, (KeyboardInterrupt, SystemExit)):
                raise
        finally:
            self._client = None
            self._ready.set()

    def _target(self) -> Any:
        spec = self.spec
        if spec.transport == "sdk":
            from .bridge import bridged

            return bridged(spec.bridge)
        if spec.transport == "stdio":
            from mcp import StdioServerParameters, stdio_client

            # the server's stderr is kept aside (quoted when it fails), not mixed into loopwright's own
            self._errlog = tempfile.TemporaryFile("w+", encoding="utf-8", errors="replace")
            env, cwd = self.env | dict(spec.env), spec.cwd or self.cwd
            # a server dies with us (lifeline); the SDK already gives it a session of its own
            program, *args = lifeline.tethered([spec.command, *spec.args], cwd=cwd,
                                               env={"PATH": os.environ.get("PATH", os.defpath), **env})
            params = StdioServerParameters(command=program, args=args, env=env, cwd=cwd)
            return stdio_client(params, errlog=self._errlog)
        headers = dict(spec.headers)
        if spec.transport == "sse":
            from mcp.client.sse import sse_client

            return sse_client(spec.url, headers=headers)
        import httpx2  # the mcp SDK's own HTTP client
        from mcp.client.streamable_http import streamable_http_client

        client = httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(60.0, read=300.0))
        return streamable_http_client(spec.url, http_client=client)

    async def shutdown(self) -> None:
        self._shut = True
        await self.close()

    async def close(self) -> None:
        if self.status != "failed":
            self.status = "closed"
        self._closing.set()
        task, self._task = self._task, None
        if task is not None and not task.done():
            try:
                await asyncio.wait_for(asyncio.shield(task), 5.0)
            except (asyncio.TimeoutError, Exception):  # noqa: BLE001
                task.cancel()
        if self._errlog is not None:
            self._errlog.close()
            self._errlog = None

    # ------------------------------------------------------------ protocol

    async def _list_tools(self) -> None:
        tools, cursor = [], None
        for _ in range(MAX_PAGES):
            page = await self._client.list_tools(cursor=cursor, cache_mode="refresh")
            tools += page.tools
            cursor = page.next_cursor
            if not cursor:
                break
        self.tools = tools

    async def _on_message(self, message: Any) -> None:
        method = getattr(getattr(message, "root", message), "method", None)
        if method == "notifications/tools/list_changed" and self._client is not None:
            self._stale = True  # a call that is answering now waits for the new list (`call`)
            asyncio.get_running_loop().create_task(self._refresh())

    async def _refresh(self) -> None:
        async with self._listing:
            if not self._stale or self._client is None:
                return
            self._stale = False
            try:
                await self._list_tools()
            except Exception as exc:  # noqa: BLE001 - keep the old list, say why
                self.error = f"refreshing its tools failed: {_describe(exc, '')}"
            self.on_change()

    async def _connected(self) -> Any:
        """The live client, started again (once) when the server died; else `ServerGone`."""
        if self._client is None or self._task is None or self._task.done():
            await self._restart()
        if self._client is None:
            raise ServerGone(self.error or "not connected")
        return self._client

    async def call(self, tool: str, arguments: dict[str, Any], timeout: float | None,
                   progress: Callable[[float, float | None, str], None] | None = None) -> Any:
        """`timeout`: how long the call may go without an answer or a progress notification."""
        client = await self._connected()
        try:
            result = await _within(client, tool, arguments, timeout, progress)
            if self._stale or self._listing.locked():  # the call changed the server's tools:
                await asyncio.wait_for(self._refresh(), 10.0)  # the next request shows them
            return result
        except asyncio.TimeoutError:
            raise
        except Exception as exc:  # noqa: BLE001
            closed = getattr(exc, "code", None) == CONNECTION_CLOSED
            if closed or self._task is None or self._task.done() or self._client is None:
                why = _describe(exc, self._stderr_tail()) or "the connection closed"
                self.error = f"the connection closed ({why})"
                await self.close()
                self.status = "failed"
                raise ServerGone(why + ("; it will be started again on the next call"
                                        if self.restarts < MAX_RESTARTS else "")) from None
            raise

    async def request(self, method: str, *args: Any, **kwargs: Any) -> Any:
        """Another request of the connected client (`list_resources`, `read_resource`,
        `list_prompts`, `get_prompt`), bounded like a tool call."""
        client = await self._connected()
        return await asyncio.wait_for(getattr(client, method)(*args, **kwargs), tool_timeout(self.spec) or 60.0)

    def offers(self, capability: str) -> bool:
        caps = self._client.server_capabilities if self._client is not None else None
        return getattr(caps, capability, None) is not None

    async def _restart(self) -> None:
        if self.restarts >= MAX_RESTARTS or self._shut:
            return
        self.restarts += 1
        await self.close()
        await self.start(connect_timeout())

    def _stderr_tail(self) -> str:
        log = self._errlog
        if log is None:
            return ""
        try:
            log.flush()
            log.seek(0, os.SEEK_END)
            size = log.tell()
            log.seek(max(0, size - 2000))
            lines = [line.strip() for line in log.read().splitlines() if line.strip()]
            return " | ".join(lines[-2:])[-300:]
        except (OSError, ValueError):
            return ""


def connect_timeout() -> float:
    raw = os.environ.get("MCP_TIMEOUT", "")
    return int(raw) / 1000 if raw.isdigit() and int(raw) > 0 else CONNECT_TIMEOUT_S


def tool_timeout(spec: ServerSpec) -> float | None:
    """The per-call timeout: the entry's `timeout`, else MCP_TOOL_TIMEOUT (ms), else none."""
    if spec.timeout_s is not None:
        return spec.timeout_s
    raw = os.environ.get("MCP_TOOL_TIMEOUT", "")
    return int(raw) / 1000 if raw.isdigit() and int(raw) > 0 else None


def _describe(exc: BaseException, stderr: str) -> str:
    while isinstance(exc, BaseExceptionGroup) and len(exc.exceptions) == 1:
        exc = exc.exceptions[0]
    if isinstance(exc, BaseExceptionGroup):
        exc = exc.exceptions[0]
    text = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
    if isinstance(exc, ModuleNotFoundError) and exc.name in ("mcp", "httpx2"):
        text = "the official MCP SDK is not installed here (pip install 'mcp>=2.3')"
    elif isinstance(exc, FileNotFoundError):
        text = f"cannot start the command ({exc.strerror}: {exc.filename})"
    return f"{text}; its stderr: {stderr}" if stderr else text


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("loopwright")
    except PackageNotFoundError:
        return "0"


async def _within(client: Any, tool: str, arguments: dict[str, Any], timeout: float | None,
                  progress: Callable[[float, float | None, str], None] | None) -> Any:
    """`tools/call`, its progress notifications passed on; each one gives the call `timeout`
    seconds more, so a long job that reports progress is not cut while a silent one is."""
    loop = asyncio.get_running_loop()
    heard = loop.time()

    async def on_progress(done: float, total: float | None, message: str | None) -> None:
        nonlocal heard
        heard = loop.time()
        if progress is not None:
            progress(done, total, message or "")

    task = asyncio.ensure_future(client.call_tool(tool, arguments, progress_callback=on_progress))
    try:
        while True:
            left = None if timeout is None else heard + timeout - loop.time()
            if left is not None and left <= 0:
                raise asyncio.TimeoutError
            done, _ = await asyncio.wait({task}, timeout=left)
            if done:
                return task.result()
    finally:
        if not task.done():
            task.cancel()  # a timeout or an interrupt: the SDK tells the server the call was cancelled
            await asyncio.gather(task, return_exceptions=True)
