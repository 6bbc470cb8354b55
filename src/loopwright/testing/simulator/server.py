"""The Simulator: a loopback Messages API server on a daemon thread, and what it recorded.
Owns start/stop/reset, the record of requests and connections, and the active script cursor.
"""

from __future__ import annotations

import json
import selectors
import socket
import socketserver
import sys
import threading
import time
from http.server import ThreadingHTTPServer
from types import TracebackType
from typing import Any
from urllib.parse import urlsplit

from .handler import Handler
from .record import RecordedRequest
from .script import Reply, Script
from .wire import IdGen

__all__ = ["RecordedRequest", "Simulator"]

ScriptLike = Script | dict[str, Any] | list[Any] | None


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True  # a restarted simulator gets its old port back
    request_queue_size = 64
    sim: Simulator

    def server_bind(self) -> None:
        # HTTPServer.server_bind() calls getfqdn(), a reverse DNS lookup that can stall
        # for seconds on hosts without DNS; the name is never used here.
        socketserver.TCPServer.server_bind(self)
        self.server_name, self.server_port = self.server_address[:2]

    def serve_until_woken(self, wake: socket.socket) -> None:
        # serve_forever() only notices shutdown() on its next poll (every 0.5 s by default);
        # waiting on a wake-up socket too makes stop() immediate.
        with selectors.DefaultSelector() as selector:
            selector.register(self, selectors.EVENT_READ)
            selector.register(wake, selectors.EVENT_READ)
            while True:
                ready = {key.fileobj for key, _ in selector.select()}
                if wake in ready:
                    return
                self._handle_request_noblock()

    def handle_error(self, request: Any, client_address: Any) -> None:
        exc = sys.exc_info()[1]
        if isinstance(exc, OSError):
            return  # a client hung up or reset; normal traffic for a fault-injecting server
        self.sim._failed(exc)
        super().handle_error(request, client_address)


class Simulator:
    """Loopback Messages API: `with Simulator(script) as sim: ... sim.base_url ...`."""

    def __init__(
        self, script: ScriptLike = None, *, port: int = 0, validate: bool = True, host: str = "127.0.0.1"
    ) -> None:
        self.validate = validate
        self.host = host
        self.port = port
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None
        self._wake: tuple[socket.socket, socket.socket] | None = None
        self._sockets: set[socket.socket] = set()
        self._handlers: set[threading.Thread] = set()
        self._cursor = Script.coerce(script).cursor()
        self._clear_records()

    def _clear_records(self) -> None:
        self._requests: list[RecordedRequest] = []
        self._unmatched: list[RecordedRequest] = []
        self._errors: list[BaseException] = []
        self._connections = 0
        self._ids = IdGen()

    # --- lifecycle ------------------------------------------------------------------------

    def start(self) -> Simulator:
        if self._server is not None:
            return self
        self._stopping.clear()
        server = _Server((self.host, self.port), Handler)
        server.sim = self
        self.port = server.server_address[1]
        self._wake = socket.socketpair()
        thread = threading.Thread(
            target=server.serve_until_woken, args=(self._wake[0],), name=f"simulator:{self.port}", daemon=True
        )
        self._server, self._thread = server, thread
        thread.start()
        return self

    def stop(self) -> None:
        server, thread, wake = self._server, self._thread, self._wake
        if server is None or thread is None or wake is None:
            return
        self._stopping.set()  # wakes handlers sleeping on a `delay`
        wake[1].send(b"x")
        thread.join()
        with self._lock:
            sockets, handlers = list(self._sockets), list(self._handlers)
        for sock in sockets:
            # Idle keep-alive connections would otherwise keep their threads blocked on read.
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        server.server_close()
        for handler in handlers:
            handler.join(timeout=2)
        for end in wake:
            end.close()
        self._server = self._thread = self._wake = None

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

    # --- called by the handler threads ----------------------------------------------------

    def _opened(self, sock: socket.socket) -> None:
        with self._lock:
            self._connections += 1
            self._sockets.add(sock)
            self._handlers.add(threading.current_thread())
        if self._stopping.is_set():
            sock.shutdown(socket.SHUT_RDWR)  # accepted while stop() ran: do not serve it

    def _closed(self, sock: socket.socket) -> None:
        with self._lock:
            self._sockets.discard(sock)
            self._handlers.discard(threading.current_thread())

    def _record(self, method: str, target: str, headers: dict[str, str], raw: bytes) -> RecordedRequest:
        url = urlsplit(target)
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = None
        rec = RecordedRequest(
            method=method, path=url.path, query=url.query, headers=headers, body=body,
            raw=raw, time=time.monotonic(), request_id=self._ids.next("req"),
        )
        with self._lock:
            self._requests.append(rec)
        return rec

    def _take(self, body: dict[str, Any], rec: RecordedRequest) -> Reply | None:
        with self._lock:
            cursor = self._cursor
        reply = cursor.take(body, rec.headers)
        if reply is None:
            with self._lock:
                self._unmatched.append(rec)
        return reply

    def _sleep(self, seconds: float) -> bool:
        """Wait `seconds`; True if the simulator started stopping meanwhile."""
        return self._stopping.wait(seconds)

    def _failed(self, exc: BaseException | None) -> None:
        if exc is not None:
            with self._lock:
                self._errors.append(exc)
