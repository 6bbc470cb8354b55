"""A stdio MCP server as a process of loopwright's own: started in a session (and so a process
group) of its own, its JSON-RPC lines carried to and from the `mcp` client, and stopped as a
whole group on every path. The SDK's own stdio client hides the process; here its group id is
known, so a handshake deadline, the session's end, SIGTERM and a last-resort `atexit` can all
kill it, and a server that never answers can never hold loopwright open."""

from __future__ import annotations

import atexit
import os
import signal
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any, TextIO

import anyio

from ..core import lifeline
from ..tools.procs import KILL_GRACE_S, group_alive

__all__ = ["ServerProcess", "kill_all", "MAX_MESSAGE_BYTES"]

# One JSON-RPC message may not be longer: the Messages API refuses a request over 32 MB, so a
# longer answer could never reach the model, and a line that never ends would fill memory.
MAX_MESSAGE_BYTES = 32 * 1024 * 1024
EXIT_GRACE_S = 2.0  # after its stdin closes, before the group is sent SIGTERM

_LIVE: set[int] = set()  # the groups of the servers started and not yet seen gone


def kill_all() -> None:
    """SIGKILL every server group still alive: the last resort at exit and on a second signal."""
    for pgid in list(_LIVE):
        _signal(pgid, signal.SIGKILL)
        _LIVE.discard(pgid)


atexit.register(kill_all)


def _signal(pgid: int, sig: signal.Signals) -> None:
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError):
        pass


class ServerProcess:
    """One server command. `streams()` starts it and yields the (read, write) pair the `mcp`
    client speaks over; leaving it stops the group: stdin closed, a grace period, SIGTERM,
    SIGKILL. `kill()` ends the group at once from anywhere (a deadline passed)."""

    def __init__(self, command: str, args: list[str], env: dict[str, str], cwd: str, errlog: TextIO) -> None:
        self.command, self.args, self.env, self.cwd, self.errlog = command, args, env, cwd, errlog
        self.pid: int | None = None
        self.broken = ""  # why loopwright cut the server off (a message over the limit)

    def kill(self) -> None:
        if self.pid is not None:
            _signal(self.pid, signal.SIGKILL)

    @asynccontextmanager
    async def streams(self) -> AsyncIterator[tuple[Any, Any]]:
        from mcp.shared.message import SessionMessage

        # a server dies with us (lifeline), in a session of its own so its whole group can be ended
        tether = lifeline.tether([self.command, *self.args], cwd=self.cwd,
                                 env={"PATH": os.environ.get("PATH", os.defpath), **self.env})
        process = await anyio.open_process(tether.argv, env=self.env, cwd=self.cwd, stderr=self.errlog,
                                           start_new_session=True)
        self.pid = process.pid
        tether.hold(process.pid)
        _LIVE.add(process.pid)
        stdin = process.stdin
        assert stdin is not None  # open_process pipes stdin unless told otherwise
        to_client, read = anyio.create_memory_object_stream[Any](0)
        write, from_client = anyio.create_memory_object_stream[Any](0)

        async def reader() -> None:
            async with to_client:
                async for line in self._lines(process.stdout):
                    try:
                        message = _parse(line)
                    except ValueError as exc:
                        await to_client.send(exc)  # the client reports it; the session goes on
                        continue
                    await to_client.send(SessionMessage(message))

        async def writer() -> None:
            try:
                async with from_client:
                    async for message in from_client:
                        data = message.message.model_dump_json(by_alias=True, exclude_unset=True)
                        await stdin.send((data + "\n").encode())
            except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
                await to_client.aclose()  # the server stopped reading: its requests end now

        try:
            async with anyio.create_task_group() as tg:
                tg.start_soon(reader)
                tg.start_soon(writer)
                try:
                    yield read, write
                finally:
                    with anyio.CancelScope(shield=True):
                        await self._stop(process)
                    tg.cancel_scope.cancel()
        finally:
            with anyio.CancelScope(shield=True):
                await self._stop(process)

    async def _lines(self, stdout: Any) -> AsyncIterator[bytes]:
        buffer = b""
        try:
            async for chunk in stdout:
                buffer += chunk
                *lines, buffer = buffer.split(b"\n")
                for line in lines:
                    if line.strip():
                        yield line
                if len(buffer) > MAX_MESSAGE_BYTES:
                    self.broken = (f"it sent a message over {MAX_MESSAGE_BYTES // (1024 * 1024)} MB, the most one "
                                   "request to the model may hold; it was stopped")
                    self.kill()
                    return
        except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
            return
        if buffer.strip():
            yield buffer

    async def _stop(self, process: Any) -> None:
        """Bounded at every step: a server that ignores its stdin's end and SIGTERM is killed."""
        pgid = process.pid
        if pgid not in _LIVE:
            return
        try:
            await process.stdin.aclose()
        except (OSError, anyio.BrokenResourceError, anyio.ClosedResourceError):
            pass
        with anyio.move_on_after(EXIT_GRACE_S):
            await process.wait()
        if process.returncode is None or group_alive(pgid):
            _signal(pgid, signal.SIGTERM)
            with anyio.move_on_after(KILL_GRACE_S):
                while group_alive(pgid):
                    await anyio.sleep(0.02)
        _signal(pgid, signal.SIGKILL)  # whatever of the group is left: children it started, too
        with anyio.move_on_after(KILL_GRACE_S):
            await process.wait()
        _LIVE.discard(pgid)
        for stream in (process.stdout, process.stdin):
            try:
                await stream.aclose()
            except (OSError, anyio.BrokenResourceError, anyio.ClosedResourceError):
                pass


def _parse(line: bytes) -> Any:
    import mcp_types as types

    return types.jsonrpc_message_adapter.validate_json(line, by_name=False)
