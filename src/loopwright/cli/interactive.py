"""`loopwright` at a terminal: the workspace-trust question first (before any project hook
runs), then one session at an interactive prompt (cli/tui): prompt_toolkit and rich when input and
output are a terminal (without colours under NO_COLOR), plain lines with a dumb terminal or
redirected output. Neither library is imported on any other path."""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .options import Options


def fancy() -> bool:
    """prompt_toolkit and rich, or plain lines."""
    return (sys.stdin.isatty() and sys.stdout.isatty()
            and os.environ.get("TERM", "dumb") not in ("dumb", "unknown", ""))


def run_interactive(opts: Options) -> int:
    import asyncio
    from dataclasses import replace

    from ..compose.build import build
    from .tui.ask import Asker
    from .tui.room import Room

    rich = fancy()
    spec = replace(opts, include_partial_messages=True) if rich else opts  # rich shows text as it streams
    # the first line is the room's to run (a command, a prompt): no goal is composed from it here
    built = build(spec, "", announce=False, trust=trusted, goal=False, checkpoints=True)
    front = _front(rich)
    live = built.start(approver=lambda run: Asker(run, front.choose))  # "always" changes the run's rules
    room = Room(live, opts, built.opened, front)
    front.say(f"loopwright · session {built.session.session_id} · {built.agent.model} · {built.agent.cwd}\n"
              "/help for commands.")
    try:
        return asyncio.run(room.main(opts.prompt))
    finally:
        room.session.close()  # the session open now (/clear and /resume switch it)


def _front(rich: bool) -> Any:
    if rich:
        from .tui.screen import RichFront

        return RichFront()
    try:
        import readline  # noqa: F401  (line editing and history for input())
    except ImportError:
        pass
    from .tui.plain import PlainFront

    return PlainFront()


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


__all__ = ["run_interactive", "trusted"]
