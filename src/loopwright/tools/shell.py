"""The Bash tool: one command in its own process group, under bwrap (the sandbox is on unless
trusted settings or `--no-sandbox` turned it off), output merged and capped, the whole group
killed on timeout or cancellation (TERM, then KILL after a grace period); `run_in_background`
hands the command to the session's shell registry. A call with `dangerouslyDisableSandbox`, or
one matching `sandbox.excludedCommands`, runs outside the sandbox once the permission gate let it
through (it always asks about those), and its result says so."""

from __future__ import annotations

import signal
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import Field

from ..core.ports import Access, ToolContext, ToolOutput
from ..sandbox import bwrap
from .access import bash_access
from .base import BaseTool, ToolInput
from .procs import MAX_OUTPUT_CHARS, CappedText, run_command, shell_path

if TYPE_CHECKING:
    from ..sandbox.proxy import Channel
    from .background import ShellRegistry

DEFAULT_TIMEOUT_MS = 120_000
MAX_TIMEOUT_MS = 600_000


class BashInput(ToolInput):
    command: str = Field(description="The shell command to run.")
    timeout: int | None = Field(
        default=None,
        ge=1,
        le=MAX_TIMEOUT_MS,
        description=f"Timeout in milliseconds (default {DEFAULT_TIMEOUT_MS}, max {MAX_TIMEOUT_MS}).",
    )
    description: str | None = Field(
        default=None, description="A short description of what the command does (5-10 words)."
    )
    run_in_background: bool = Field(
        default=False,
        description="Run the command in the background and return its shell ID at once; read its "
        "output with BashOutput and stop it with KillShell.",
    )
    dangerouslyDisableSandbox: bool = Field(
        default=False,
        description="Run this command outside the OS sandbox. Only when the sandbox blocked something the task "
        "truly needs (the result says what it blocked); the user is asked to approve every such call, and "
        "non-interactive runs deny it unless a permission rule allows that command.",
    )


class BashTool(BaseTool):
    name = "Bash"
    read_only = False
    Input = BashInput
    description = (
        "Run a command with bash in the session's working directory and return its combined "
        "stdout and stderr. Stdin is empty, so interactive commands fail; pass flags such as -y. "
        f"The default timeout is {DEFAULT_TIMEOUT_MS // 1000} s (max {MAX_TIMEOUT_MS // 1000} s). "
        f"Output longer than {MAX_OUTPUT_CHARS} characters keeps its start and end only. Prefer "
        "Read, Edit, Write, Glob and Grep over cat, sed, echo >, find and grep. Long-running "
        "commands (servers, watchers) can run with run_in_background."
    )

    def __init__(self, sandbox: bwrap.SandboxConfig | None = None, shells: ShellRegistry | None = None) -> None:
        self.sandbox = sandbox or bwrap.SandboxConfig()
        self._shells = shells

    @property
    def shells(self) -> ShellRegistry:
        if self._shells is None:
            from .background import ShellRegistry

            self._shells = ShellRegistry()
        return self._shells

    def access(self, tool_input: dict[str, Any]) -> Access:
        return bash_access(tool_input, self.sandbox)

    def argv(self, command: str, ctx: ToolContext, outside: str = "",
             channel: Channel | None = None) -> tuple[list[str], str]:
        """The command line to start, and a note for the model (empty when all is well).
        `outside`: why this call runs outside the sandbox (the gate asked about it); with a
        proxy `channel`, the sandboxed command starts behind its forwarder.
        Raises `SandboxUnavailable` when the sandbox is on, cannot run, and fails closed."""
        plain = [shell_path(), "-c", command]
        if not self.sandbox.enabled:
            return plain, ""
        if outside:
            return plain, f"(this command ran outside the sandbox: {outside})"
        why = bwrap.availability()
        if why is not None:
            if self.sandbox.fail_closed:
                raise SandboxUnavailable(
                    f"Bash is refused: the sandbox cannot run here ({why}) and sandbox.failIfUnavailable is "
                    "true. Tell the user: install bubblewrap, or turn the sandbox off (--no-sandbox).")
            return plain, f"(warning: the sandbox cannot run here ({why}); this command ran without it)"
        from ..sandbox.protect import Unprotectable
        from ..sandbox.seccomp import UnsupportedMachine

        roots = tuple(str(r) for r in (*ctx.writable_roots, *self.sandbox.writable)) or (str(ctx.cwd),)
        try:
            inner = channel.command(plain) if channel is not None else plain
            return bwrap.wrap(inner, cwd=str(ctx.cwd), roots=roots, network=self.sandbox.network,
                              sockets_open=self.sandbox.sockets_open, deny_read=self.sandbox.deny_read,
                              deny_write=self.sandbox.deny_write,
                              pass_fds=(channel.fd,) if channel is not None else (),
                              visible=self.sandbox.visible), ""
        except (Unprotectable, UnsupportedMachine, OSError) as exc:  # OSError: no home for its locks
            raise SandboxUnavailable(f"Bash is refused: the sandbox cannot guard this project: {exc}") from None

    async def run(self, args: BashInput, ctx: ToolContext) -> ToolOutput:
        if not Path(ctx.cwd).is_dir():
            return ToolOutput(f"The working directory {ctx.cwd} does not exist.", is_error=True)
        outside = bwrap.escape_reason(args.model_dump(), self.sandbox)
        channel = None if outside else self._proxy_channel()
        try:
            argv, note = self.argv(args.command, ctx, outside, channel)
        except SandboxUnavailable as exc:
            if channel is not None:
                channel.close()
            return ToolOutput(str(exc), is_error=True)
        if args.run_in_background:
            return self._background(argv, args, ctx, note, channel)
        timeout_ms = args.timeout or DEFAULT_TIMEOUT_MS
        out = CappedText(MAX_OUTPUT_CHARS)
        sandboxed = self.sandbox.enabled and not note  # a note says it ran without the sandbox
        try:
            # under the sandbox nothing of the command outlives it (its PID namespace ends with
            # it), so the output is read to its end: the launcher's last word comes after the exit
            timed_out, code = await run_command(args.command, ctx, timeout_ms / 1000, out, argv=argv,
                                                pass_fds=(channel.fd,) if channel is not None else (),
                                                to_end=sandboxed)
        except OSError as exc:
            return ToolOutput(f"Could not start the shell: {exc}", is_error=True)
        finally:
            refused = channel.close() if channel is not None else ()
        text = out.render()
        if sandboxed and code != 0 and (hint := bwrap.blocked_hint(text, self.sandbox)) is not None:
            text = f"{text}\n{hint}"
        text = "\n".join(t for t in (note, text, *refused) if t)
        if timed_out:
            tail = f"\n{text}" if text else ""
            return ToolOutput(f"Command timed out after {timeout_ms} ms{tail}", is_error=True)
        if code == 0:
            return ToolOutput(text or "(no output)", response={
                "stdout": out.render(), "stderr": "", "interrupted": False, "isImage": False,
                "noOutputExpected": False})
        body = f"\n{text}" if text else ""
        return ToolOutput(f"Exit code {_describe_exit(code)}{body}", is_error=True)

    def _proxy_channel(self) -> Channel | None:
        """A way to the network proxy for one command, when it runs sandboxed with allowed domains."""
        config = self.sandbox
        if not (config.enabled and config.domains) or config.network or bwrap.availability() is not None:
            return None
        from ..core.domains import Allowlist
        from ..sandbox.proxy import shared_proxy

        return shared_proxy().open(Allowlist.parse(self.sandbox.domains))

    def _background(self, argv: list[str], args: BashInput, ctx: ToolContext, note: str,
                    channel: Channel | None) -> ToolOutput:
        try:
            shell_id = self.shells.start(argv, ctx, args.command, args.description or "",
                                         pass_fds=(channel.fd,) if channel is not None else ())
        except OSError as exc:
            if channel is not None:
                channel.close()
            return ToolOutput(f"Could not start the shell: {exc}", is_error=True)
        if channel is not None:
            channel.release()  # the channel ends when the command's sandbox does
        lines = [note] if note else []
        lines.append(f"Command running in background with ID: {shell_id}. Read its output with BashOutput "
                     f"(bash_id {shell_id!r}); stop it with KillShell (shell_id {shell_id!r}).")
        return ToolOutput("\n".join(lines))


class SandboxUnavailable(RuntimeError):
    """The sandbox was asked for, cannot run, and Bash fails closed."""


def _describe_exit(code: int) -> str:
    if code >= 0:
        return str(code)
    try:
        name = signal.Signals(-code).name
    except ValueError:
        name = f"signal {-code}"
    return f"{128 - code} (killed by {name})"
