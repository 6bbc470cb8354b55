"""Running a command hook: `/bin/sh -c COMMAND` (or `COMMAND ARGS…` without a shell) in the
session's directory with the event JSON on stdin. Its answer is what it wrote by the time it
exited (pipes then get a short grace, not forever); its output is capped; whatever it started
ends with it (reap.py)."""

from __future__ import annotations

import os
import signal
import subprocess
from contextlib import suppress
from typing import Callable, Mapping, Sequence

import anyio
from anyio.abc import ByteReceiveStream, ByteSendStream

from ..core import lifeline
from ..core.fastclass import dataclass
from . import reap
from .spec import CommandSpec

SHELL = "/bin/sh"
MAX_OUTPUT_BYTES = 1024 * 1024  # per stream; a hook that writes more is stopped and its answer is an error
EXIT_GRACE_S = 0.25  # after the hook exits, what is still in its pipes is read for this long at most


@dataclass(frozen=True, slots=True)
class ProcessOutcome:
    code: int | None  # None: the hook ran out of time and was killed; below 0: killed by that signal
    stdout: str
    stderr: str
    overflow: str | None = None  # "stdout" or "stderr": it went past MAX_OUTPUT_BYTES and the hook was stopped


def argv(spec: CommandSpec) -> list[str]:
    if spec.args is not None:
        return [spec.command, *spec.args]
    return [SHELL, "-c", spec.command]


class _Capped:
    """One stream's bytes, at most MAX_OUTPUT_BYTES of them; `full` calls back once past it."""

    def __init__(self, name: str, full: Callable[[], None]) -> None:
        self.name, self.full = name, full
        self.data = bytearray()
        self.over = False
        self.done = anyio.Event()

    def add(self, chunk: bytes) -> None:
        room = MAX_OUTPUT_BYTES - len(self.data)
        self.data += chunk[:max(room, 0)]
        if len(chunk) > room and not self.over:
            self.over = True
            self.full()

    def text(self) -> str:
        return self.data.decode("utf-8", "replace")


async def run_process(command: Sequence[str], stdin: bytes, *, cwd: str | None, env: Mapping[str, str],
                      timeout: float, mark: str) -> ProcessOutcome:
    """`mark` (unique per run) goes into the hook's environment, so that what it starts can be
    found and ended even after leaving its session."""
    since = reap.clock_ticks() - 1
    # A session of its own: one signal reaches its process group, and its session id finds the rest;
    # and it dies with us (lifeline), as a tool's command does.
    env = reap.marked(dict(env), mark)
    tether = lifeline.tether(command, cwd=cwd, env=env)
    process = await anyio.open_process(tether.argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                       stderr=subprocess.PIPE, cwd=cwd, env=env, start_new_session=True)
    tether.hold(process.pid)

    def stop() -> None:  # over the cap: no point waiting for the rest
        with suppress(ProcessLookupError, PermissionError):
            os.killpg(process.pid, signal.SIGKILL)

    out, err = _Capped("stdout", stop), _Capped("stderr", stop)
    code: int | None = None
    leftovers = 0
    try:
        with anyio.move_on_after(timeout):
            code, leftovers = await _exchange(process, stdin, out, err, mark, since)
    finally:
        if code is None or leftovers:  # timed out or cancelled, or it left something running: sweep (again)
            reap.end(process.pid, mark, since)
        with anyio.CancelScope(shield=True):
            await process.aclose()
    overflow = next((s.name for s in (out, err) if s.over), None)
    return ProcessOutcome(code, out.text(), err.text(), overflow)


async def _exchange(process: anyio.abc.Process, stdin: bytes, out: _Capped, err: _Capped, mark: str,
                    since: int) -> tuple[int, int]:
    """Feed, read, wait for the exit; then end what the hook left behind (which also closes
    the pipes it held) and give the pipes a short grace. Returns (exit code, leftovers ended)."""
    assert process.stdin and process.stdout and process.stderr
    async with anyio.create_task_group() as tg:
        tg.start_soon(_feed, process.stdin, stdin)
        tg.start_soon(_drain, process.stdout, out)
        tg.start_soon(_drain, process.stderr, err)
        code = await process.wait()
        leftovers = reap.end(process.pid, mark, since)
        with anyio.move_on_after(EXIT_GRACE_S):
            await out.done.wait()
            await err.done.wait()
        tg.cancel_scope.cancel()
    return code, leftovers


async def _feed(stream: ByteSendStream, data: bytes) -> None:
    # A hook need not read its input; it may exit before we finish writing it.
    with suppress(anyio.BrokenResourceError, anyio.ClosedResourceError, BrokenPipeError, ConnectionResetError):
        await stream.send(data)
    with suppress(anyio.BrokenResourceError, anyio.ClosedResourceError, BrokenPipeError, ConnectionResetError):
        await stream.aclose()


async def _drain(stream: ByteReceiveStream, into: _Capped) -> None:
    with suppress(anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError):
        async for chunk in stream:
            into.add(chunk)
    into.done.set()
