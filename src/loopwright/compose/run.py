"""`run_spec`: a `RunSpec` built (`build`) and run to its end in one call — the library's way to
run what `loopwright -p` flags, a schedule or a queued job describe, with nothing printed but the
warnings `-p` says on stderr."""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable

from ..core.errors import UsageError
from .build import build

if TYPE_CHECKING:
    from ..core.events import Event, RunResult
    from .runspec import RunSpec


async def run_spec(spec: RunSpec, prompt: str | None = None, *,
                   on_event: Callable[[Event], None] | None = None) -> RunResult:
    """Run `spec` in the current folder: its settings, agent and session composed, its goal set,
    `prompt` (default: the spec's) run, SessionEnd fired and the session closed. `on_event` sees
    every event. `UsageError` for a spec that cannot run (it names the field or flag)."""
    text = spec.prompt if prompt is None else prompt
    if not (text or "").strip() and not (spec.goal or spec.goal_file):
        raise UsageError("run spec: no prompt: give its 'prompt' (or a 'goal'), or pass the prompt to run_spec")
    built = build(spec, text, announce=False)
    if built.goal_command is not None:
        built.close()
        raise UsageError(f"run spec: field 'prompt': {(text or '').strip()!r} only shows or clears a session's goal, "
                         "and runs nothing; `loopwright goal status|clear` does that")
    try:
        run = built.start()
    except BaseException:
        built.close()
        raise
    try:
        result = await run.prompt(built.prompt, on_event=on_event)
        await run.end_session("other", on_event=on_event)
    finally:
        await run.aclose()
        built.close()
    return result
