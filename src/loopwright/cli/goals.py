"""The goal flags (`-p "/goal COND"`, `--goal`, `--goal-file`, `--check`, `--protect`,
`--goal-model`, `--goal-max-*`) turned into the `GoalSpec` a run sets, with errors that name the flag."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..config import GOAL_CLEAR_WORDS, parse_duration, positive, read_text_file
from ..core.errors import UsageError

if TYPE_CHECKING:
    from ..engine.goal import GoalSpec
    from .options import Options


def _default_evaluator(main: str | None) -> str:
    """haiku, unless the main model is another provider's: then that model judges too (one key)."""
    from ..providers.routing import served_by_openai

    return main if main and served_by_openai(main) else "haiku"


def read_goal_file(path: str) -> tuple[str, list[str], list[str]]:
    """A goal file: the condition as text; `check: CMD` and `protect: GLOB` lines add checks and
    protected paths."""
    condition, checks, protect = [], [], []
    for line in read_text_file(path, "--goal-file").splitlines():
        key, _, value = line.partition(":")
        if key.strip().lower() == "check" and value.strip():
            checks.append(value.strip())
        elif key.strip().lower() == "protect" and value.strip():
            protect.append(value.strip())
        else:
            condition.append(line)
    return "\n".join(condition).strip(), checks, protect


GOAL_FLAGS_NEED_A_GOAL = "--check, --protect and --goal-max-* need a goal (--goal COND or -p \"/goal COND\")"


def goal_flags_given(opts: Options) -> bool:
    return bool(opts.check or opts.protect or opts.goal_max_turns or opts.goal_max_duration)


def resume_goal_flags(opts: Options) -> dict[str, Any]:
    """The goal flags of this command line, for a resumed session's goal (`engine.goal.resumed_goal`)."""
    positive(opts.goal_max_turns, "--goal-max-turns")
    positive(opts.goal_max_budget_usd, "--goal-max-budget-usd")
    duration = opts.goal_max_duration
    return {"model": opts.goal_model, "max_turns": opts.goal_max_turns,
            "max_duration_s": parse_duration(duration, "--goal-max-duration") if duration else None,
            "max_budget_usd": opts.goal_max_budget_usd}


def goal_from_options(opts: Options, prompt: str | None, *,
                      resuming: bool = False) -> tuple["GoalSpec | None", str | None]:
    """The goal a headless run sets (from `-p "/goal COND"`, `--goal` or `--goal-file`) and the
    prompt that starts it. `/goal clear` and friends clear instead: (None, None). `resuming`:
    goal flags without a condition are for the resumed session's goal (the caller checks that
    it has one)."""
    condition, checks, protect = None, list(opts.check or []), list(opts.protect or [])
    if prompt and prompt.lstrip().startswith("/goal"):
        arg = prompt.lstrip()[len("/goal"):].strip()
        if not arg:
            raise UsageError("/goal needs a condition here; to see a session's goal run `loopwright goal status`")
        if arg.lower() in GOAL_CLEAR_WORDS:
            return None, None
        condition, prompt = arg, None
    sources = [c for c in (condition, opts.goal) if c] + (["file"] if opts.goal_file else [])
    if len(sources) > 1:
        raise UsageError("goal: give the condition once (-p \"/goal …\", --goal or --goal-file)")
    if opts.goal:
        condition = opts.goal
    if opts.goal_file:
        condition, more_checks, more_protect = read_goal_file(opts.goal_file)
        checks, protect = checks + more_checks, protect + more_protect
    if condition is None:
        if not resuming and goal_flags_given(opts):
            raise UsageError(GOAL_FLAGS_NEED_A_GOAL)
        return None, prompt
    from ..engine.goal import (  # only runs with a goal pay for it
        GoalSpec,
        validate_condition,
    )

    positive(opts.goal_max_turns, "--goal-max-turns")
    positive(opts.goal_max_budget_usd, "--goal-max-budget-usd")
    duration = opts.goal_max_duration
    spec = GoalSpec(validate_condition(condition), tuple(checks), tuple(protect),
                    model=opts.goal_model or _default_evaluator(opts.model),
                    max_turns=opts.goal_max_turns,
                    max_duration_s=parse_duration(duration, "--goal-max-duration") if duration else None,
                    max_budget_usd=opts.goal_max_budget_usd)
    start = spec.directive() + (f"\n\n{prompt}" if prompt else "")
    return spec, start
