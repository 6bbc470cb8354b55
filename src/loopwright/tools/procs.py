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

from ..core import lifeline
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
    command: str, ctx: ToolContext, timeout_s: float, out: CappedText, argv: list[str] | None = None,
    pass_fds: tuple[int, ...] = (), to_end: bool = False,
) -> tuple[bool, int]:
    """Run `command` (or `argv`, the full command line, e.g. wrapped by the sandbox, which
    inherits `pass_fds`); returns (timed_out, exit code). Cancellation kills the process group
    and then propagates. `to_end`: read the output until every writer closed it, however long
    after the exit (for a sandboxed command, whose background jobs end with it)."""
    from ..sandbox.bwrap import Launch

    read_fd, write_fd = os.pipe()
    env = ctx.env or child_env()  # the harness's credentials stay with the harness
    try:
        # One pipe for both streams keeps stdout and stderr interleaved in the order written.
        started = None
        if isinstance(argv, Launch):  # sandboxed: bwrap started here, its host side by the warm helper
            from ..sandbox import warm

            started = await warm.spawn(argv, output=write_fd, cwd=ctx.cwd, env=env, pass_fds=pass_fds)
        if started is None:  # else the launcher's line, or the command as it is, dying with us
            tether = lifeline.tether(argv or [shell_path(), "-c", command], cwd=ctx.cwd, env=env)
            started = subprocess.Popen(tether.argv, stdin=subprocess.DEVNULL, stdout=write_fd, stderr=write_fd,
                                       cwd=ctx.cwd, env=env, pass_fds=pass_fds,
                                       start_new_session=True)  # its own process group: one signal reaches all
            tether.hold(started.pid)
        proc = Child(started)
    except BaseException:
        os.close(read_fd)
        raise
    finally:
        os.close(write_fd)
    lifeline.started(proc.pid)
    try:
        with anyio.move_on_after(timeout_s) as deadline:
            await _collect(proc, read_fd, out, None if to_end else DRAIN_AFTER_EXIT_S)
        if deadline.cancelled_caught:
            with anyio.CancelScope(shield=True):
                await kill_group(proc)
    except BaseException:
        with anyio.CancelScope(shield=True):
            await kill_group(proc)
        raise
    finally:
        # Closing our end means a leftover background job gets EPIPE instead of blocking.
        os.close(read_fd)
        lifeline.ended(proc.pid)
    code = proc.returncode
    return deadline.cancelled_caught, code if code is not None else -1


class Child:
    """A started process whose exit is awaited without a watcher thread: through a pidfd where
    the kernel has them (Linux 5.3+), else in a worker thread."""

    def __init__(self, popen: subprocess.Popen) -> None:
        self.popen, self.pid = popen, popen.pid

    @property
    def returncode(self) -> int | None:
        return self.popen.returncode

    def exit_fd(self) -> int | None:
        """A pidfd that becomes readable when the process exits; None where there are none."""
        try:
            return os.pidfd_open(self.pid)
        except (AttributeError, OSError):
            return None

    async def wait(self) -> int:
        if self.popen.poll() is not None:
            return self.popen.returncode
        try:
            pidfd = os.pidfd_open(self.pid)
        except (AttributeError, OSError):  # no pidfds here
            return await anyio.to_thread.run_sync(self.popen.wait, abandon_on_cancel=True)
        try:
            loop, exited = asyncio.get_running_loop(), asyncio.Event()
            loop.add_reader(pidfd, exited.set)
            try:
                await exited.wait()
            finally:
                loop.remove_reader(pidfd)
        finally:
            os.close(pidfd)
        return self.popen.wait()  # it has exited: this only reaps it


async def _collect(proc: Child, fd: int, out: CappedText, drain_s: float | None) -> None:
    """Read the merged output as it comes until the process has exited and the pipe is at its
    end — or, when a background job still holds the pipe, `drain_s` after the exit (None: to
    the end). One coroutine woken by the pipe and the process's pidfd: no reader task, no
    watcher thread."""
    loop, wake = asyncio.get_running_loop(), asyncio.Event()
    decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
    os.set_blocking(fd, False)
    exit_fd = proc.exit_fd()
    loop.add_reader(fd, wake.set)
    if exit_fd is not None:
        loop.add_reader(exit_fd, wake.set)
    try:
        at_end, exited_at = False, None
        while not at_end:
            at_end = _read_available(fd, decoder, out)
            if at_end:
                break
            if exited_at is None and proc.popen.poll() is not None:
                exited_at = loop.time()
            if exited_at is not None and drain_s is not None and loop.time() - exited_at >= drain_s:
                break
            wake.clear()
            wait = drain_s if exited_at is not None else None if exit_fd is not None else 0.05
            with anyio.move_on_after(wait if wait is not None else float("inf")):
                await wake.wait()
    finally:
        loop.remove_reader(fd)
        if exit_fd is not None:
            loop.remove_reader(exit_fd)
            os.close(exit_fd)
        out.add(decoder.decode(b"", final=True))
    await proc.wait()


def _read_available(fd: int, decoder: codecs.IncrementalDecoder, out: CappedText) -> bool:
    """Take what the pipe holds now, at most 16 chunks (a fast writer must not keep the event
    loop from its other work); True at its end (every writer has closed it)."""
    for _ in range(16):
        try:
            chunk = os.read(fd, _CHUNK)
        except BlockingIOError:
            return False
        if not chunk:
            return True
        out.add(decoder.decode(chunk))
    return False


async def kill_group(proc: Child) -> None:
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
    fields = lifeline.stat_fields(pid)
    return fields is not None and len(fields) > 2 and fields[2] == str(pgid).encode() and fields[0] not in (b"Z", b"X")
