"""Child processes of the tools: one command in its own process group with its output merged
into one capped text, and the group ended as a whole (TERM, a grace period, then KILL)."""

from __future__ import annotations

import asyncio
import codecs
import os
import shutil
import signal
import subprocess
from functools import lru_cache

import anyio

from ..core.environ import child_env
from ..core.ports import ToolContext

MAX_OUTPUT_CHARS = 30_000
KILL_GRACE_S = 2.0
# Once the shell exits, a background job may still hold the output pipe; wait this long, not forever.
DRAIN_AFTER_EXIT_S = 0.2
_CHUNK = 65536


class CappedText:
    """Collects text but keeps only the first and last `limit // 2` characters, so a command
    that prints gigabytes costs bounded memory and the model still sees how it started and ended."""

    def __init__(self, limit: int) -> None:
        self.head_max = limit // 2
        self.tail_max = limit - self.head_max
        self.limit = limit
        self.head = ""
        self.tail = ""
        self.total = 0

    def add(self, text: str) -> None:
        self.total += len(text)
        room = self.head_max - len(self.head)
        if room > 0:
            self.head += text[:room]
            text = text[room:]
        if text:
            self.tail = (self.tail + text)[-self.tail_max :]

    def render(self) -> str:
        if self.total <= self.limit:
            return (self.head + self.tail).rstrip("\n")
        omitted = self.total - len(self.head) - len(self.tail)
        return (
            f"{self.head}\n\n... [{omitted} characters omitted: the output was longer than "
            f"{self.limit} characters; redirect it to a file and use Read or Grep to see all of "
            f"it] ...\n\n{self.tail}"
        ).rstrip("\n")


@lru_cache(maxsize=1)
def shell_path() -> str:
    if os.access("/bin/bash", os.X_OK):
        return "/bin/bash"
    return shutil.which("bash") or shutil.which("sh") or "/bin/sh"


async def run_command(
    command: str, ctx: ToolContext, timeout_s: float, out: CappedText, argv: list[str] | None = None
) -> tuple[bool, int]:
    """Run `command` (or `argv`, the full command line, e.g. wrapped by the sandbox); returns
    (timed_out, exit code). Cancellation kills the process group and then propagates."""
    read_fd, write_fd = os.pipe()
    try:
        # One pipe for both streams keeps stdout and stderr interleaved in the order written.
        proc = await asyncio.create_subprocess_exec(
            *(argv or [shell_path(), "-c", command]),
            stdin=subprocess.DEVNULL,
            stdout=write_fd,
            stderr=write_fd,
            cwd=ctx.cwd,
            env=ctx.env or child_env(),  # the harness's credentials stay with the harness
            start_new_session=True,  # its own process group: one signal reaches every child
        )
    except BaseException:
        os.close(read_fd)
        raise
    finally:
        os.close(write_fd)
    transport: asyncio.ReadTransport | None = None
    try:
        transport, reader = await _open_reader(read_fd)
        with anyio.move_on_after(timeout_s) as deadline:
            await _collect(proc, reader, out)
        if deadline.cancelled_caught:
            with anyio.CancelScope(shield=True):
                await kill_group(proc)
    except BaseException:
        with anyio.CancelScope(shield=True):
            await kill_group(proc)
        raise
    finally:
        if transport is not None:
            # Closing our end means a leftover background job gets EPIPE instead of blocking.
            transport.close()
    code = proc.returncode
    return deadline.cancelled_caught, code if code is not None else -1


async def _open_reader(fd: int) -> tuple[asyncio.ReadTransport, asyncio.StreamReader]:
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=_CHUNK, loop=loop)
    pipe = os.fdopen(fd, "rb", buffering=0)
    try:
        transport, _ = await loop.connect_read_pipe(
            lambda: asyncio.StreamReaderProtocol(reader, loop=loop), pipe
        )
    except BaseException:
        pipe.close()
        raise
    return transport, reader


async def _collect(proc: asyncio.subprocess.Process, reader: asyncio.StreamReader, out: CappedText) -> None:
    drained = anyio.Event()

    async def pump() -> None:
        decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        while chunk := await reader.read(_CHUNK):
            out.add(decoder.decode(chunk))
        out.add(decoder.decode(b"", final=True))
        drained.set()

    async with anyio.create_task_group() as tg:
        tg.start_soon(pump)
        await proc.wait()
        with anyio.move_on_after(DRAIN_AFTER_EXIT_S):
            await drained.wait()
        tg.cancel_scope.cancel()


async def kill_group(proc: asyncio.subprocess.Process) -> None:
    """TERM the process group, give it a grace period to exit, then KILL what is left.
    Call inside a shielded scope: it must finish even while the caller is being cancelled."""
    pgid = proc.pid
    _signal_group(pgid, signal.SIGTERM)
    with anyio.move_on_after(KILL_GRACE_S):
        await proc.wait()
        while group_alive(pgid):
            await anyio.sleep(0.02)
    _signal_group(pgid, signal.SIGKILL)
    await proc.wait()


def _signal_group(pgid: int, sig: signal.Signals) -> None:
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def group_alive(pgid: int) -> bool:
    """Whether any process of the group still runs. Zombies do not count: where PID 1 does not
    reap orphans (many containers) they linger, and waiting on them would wait the full grace."""
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        entries = os.listdir("/proc")
    except OSError:
        return True  # no /proc: trust killpg
    for entry in entries:
        if entry.isdigit() and _live_member(entry, pgid):
            return True
    return False


def _live_member(pid: str, pgid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            stat = f.read()
    except OSError:
        return False
    # The command name may contain spaces and parentheses; fields resume after the last ')'.
    fields = stat.rpartition(b")")[2].split()
    return len(fields) > 2 and fields[2] == str(pgid).encode() and fields[0] not in (b"Z", b"X")
