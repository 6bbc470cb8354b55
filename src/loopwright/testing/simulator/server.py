"""The Simulator: a loopback Messages API served by one asyncio event loop on a daemon thread,
and what it recorded. Owns start/stop/reset, the record of requests and connections, and the
active script cursor. One loop holds thousands of keep-alive connections (see `BACKLOG`).
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
from types import TracebackType
from typing import Any
from urllib.parse import urlsplit

from .cache import PromptCache
from .handler import Connection
from .http11 import MAX_LINE
from .record import RecordedRequest
from .script import Reply, Script
from .wire import IdGen

__all__ = ["RecordedRequest", "Simulator"]

ScriptLike = Script | dict[str, Any] | list[Any] | None
# Connections the kernel may hold before the loop accepts them (capped by net.core.somaxconn):
# a burst of a thousand clients connecting at once must not overflow it.
BACKLOG = 4096


class Simulator:
    """Loopback Messages API: `with Simulator(script) as sim: ... sim.base_url ...`.

    `delay` is a model delay in seconds added before every scripted reply (on top of a reply's
    own `delay`), for load tests. `prompt_cache`: Messages requests are counted against a
    simulated prompt cache (`simulator.cache`), so a reply's usage reports the cache reads and
    writes the request's `cache_control` marks earn, as the API does (off by default: the usage
    every other test expects stays as it was); a reply whose script sets input-side usage keeps it.
    """

    def __init__(
        self, script: ScriptLike = None, *, port: int = 0, validate: bool = True, host: str = "127.0.0.1",
        delay: float = 0.0, prompt_cache: bool = False,
    ) -> None:
        if isinstance(delay, bool) or not isinstance(delay, (int, float)) or not delay >= 0:
            raise ValueError(f"Simulator delay: expected seconds >= 0, got {delay!r}")
        self.validate = validate
        self.host = host
        self.port = port
        self.delay = float(delay)
        self.prompt_cache = prompt_cache
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._server: asyncio.Server | None = None
        self._tasks: set[asyncio.Task[None]] = set()
        self._cursor = Script.coerce(script).cursor()
        self._clear_records()

    def _clear_records(self) -> None:
        self._requests: list[RecordedRequest] = []
        self._unmatched: list[RecordedRequest] = []
        self._errors: list[BaseException] = []
        self._connections = 0
        self._in_flight = self._peak_in_flight = 0
        self._ids = IdGen()
        self._cache = PromptCache() if self.prompt_cache else None

    # --- lifecycle ------------------------------------------------------------------------

    def start(self) -> Simulator:
        """Bind and serve; an OSError (the port is taken, say) is raised here."""
        if self._thread is not None:
            return self
        loop = asyncio.new_event_loop()
        ready = threading.Event()
        failed: list[BaseException] = []
        thread = threading.Thread(target=self._run, args=(loop, ready, failed), name="simulator", daemon=True)
        thread.start()
        ready.wait()
        if failed:
            thread.join()
            raise failed[0]
        self._loop, self._thread = loop, thread
        return self

    def _run(self, loop: asyncio.AbstractEventLoop, ready: threading.Event, failed: list[BaseException]) -> None:
        asyncio.set_event_loop(loop)
        try:
            self._server = loop.run_until_complete(asyncio.start_server(
                self._accepted, self.host, self.port, backlog=BACKLOG, limit=MAX_LINE, reuse_address=True
            ))
            self.port = self._server.sockets[0].getsockname()[1]
        except BaseException as exc:  # noqa: BLE001 - handed to start()'s caller
            failed.append(exc)
            loop.close()
            ready.set()
            return
        ready.set()
        try:
            loop.run_forever()
        finally:
            loop.run_until_complete(loop.shutdown_asyncgens())
            loop.close()

    def stop(self) -> None:
        """Close the listener and every connection (a reply waiting on its delay is not sent)."""
        loop, thread = self._loop, self._thread
        if loop is None or thread is None:
            return
        asyncio.run_coroutine_threadsafe(self._shutdown(), loop).result()
        loop.call_soon_threadsafe(loop.stop)
        thread.join()
        self._loop = self._thread = self._server = None

    async def _shutdown(self) -> None:
        if self._server is not None:
            self._server.close()
        tasks = list(self._tasks)
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    async def _accepted(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._tasks.add(task)
        with self._lock:
            self._connections += 1
        try:
            await Connection(self, reader, writer).serve()
        except asyncio.CancelledError:
            writer.transport.abort()  # stop(): drop the connection, whatever it was doing
        except Exception as exc:  # a simulator bug: recorded, the connection dropped
            self._failed(exc)
            writer.transport.abort()
        finally:
            self._tasks.discard(task)

    def __enter__(self) -> Simulator:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    async def __aenter__(self) -> Simulator:
        return self.start()

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        import anyio.to_thread  # lazy: only async users pay for it

        # Stopping joins threads that may be writing to this event loop's clients.
        await anyio.to_thread.run_sync(self.stop)

    # --- what tests read ------------------------------------------------------------------

    @property
    def base_url(self) -> str:
        return f"http://{self.host}:{self.port}"

    @property
    def requests(self) -> list[RecordedRequest]:
        with self._lock:
            return list(self._requests)

    @property
    def message_requests(self) -> list[RecordedRequest]:
        return [r for r in self.requests if r.method == "POST" and r.path == "/v1/messages"]

    @property
    def chat_requests(self) -> list[RecordedRequest]:
        """Requests to the OpenAI-style `POST /v1/chat/completions` endpoint."""
        return [r for r in self.requests if r.method == "POST" and r.path == "/v1/chat/completions"]

    @property
    def unmatched(self) -> list[RecordedRequest]:
        with self._lock:
            return list(self._unmatched)

    @property
    def connections(self) -> int:
        """TCP connections accepted since start or the last reset (keep-alive shows as 1)."""
        with self._lock:
            return self._connections

    @property
    def peak_in_flight(self) -> int:
        """The most requests received and not yet answered at one moment, since start or reset."""
        with self._lock:
            return self._peak_in_flight

    @property
    def errors(self) -> list[BaseException]:
        """Exceptions raised inside the simulator itself: a non-empty list is a simulator bug."""
        with self._lock:
            return list(self._errors)

    def remaining(self) -> list[dict[str, Any]]:
        with self._lock:
            cursor = self._cursor
        return cursor.remaining()

    def reset(self, script: ScriptLike = None) -> None:
        """Replace the script and clear every record (requests, unmatched, connections, ids)."""
        cursor = Script.coerce(script).cursor()
        with self._lock:
            self._cursor = cursor
            self._clear_records()

    # --- called by the connection tasks ---------------------------------------------------

    def _record(self, method: str, target: str, headers: dict[str, str], raw: bytes) -> RecordedRequest:
        arrived = time.monotonic()  # before parsing: the client's gap must not include the server's work
        url = urlsplit(target)
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = None
        rec = RecordedRequest(
            method=method, path=url.path, query=url.query, headers=headers, body=body,
            raw=raw, time=arrived, request_id=self._ids.next("req"),
        )
        with self._lock:
            self._requests.append(rec)
            self._in_flight += 1
            self._peak_in_flight = max(self._peak_in_flight, self._in_flight)
        return rec

    def _answered(self, rec: RecordedRequest) -> None:
        with self._lock:
            self._in_flight = max(0, self._in_flight - 1)  # a reset() meanwhile zeroed it

    def _take(self, body: dict[str, Any], rec: RecordedRequest) -> Reply | None:
        with self._lock:
            cursor = self._cursor
        reply = cursor.take(body, rec.headers)
        if reply is None:
            with self._lock:
                self._unmatched.append(rec)
        return reply

    def _failed(self, exc: BaseException | None) -> None:
        if exc is not None:
            with self._lock:
                self._errors.append(exc)
