"""Background shells: `Bash` with `run_in_background` starts one, `BashOutput` returns what it
wrote since the last read, `KillShell` stops it. One `ShellRegistry` per session holds them."""

from __future__ import annotations

import codecs
import os
import re
import shutil
import signal
import subprocess
import tempfile
import time
import weakref
from dataclasses import field
from typing import Any

import anyio
from pydantic import Field

from ..core import lifeline
from ..core.environ import child_env
from ..core.fastclass import dataclass
from ..core.ports import Access, ToolContext, ToolOutput
from .base import BaseTool, ToolInput
from .procs import KILL_GRACE_S, MAX_OUTPUT_CHARS, CappedText, group_alive

__all__ = ["BashOutputTool", "BackgroundShell", "KillShellTool", "ShellRegistry"]

_READ_CHUNK = 1 << 20


@dataclass
class BackgroundShell:
    id: str
    command: str
    description: str
    proc: subprocess.Popen[bytes]
    log: str
    offset: int = 0
    killed: bool = False
    pending: str = ""  # a line not finished yet, kept back when filtering
    decoder: Any = field(default_factory=lambda: codecs.getincrementaldecoder("utf-8")(errors="replace"))

    def status(self) -> str:
        code = self.proc.poll()
        if code is None:
            return "running"
        if self.killed:
            return "killed"
        return "completed" if code == 0 else "failed"


class ShellRegistry:
    """The background shells of one session. Each runs in its own process group and writes to
    a log file, so nothing has to pump its output while the model works on."""

    def __init__(self) -> None:
        self.shells: dict[str, BackgroundShell] = {}
        self._dirs: list[str] = []  # the log folder, made on first start
        self._groups: set[int] = set()
        self._count = 0
        # If the session never calls stop_all (a crash, a forgotten close), the interpreter's
        # exit still kills what we started instead of leaving it running unowned.
        self._finalizer = weakref.finalize(self, _kill_groups, self._groups, self._dirs)

    def start(self, argv: list[str], ctx: ToolContext, command: str, description: str = "",
              pass_fds: tuple[int, ...] = ()) -> str:
        if not self._dirs:
            self._dirs.append(tempfile.mkdtemp(prefix="loopwright-shells-"))
        self._count += 1
        shell_id = f"bash_{self._count}"
        log = os.path.join(self._dirs[0], f"{shell_id}.log")
        fd = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_CLOEXEC, 0o600)
        env = ctx.env or child_env()
        try:  # its own group, and it dies with us (lifeline): a killed worker leaves no shell behind
            tether = lifeline.tether(argv, cwd=ctx.cwd, env=env)
            proc = subprocess.Popen(tether.argv, stdin=subprocess.DEVNULL, stdout=fd, stderr=fd, cwd=ctx.cwd,
                                    env=env, start_new_session=True, pass_fds=pass_fds)
        finally:
            os.close(fd)
        tether.hold(proc.pid)
        lifeline.started(proc.pid)
        self._groups.add(proc.pid)
        self.shells[shell_id] = BackgroundShell(shell_id, command, description, proc, log)
        return shell_id

    def get(self, shell_id: str) -> BackgroundShell | None:
        return self.shells.get(shell_id)

    def read(self, shell: BackgroundShell, pattern: re.Pattern[str] | None) -> str:
        """What the shell wrote since the last read (at most MAX_OUTPUT_CHARS, start and end kept).
        With a pattern only matching lines are returned; the others are dropped for good."""
        status = shell.status()  # before reading, so a finished shell's last words are all there
        out = CappedText(MAX_OUTPUT_CHARS)
        with open(shell.log, "rb") as f:
            f.seek(shell.offset)
            while chunk := f.read(_READ_CHUNK):
                shell.offset += len(chunk)
                out.add(shell.decoder.decode(chunk))
        text = shell.pending + out.render()
        shell.pending = ""
        if pattern is not None:
            if status == "running" and not text.endswith("\n"):
                text, _, shell.pending = text.rpartition("\n")
            text = "\n".join(line for line in text.splitlines() if pattern.search(line))
        return _report(shell, status, text)

    async def kill(self, shell: BackgroundShell) -> None:
        """TERM the group, wait a grace period, then KILL it; finishes even when cancelled."""
        with anyio.CancelScope(shield=True):
            shell.killed = shell.proc.poll() is None
            pgid = shell.proc.pid
            _signal(pgid, signal.SIGTERM)
            with anyio.move_on_after(KILL_GRACE_S):
                while shell.proc.poll() is None or group_alive(pgid):
                    await anyio.sleep(0.02)
            _signal(pgid, signal.SIGKILL)
            while shell.proc.poll() is None:
                await anyio.sleep(0.01)
            self._groups.discard(pgid)
            lifeline.ended(pgid)

    def running(self) -> list[dict[str, Any]]:
        """Still-running shells as a Stop hook's `background_tasks` entries."""
        return [{"id": s.id, "type": "shell", "status": "running", "description": s.description or s.command,
                 "command": s.command} for s in self.shells.values() if s.status() == "running"]

    async def stop_all(self) -> None:
        """Kill every shell's process group (the session is ending). The logs go when the
        registry does."""
        with anyio.CancelScope(shield=True):
            async with anyio.create_task_group() as tg:
                for shell in self.shells.values():
                    if shell.proc.poll() is None or group_alive(shell.proc.pid):
                        tg.start_soon(self.kill, shell)


def _report(shell: BackgroundShell, status: str, text: str) -> str:
    lines = [f"<status>{status}</status>"]
    code = shell.proc.returncode
    if status != "running" and code is not None:
        lines.append(f"<exit_code>{code if code >= 0 else 128 - code}</exit_code>")
    lines.append(f"<stdout>\n{text}\n</stdout>" if text else "<stdout>(no new output)</stdout>")
    lines.append(f"<timestamp>{time.strftime('%Y-%m-%dT%H:%M:%S%z')}</timestamp>")
    return "\n".join(lines)


def _signal(pgid: int, sig: signal.Signals) -> None:
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def _kill_groups(groups: set[int], log_dirs: list[str]) -> None:
    for pgid in list(groups):
        _signal(pgid, signal.SIGKILL)
    groups.clear()
    for folder in log_dirs:
        shutil.rmtree(folder, ignore_errors=True)


# ------------------------------------------------------------ the tools


class BashOutputInput(ToolInput):
    bash_id: str = Field(description="The ID of the background shell (returned by Bash with run_in_background).")
    filter: str | None = Field(default=None, description="A regular expression: only new output lines that match "
                               "it are returned; the other new lines are discarded.")


class BashOutputTool(BaseTool):
    name = "BashOutput"
    read_only = True
    Input = BashOutputInput
    description = ("Read the output a background shell wrote since the last read, with its status "
                   "(running, completed, failed, killed) and exit code once it has finished. Use it to "
                   "watch commands started with Bash run_in_background.")

    def __init__(self, shells: ShellRegistry | None = None) -> None:
        self.shells = shells if shells is not None else ShellRegistry()

    def access(self, tool_input: dict[str, Any]) -> Access:
        return Access("session")  # reads only what this session's own shells wrote

    async def run(self, args: BashOutputInput, ctx: ToolContext) -> ToolOutput:
        shell = self.shells.get(args.bash_id)
        if shell is None:
            return ToolOutput(_unknown(self.shells, args.bash_id), is_error=True)
        try:
            pattern = re.compile(args.filter) if args.filter else None
        except re.error as exc:
            return ToolOutput(f"Invalid filter regular expression {args.filter!r}: {exc}.", is_error=True)
        return ToolOutput(self.shells.read(shell, pattern))


class KillShellInput(ToolInput):
    shell_id: str = Field(description="The ID of the background shell to stop.")


class KillShellTool(BaseTool):
    name = "KillShell"
    read_only = False
    Input = KillShellInput
    description = "Stop a background shell started with Bash run_in_background, with every process it started."

    def __init__(self, shells: ShellRegistry | None = None) -> None:
        self.shells = shells if shells is not None else ShellRegistry()

    def access(self, tool_input: dict[str, Any]) -> Access:
        return Access("session")  # stops only shells this session started

    async def run(self, args: KillShellInput, ctx: ToolContext) -> ToolOutput:
        shell = self.shells.get(args.shell_id)
        if shell is None:
            return ToolOutput(_unknown(self.shells, args.shell_id), is_error=True)
        if shell.status() != "running":
            return ToolOutput(f"Shell {shell.id} is not running (status: {shell.status()}); nothing to stop.")
        await self.shells.kill(shell)
        return ToolOutput(f"Killed shell {shell.id} ({shell.command}).")


def _unknown(shells: ShellRegistry, shell_id: str) -> str:
    known = ", ".join(shells.shells) or "none"
    return f"No background shell with ID {shell_id!r}. Known shells: {known}."
