"""Running a command hook: `/bin/sh -c COMMAND` (or `COMMAND ARGS…` without a shell) in the
session's directory with the event JSON on stdin; on timeout its whole process group is killed."""

from __future__ import annotations

import os
import signal
import subprocess
from contextlib import suppress
from typing import Mapping, Sequence

import anyio
from anyio.abc import ByteReceiveStream, ByteSendStream

from ..core.fastclass import dataclass
from .spec import CommandSpec

SHELL = "/bin/sh"


@dataclass(frozen=True, slots=True)
class ProcessOutcome:
    code: int | None  # None: the hook ran out of time and was killed
    stdout: str
    stderr: str


def argv(spec: CommandSpec) -> list[str]:
    if spec.args is not None:
        return [spec.command, *spec.args]
    return [SHELL, "-c", spec.command]


async def run_process(command: Sequence[str], stdin: bytes, *, cwd: str | None, env: Mapping[str, str],
                      timeout: float) -> ProcessOutcome:
    # A session of its own, so that a timeout can kill whatever the hook started too.
    process = await anyio.open_process(list(command), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                       stderr=subprocess.PIPE, cwd=cwd, env=dict(env), start_new_session=True)
    out, err = bytearray(), bytearray()
    code: int | None = None
    try:
        with anyio.move_on_after(timeout):
            async with anyio.create_task_group() as tg:
                assert process.stdin and process.stdout and process.stderr
                tg.start_soon(_feed, process.stdin, stdin)
                tg.start_soon(_drain, process.stdout, out)
                tg.start_soon(_drain, process.stderr, err)
            code = await process.wait()
    finally:
        if code is None:  # timed out or cancelled: no half-finished hook outlives its decision
            _kill_group(process.pid)
        with anyio.CancelScope(shield=True):
            await process.aclose()
    return ProcessOutcome(code, out.decode("utf-8", "replace"), err.decode("utf-8", "replace"))


async def _feed(stream: ByteSendStream, data: bytes) -> None:
    # A hook need not read its input; it may exit before we finish writing it.
    with suppress(anyio.BrokenResourceError, anyio.ClosedResourceError, BrokenPipeError, ConnectionResetError):
        await stream.send(data)
    with suppress(anyio.BrokenResourceError, anyio.ClosedResourceError, BrokenPipeError, ConnectionResetError):
        await stream.aclose()


async def _drain(stream: ByteReceiveStream, into: bytearray) -> None:
    with suppress(anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError):
        async for chunk in stream:
            into += chunk


def _kill_group(pid: int) -> None:
    with suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)
