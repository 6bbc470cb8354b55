"""Group commit for transcripts: one thread per process fsyncs the logs that loops are waiting on,
all that are waiting at once in one batch (a log waited on twice in a batch is fsynced once), and
wakes each waiting event loop once per batch. Many loops of one process thus share one thread
and one wake-up where each used to take a worker thread of its own for its fsync."""

from __future__ import annotations

import asyncio
import os
import threading
from typing import Any

from ..core.storeports import DeferredSync

IDLE_SECONDS = 2.0  # the thread ends after this long with nothing to sync; the next sync starts one


class GroupSync:
    def __init__(self, idle: float = IDLE_SECONDS) -> None:
        self._idle = idle
        self._reset()
        if hasattr(os, "register_at_fork"):
            os.register_at_fork(after_in_child=self._reset)  # the thread is not copied into a child

    def _reset(self) -> None:
        self._lock = threading.Lock()
        self._wake = threading.Condition(self._lock)
        self._waiting: list[tuple[DeferredSync, asyncio.Future[None], asyncio.AbstractEventLoop]] = []
        self._running = False

    async def sync(self, log: DeferredSync) -> None:
        """Return once every record appended to `log` before this call is fsynced; what the fsync
        raised is raised here. A cancelled caller still waits for its fsync to end, as it would
        for a worker thread of anyio's, so the log is never closed under a running fsync.
        Outside asyncio (trio through anyio), a worker thread of anyio's."""
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            import anyio.to_thread

            await anyio.to_thread.run_sync(log.sync)
            return
        future: asyncio.Future[None] = loop.create_future()
        with self._lock:
            self._waiting.append((log, future, loop))
            if self._running:
                self._wake.notify()
            else:
                self._running = True
                threading.Thread(target=self._serve, name="loopwright-fsync", daemon=True).start()
        try:
            await asyncio.shield(future)
        except asyncio.CancelledError:
            while not future.done():
                try:
                    await asyncio.shield(future)
                except asyncio.CancelledError:
                    pass
            if not future.cancelled():
                future.exception()  # retrieved: the cancelled caller does not want it
            raise

    def _serve(self) -> None:
        while True:
            with self._lock:
                if not self._waiting:
                    self._wake.wait(self._idle)
                if not self._waiting:
                    self._running = False
                    return
                batch, self._waiting = self._waiting, []
            failed: dict[int, Exception | None] = {}  # by id(log): the batch holds every log, ids stay unique
            for log, _, _ in batch:
                if id(log) not in failed:
                    try:
                        log.sync()
                        failed[id(log)] = None
                    except Exception as exc:  # any log's error goes to its waiters; the thread serves on
                        failed[id(log)] = exc
            by_loop: dict[asyncio.AbstractEventLoop, list[tuple[asyncio.Future[None], Exception | None]]] = {}
            for log, future, loop in batch:
                by_loop.setdefault(loop, []).append((future, failed[id(log)]))
            for loop, outcomes in by_loop.items():
                try:
                    loop.call_soon_threadsafe(_settle, outcomes)
                except RuntimeError:
                    pass  # that event loop is closed: nothing waits there any more


def _settle(outcomes: list[tuple[asyncio.Future[Any], Exception | None]]) -> None:
    for future, error in outcomes:
        if future.done():  # never cancelled by its caller (shielded); only if its loop cancelled it
            continue
        if error is None:
            future.set_result(None)
        else:
            future.set_exception(error)


GROUP = GroupSync()
