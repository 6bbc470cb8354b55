"""What the commands share: the parts of `compose.build` they use beside `build()` itself
(re-exported), how results are printed, and the foreground runner. Commands import this module,
never each other; it imports no command."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from typing import TYPE_CHECKING, Awaitable, Callable, Sequence

from ..compose.build import (  # noqa: F401 (re-exported: the parts the commands use beside `build`)
    attachments,
    build_agent,
    load_run_settings,
    make_emitter,
    open_run_session,
    run_stores,
    widened,
)
from ..compose.render import denied_line, print_result, printable, visible  # noqa: F401 (re-exported)
from ..core.errors import UsageError
from ..core.events import Event, RunResult

if TYPE_CHECKING:
    from ..agent.run import Run
    from ..engine.goal import SavedGoal

MAX_STDIN = 10 * 1024 * 1024


def read_prompt(prompt: str | None, required: bool = True) -> str:
    piped = ""
    if not sys.stdin.isatty():
        piped = sys.stdin.read(MAX_STDIN)
    text = "\n\n".join(p for p in (prompt, piped.strip()) if p)
    if not text.strip() and required:
        raise UsageError("no prompt: give one as an argument (loopwright -p \"…\") or pipe it on stdin")
    return text


def is_loop(prompt: str) -> bool:
    head = prompt.strip()
    return head == "/loop" or head.startswith(("/loop ", "/loop\n"))


def recorded_argv(argv: Sequence[str]) -> list[str]:
    """The command line as a transcript keeps it: without `--store` (where the record lives, not
    how the run behaves; its URL may carry a password) and with secret-shaped values (API keys,
    tokens, `password=…` in inline `--settings`) redacted."""
    from ..replay.export import scrub_text

    out, skip = [], False
    for arg in argv:
        if skip:
            skip = False
            continue
        if arg == "--store":
            skip = True
            continue
        if arg.startswith("--store="):
            continue
        out.append(scrub_text(arg, ""))
    return out


async def foreground(run: Run, work: Callable[[], Awaitable[RunResult]], emit: Callable[[Event], None],
                     interrupt: Callable[[], None], signals: list[int] | None = None) -> RunResult:
    """Run `work` with Ctrl-C/SIGTERM wired to `interrupt` (a second one exits at once), then end
    the session and close the `run`. `signals`, when given, collects the ones that came."""
    loop = asyncio.get_running_loop()
    presses = 0

    def on_signal(sig: int) -> None:
        nonlocal presses
        presses += 1
        if presses > 1:
            stdio = sys.modules.get("loopwright.mcp.stdio")  # loaded only when a stdio MCP server started
            if stdio is not None:
                stdio.kill_all()  # os._exit skips atexit: the servers' groups would outlive us
            os._exit(130)  # a second interrupt: leave now
        if signals is not None:
            signals.append(sig)
        interrupt()

    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, on_signal, sig)
    try:
        result = await work()
        await run.end_session("other", on_event=emit)
        return result
    finally:
        await run.aclose()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.remove_signal_handler(sig)


def describe(saved: SavedGoal | None) -> str:
    if saved is None:
        return "No goal set"
    last = saved.last
    state = "active" if saved.active else ("achieved" if last.get("met") else "failed" if last.get("failed")
                                          else "cleared")
    lines = [f"Goal ({state}): {saved.spec.condition}"]
    if saved.spec.checks:
        lines.append("checks: " + "; ".join(saved.spec.checks))
    if saved.spec.protect:
        lines.append("protected: " + ", ".join(saved.spec.protect))
    lines.append(f"evaluations: {last.get('iterations', 0)} · evaluator tokens: {last.get('tokens', 0)} · "
                 f"time: {last.get('durationMs', 0) / 1000:.0f}s")
    if last.get("reason"):
        lines.append(f"last reason: {last['reason']}")
    return "\n".join(lines)
