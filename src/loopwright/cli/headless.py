"""`loopwright -p PROMPT`: one prompt (or a goal) answered headless, the result printed in the
chosen format, the exit code the result's. First Ctrl-C aborts the run cleanly; a second exits at once."""

from __future__ import annotations

import asyncio
import sys
from typing import TYPE_CHECKING, Any

from ..core.errors import UsageError
from ..compose.build import build
from ..compose.goals import opening_prompt
from ..compose.render import visible
from .core import describe, foreground, print_result
from .mentioned import with_mentions

if TYPE_CHECKING:
    from ..agent.run import Run
    from .options import Options
    from ..session.opening import OpenedSession


def run_headless(opts: Options, prompt: str) -> int:
    if opts.max_iterations is not None or opts.until:
        raise UsageError("--max-iterations and --until bound a time-based loop: use them with -p \"/loop …\"")
    typed = _typed(opts, prompt)
    built = build(opts.run_spec(), prompt)  # the flags as a RunSpec, run as a worker runs a queued one
    if built.goal_command is not None:  # `/goal` shows, `/goal clear` clears, and no run starts
        try:
            return _goal_command(built.saved, built.opened, clear=built.goal_command == "clear")
        finally:
            built.close()
    try:
        run = built.start()
    except BaseException:
        built.close()
        raise
    fmt = opts.output_format
    emit = built.emitter(fmt, opts.verbose)

    async def work() -> Any:
        return await run.prompt(await _with_files(run, built.goal, built.prompt, typed, fmt), on_event=emit)

    try:
        result = asyncio.run(foreground(run, work, emit, run.interrupt))
    finally:
        built.close()
    print_result(result, fmt)
    return result.exit_code


def _typed(opts: Options, prompt: str) -> tuple[str, str] | None:
    """The prompt argument and what stdin added after it, when the argument's `@path`s are to be
    attached (not for `/goal COND`: a goal's condition is judged as written). What was piped is
    data, sent as it came."""
    said = opts.prompt
    if not said or not prompt.startswith(said) or prompt.lstrip().startswith("/goal"):
        return None
    return said, prompt[len(said):]


async def _with_files(run: Run, spec: Any, prompt: str, typed: tuple[str, str] | None, fmt: str) -> str:
    """The prompt to run: the argument with the files its `@path`s name attached, as at the
    interactive prompt (`cli.mentioned`); `CommandError` when one may not be read."""
    if typed is None:
        return prompt

    def said(path: str) -> None:
        if fmt == "text":
            print(visible(f"loopwright: @ attached {path}"), file=sys.stderr, flush=True)

    text = await with_mentions(run, typed[0], said) + typed[1]
    return opening_prompt(spec, text) if spec is not None else text


def _goal_command(saved: Any, session: OpenedSession, *, clear: bool) -> int:
    from ..engine.goal import cleared_status

    if not clear:
        print(visible(describe(saved)))
    elif saved is not None and saved.active and session.recorder is not None:
        session.recorder.attach(cleared_status(saved.spec.condition))
        print(visible(f"Goal cleared: {saved.spec.condition}"))
    else:
        print("No goal set")
    return 0


__all__ = ["run_headless"]
