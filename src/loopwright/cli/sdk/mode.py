"""`--input-format stream-json` as the Agent SDK drives it: stdin is read while a turn runs, so
control requests (`initialize`, `interrupt`, `set_permission_mode`, `set_model`, `mcp_status`)
are answered at once and the host's answers reach the questions loopwright asked it; each
`user` line is a turn, queued in order, ended by one `result` line (`/NAME args` naming a
workflow runs it, as at the terminal). At stdin's end the queued
turns finish and the process exits: 0, or 1 if the last result was an error."""

from __future__ import annotations

import asyncio
import dataclasses
import os
import signal
import sys
import threading
from typing import TYPE_CHECKING, Any

from ... import __version__
from ...core import jsonsafe
from ...core.errors import UsageError
from ...context.commands import CommandError
from ...core.events import ResultEvent, RunResult
from ...core.types import ModelText
from .channel import ControlChannel, SdkApprover
from .requests import HostRequests
from .emit import SdkOutput
from ..mentioned import with_mentions
from ..streamin import MAX_LINE_CHARS, parse_line

if TYPE_CHECKING:
    from ...agent.run import Run
    from ..options import Options

_EOF = object()


class Server:
    """One session served over stdin/stdout. `items` holds, in stdin's order, the turns to run
    (text, shouldQuery), errors to raise, and the end of input."""

    def __init__(self, live: Run, out: SdkOutput, channel: ControlChannel, host: HostRequests) -> None:
        """`live`: the session's run."""
        self.live, self.out, self.channel, self.host = live, out, channel, host
        self.items: asyncio.Queue[Any] = asyncio.Queue()
        self.stopping = False  # SIGTERM/SIGINT: finish nothing more
        self.last: RunResult | None = None
        self.number = 0

    def on_line(self, line: str) -> None:
        """A stdin line (in the event loop's thread): control lines are handled now, the rest queued."""
        self.number += 1
        if len(line.rstrip("\n")) > MAX_LINE_CHARS:
            self.items.put_nowait(UsageError(f"stdin line {self.number} is longer than {MAX_LINE_CHARS:,} "
                                             "characters, the cap for one message"))
            return
        if not line.strip():
            return
        try:
            data = jsonsafe.loads(line)
        except (ValueError, RecursionError):
            data = None  # parse_line says what is wrong with it, in order
        kind = data.get("type") if isinstance(data, dict) else None
        if kind == "control_request":
            self.host.handle(data)
        elif kind == "control_response":
            self.channel.answered(data)
        elif kind == "control_cancel_request":
            self.host.cancel(str(data.get("request_id")))
        elif kind == "keep_alive":
            return
        else:
            try:
                self.items.put_nowait(parse_line(line, self.number))
            except UsageError as exc:
                self.items.put_nowait(exc)

    def on_eof(self) -> None:
        self.channel.close()
        self.items.put_nowait(_EOF)

    def stop(self) -> None:
        """SIGTERM or Ctrl-C: the running turn is interrupted and no other starts."""
        self.stopping = True
        self.channel.withdraw_all()
        self.live.interrupt()
        if self.host.stop_workflow is not None:
            self.host.stop_workflow()
        self.items.put_nowait(_EOF)

    async def serve(self) -> RunResult | None:
        pending: list[str] = []
        while not self.stopping:
            item = await self.items.get()
            if item is _EOF:
                break
            if isinstance(item, UsageError):
                raise item
            text, query = item
            pending.append(text)
            if query:  # as written when the message that opens the turn is (stream-json `client_composed`)
                joined = "\n\n".join(pending)
                await self.turn(ModelText(joined) if isinstance(pending[0], ModelText) else joined)
                pending = []
        if pending:
            print(f"loopwright: warning: {len(pending)} message(s) with shouldQuery false were never sent: no turn "
                  "followed them", file=sys.stderr, flush=True)
        return self.last

    async def turn(self, prompt: str) -> None:
        self.out.state("running")
        self.host.busy = True
        try:
            if (called := self.workflow_named(prompt)) is not None:
                self.last = await self.workflow(*called)
                return
            prompt = await with_mentions(self.live, prompt)  # its `@path`s attached, as at the terminal
            self.last = await self.live.prompt(prompt, on_event=self.out.emit)
        except CommandError as exc:  # an unknown /name, a step or an `@path` refused: this turn's error result
            self.last = refused(self.live.session.session_id, str(exc))
            self.out.emit(ResultEvent(self.last))
        finally:
            self.host.busy = False
            self.out.state("idle")


    def workflow_named(self, prompt: str) -> tuple[str, list[str]] | None:
        """`/NAME args` naming a workflow, as at the terminal (a message the client composed is text)."""
        if isinstance(prompt, ModelText) or not prompt.lstrip().startswith("/"):
            return None
        from ..commands.workflow import slash_workflow

        return slash_workflow(prompt, plugins=list(self.live.agent.plugins))

    async def workflow(self, name: str, args: list[str]) -> RunResult:
        """The workflow run as at the terminal (`cli.workflowturn`): its agents subagents of this
        session, its progress `system/workflow_status` lines, only the call and the final answer
        joining the conversation; an interrupt stops it. A file that cannot be used is this turn's
        error result."""
        from ...core.errors import LoopwrightError
        from ...core.events import SystemInit
        from ..commands.workflow import status_frame
        from ..workflowturn import InConversation

        agent, session_id, run = self.live.agent, self.live.session.session_id, InConversation(self.live, name, args)
        self.out.emit(SystemInit(session_id, str(agent.cwd), agent.model, tuple(t.name for t in self.live.tools()),
                                 agent.permissions.mode))
        self.host.stop_workflow = run.stop
        try:
            return await run(self.out.emit, lambda status: self.out.line(status_frame(status, session_id)))
        except LoopwrightError as exc:
            result = refused(session_id, str(exc))
            self.out.emit(ResultEvent(result))
            return result
        finally:
            self.host.stop_workflow = None


def refused(session_id: str, why: str) -> RunResult:
    """The result of a turn that ended before its run began: nothing was sent, the session goes on."""
    from ...core.types import Usage

    return RunResult("error_during_execution", True, "", session_id, 0, 0, 0, 0.0, Usage(), {}, None,
                     "startup_error", errors=(why,))


def read_stdin(loop: asyncio.AbstractEventLoop, server: Server, stream: Any = None) -> None:
    """In a daemon thread: a blocked read never holds the process at exit. The loop may have
    ended meanwhile (a bad line ends the session while the next one is still being read): then
    the rest of stdin is nobody's, and this thread ends without a word."""
    try:
        while line := (stream or sys.stdin).readline(MAX_LINE_CHARS + 1):
            loop.call_soon_threadsafe(server.on_line, line)
        loop.call_soon_threadsafe(server.on_eof)
    except (OSError, ValueError, RuntimeError):  # RuntimeError: the event loop is closed
        pass


def run_sdk(opts: Options) -> int:
    from ...compose.build import build
    from ..core import foreground
    from .flags import split_sdk_servers

    if opts.output_format != "stream-json":
        raise UsageError("--input-format stream-json needs --output-format stream-json")
    if opts.prompt:
        raise UsageError("--input-format stream-json reads the messages from stdin: give no prompt argument")
    configs, sdk_servers = split_sdk_servers(opts.mcp_config)
    opts = dataclasses.replace(opts, mcp_config=configs)
    built = build(opts, "", goal=False)  # each `user` line is a turn of its own; none composes a goal
    if built.agent.system_prompt == "":  # what the SDK sends for its default: a minimal prompt, not none
        built.agent = built.agent.replace(system_prompt=MINIMAL_PROMPT.format(cwd=built.agent.cwd))
    live = built.start()
    out = SdkOutput(live, bool(opts.include_hook_events), _init_extra(opts) | built.init(),
                    state_frames=os.environ.get("CLAUDE_CODE_SDK_READS_SESSION_STATE") == "1",
                    replay_prompts=opts.replay_user_messages)
    channel = ControlChannel(out.line)
    host = HostRequests(live, channel, out)
    agent = live.agent
    approver = SdkApprover(channel, live.interrupt, live) if opts.permission_prompt_tool == "stdio" else agent.approver
    live.update(mcp_servers=(*agent.mcp_servers, *host_servers(sdk_servers, channel)), approver=approver)
    server = Server(live, out, channel, host)

    async def work() -> RunResult | None:
        threading.Thread(target=read_stdin, args=(asyncio.get_running_loop(), server), daemon=True).start()
        return await server.serve()

    signals: list[int] = []
    try:
        result = asyncio.run(foreground(live, work, out.emit, server.stop, signals))  # type: ignore[arg-type]
    finally:
        built.close()
    if signals and signals[0] == signal.SIGINT:
        return 130  # the user's Ctrl-C, as for `-p`
    return 1 if result is not None and result.is_error else 0


def host_servers(names: tuple[str, ...], channel: ControlChannel) -> list[Any]:
    """The SDK's in-process MCP servers (`{"type": "sdk"}`), reached with `mcp_message` requests."""
    from ...mcp.config import ServerSpec

    def bridge(name: str) -> Any:
        async def ask(message: dict[str, Any]) -> Any:
            answer = await channel.request({"subtype": "mcp_message", "server_name": name, "message": message})
            return answer.get("mcp_response")

        return ask

    return [ServerSpec(name, "sdk", source="--mcp-config", bridge=bridge(name)) for name in names]


def _init_extra(opts: Options) -> dict[str, Any]:
    """system/init fields the SDK's users read (Claude Code's names)."""
    return {"claude_code_version": CLAUDE_CODE_PROTOCOL, "apiKeySource": "ANTHROPIC_API_KEY"
            if os.environ.get("ANTHROPIC_API_KEY") else "none", "output_style": "default",
            "plugins": [], "loopwright_version": __version__}


MINIMAL_PROMPT = "You are an agent working with tools in {cwd}."
CLAUDE_CODE_PROTOCOL = "2.1.332"  # the Claude Code version whose stream-json protocol this follows


__all__ = ["run_sdk"]
