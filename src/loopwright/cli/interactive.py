"""`loopwright` at a terminal: a prompt, one session, turns shown as they happen, tool calls
that need permission asked about (yes, no, or always for this tool), Ctrl-C to stop a turn and
Ctrl-D or /exit to leave. A plain line editor for now (readline where Python has it)."""

from __future__ import annotations

import asyncio
import signal
import sys
from typing import TYPE_CHECKING, Any

from ..core.events import RunResult
from .render import Progress, _short, visible

if TYPE_CHECKING:
    from .options import Options

HELP = """Commands:
  /help              this list
  /cost              what this session has spent
  /compact           summarise the older conversation now
  /goal CONDITION    keep working until the condition holds (/goal alone: its status; /goal clear)
  /exit, /quit       leave (Ctrl-D too)
Anything else is a prompt. Ctrl-C stops the running turn."""


class TerminalApprover:
    """Asks at the terminal whether a tool call may run: y(es), n(o), a(lways this tool)."""

    def __init__(self, ask: Any = None) -> None:
        self.ask = ask or (lambda text: asyncio.to_thread(input, text))
        self.always: set[str] = set()

    async def approve(self, tool_name: str, tool_input: dict[str, Any], reason: str) -> bool:
        if tool_name in self.always:
            return True
        print(visible(f"\n? {tool_name}({_short(tool_input, 100)}) — {reason}"), flush=True)
        try:
            answer = (await self.ask("  allow? [y]es / [n]o / [a]lways for this tool: ")).strip().lower()
        except EOFError:
            return False
        if answer in ("a", "always"):
            self.always.add(tool_name)
        return answer in ("y", "yes", "a", "always")


def run_interactive(opts: Options) -> int:
    from .core import build_agent, load_cli_settings, open_cli_session

    try:
        import readline  # noqa: F401  (line editing and history for input())
    except ImportError:
        pass
    agent = build_agent(opts, trusted(load_cli_settings(opts, announce=False)))
    agent.approver = TerminalApprover()
    session = open_cli_session(opts, agent, checkpoints=True)
    print(f"loopwright · session {agent.session_id} · {agent.model} · {agent.cwd}\n/help for commands.", flush=True)
    try:
        return asyncio.run(_repl(agent, opts.prompt))
    finally:
        session.close()


def trusted(settings: Any, ask: Any = input) -> Any:
    """Workspace trust: the first time this folder's project settings would run code or widen
    what the agent may do, say what they are and ask once; the answer is remembered per folder
    (`loopwright trust`). Not trusted: those parts stay off for the session."""
    import os

    from ..stores.trust import TrustStore
    from .core import printable, widened

    if not widened(settings):
        return settings
    store, folder = TrustStore.default(), os.getcwd()
    answer = store.answer(folder)
    if answer is None:
        print(f"This folder's project settings would run code or let the agent do more:\n  "
              f"{printable(widened(settings))}\n"
              "Trust only a folder whose files you know: its hooks run commands on this machine.\n"
              f"Trust {printable(folder)}?", flush=True)
        try:
            answer = ask("[y]es / [n]o: ").strip().lower() in ("y", "yes")
        except EOFError:
            print(flush=True)
            answer = None  # no answer: off for now, asked again next time
        if answer is not None:
            store.remember(folder, answer)
    if answer:
        return settings
    print("Project hooks, allow rules, env and MCP servers are off in this folder (not trusted); `loopwright trust .` "
          "trusts it.", flush=True)
    return settings.untrusted()


async def _repl(agent: Any, first: str | None = None) -> int:
    from ..context.commands import CommandError

    progress, spent = Progress(sys.stdout), 0.0
    running: asyncio.Task[RunResult] | None = None
    loop = asyncio.get_running_loop()

    def on_interrupt() -> None:
        if running is not None and not running.done():
            agent.interrupt()
        else:
            print("\n(Ctrl-D or /exit to leave)", flush=True)

    loop.add_signal_handler(signal.SIGINT, on_interrupt)
    try:
        while True:
            try:
                line, first = (first.strip(), None) if first else ((await asyncio.to_thread(input, "› ")).strip(), None)
            except EOFError:
                print(flush=True)
                break
            if not line:
                continue
            if line in ("/exit", "/quit"):
                break
            if line.startswith("/") and line.split()[0] in ("/help", "/cost", "/compact"):
                spent = await _command(agent, line, spent, progress)
                continue
            if line.startswith("/goal") and not _goal(agent, line):
                continue
            running = asyncio.ensure_future(agent.run(_prompt(agent, line), on_event=progress))
            try:
                result = await running
            except CommandError as exc:  # an unknown /name, a command step refused: said, the session goes on
                print(f"loopwright: {visible(str(exc))}", flush=True)
                continue
            spent += result.total_cost_usd
            if (closing := _closing(result)) is not None:
                print(visible(closing), flush=True)
        await agent.end_session("prompt_input_exit")
        return 0
    finally:
        loop.remove_signal_handler(signal.SIGINT)
        await agent.aclose()


async def _command(agent: Any, line: str, spent: float, progress: Progress) -> float:
    name = line.split()[0]
    if name == "/help":
        print(HELP, flush=True)
    elif name == "/cost":
        print(f"${spent:.4f} this session", flush=True)
    else:
        done = await agent.compact(on_event=progress)
        print("compacted" if done else "nothing to compact yet", flush=True)
    return spent


def _goal(agent: Any, line: str) -> bool:
    """`/goal …` at the prompt: True when a turn should run now (a goal was set)."""
    from ..config import GOAL_CLEAR_WORDS
    from ..core.errors import UsageError
    from ..engine.goal import GoalSpec, validate_condition

    condition = line[len("/goal"):].strip()
    if not condition:
        print(visible(f"goal: {agent.goal.condition}") if agent.goal is not None else "No goal set", flush=True)
        return False
    if condition in GOAL_CLEAR_WORDS:
        agent.set_goal(None)
        print("Goal cleared", flush=True)
        return False
    try:
        agent.set_goal(GoalSpec(validate_condition(condition)))
    except UsageError as exc:
        print(f"error: {exc}", flush=True)
        return False
    from .goals import bounds_line

    print(bounds_line(agent.goal, agent.model).removeprefix("loopwright: "), flush=True)
    return True


def _prompt(agent: Any, line: str) -> str:
    return agent.goal.directive() if line.startswith("/goal") and agent.goal is not None else line


def _closing(result: RunResult) -> str | None:
    """What to print after a turn: the answer itself was shown as it came (each assistant
    message), so only a stop, an error or a structured answer needs saying."""
    if result.terminal_reason == "aborted":
        return "(stopped)"
    if result.is_error:
        return "Error: " + "; ".join(result.errors or [result.terminal_reason])
    if result.structured_output is not None:
        from .render import dumps

        return dumps(result.structured_output)
    return None


__all__ = ["TerminalApprover", "run_interactive", "trusted"]
