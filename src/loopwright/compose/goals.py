"""The goal flags (`-p "/goal COND"`, `--goal`, `--goal-file`, `--check`, `--protect`,
`--goal-model`, `--goal-max-*`) turned into the `GoalSpec` a run sets, with errors that name the flag."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..config import GOAL_CLEAR_WORDS, parse_duration, read_text_file
from ..core.errors import UsageError

if TYPE_CHECKING:
    from ..agent.session import Session
    from ..engine.goal import GoalSpec, SavedGoal
    from .runspec import RunSpec


def _default_evaluator(main: str | None) -> str:
    """haiku, unless the main model is another provider's: then that model judges too (one key)."""
    from ..providers.registry import is_default

    return main if main and not is_default(main) else "haiku"


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


def read_variations(path: str | None) -> list[str]:
    """`--attempt-instructions`: one variation per line (blank lines and `#` comments skipped)."""
    if path is None:
        return []
    try:
        text = Path(path).read_text()
    except OSError as exc:
        raise UsageError(f"--attempt-instructions {path}: cannot read it ({exc.strerror})") from None
    lines = [line.strip() for line in text.splitlines() if line.strip() and not line.lstrip().startswith("#")]
    if not lines:
        raise UsageError(f"--attempt-instructions {path}: no instructions in it (one variation per line)")
    return lines


GOAL_FLAGS_NEED_A_GOAL = "--check, --protect and --goal-max-* need a goal (--goal COND or -p \"/goal COND\")"


def goal_flags_given(opts: RunSpec) -> bool:
    return bool(opts.check or opts.protect or opts.goal_max_turns or opts.goal_max_duration
                or opts.goal_max_budget_usd)


def bound_flags(opts: RunSpec) -> dict[str, Any]:
    """`--goal-max-turns`, `--goal-max-duration`, `--goal-max-budget-usd`: each a value, or
    `none` to lift that default bound (policy.bounds); as keywords of `GoalSpec`."""
    out: dict[str, Any] = {"max_turns": None, "max_duration_s": None, "max_budget_usd": None}
    removed = []
    for key, flag, value, parse in (
            ("turns", "--goal-max-turns", opts.goal_max_turns, _whole),
            ("duration", "--goal-max-duration", opts.goal_max_duration, parse_duration),
            ("budget", "--goal-max-budget-usd", opts.goal_max_budget_usd, _amount)):
        if value is None:
            continue
        if value.strip().lower() == "none":
            removed.append(key)
            continue
        field = {"turns": "max_turns", "duration": "max_duration_s", "budget": "max_budget_usd"}[key]
        out[field] = parse(value.strip(), flag)
    return {**out, "unbounded": tuple(removed)}


def _whole(value: str, flag: str) -> int:
    if not value.isdigit() or int(value) <= 0:
        raise UsageError(f"{flag}: expected a whole number above 0, or none to remove the default bound, got {value!r}")
    return int(value)


def _amount(value: str, flag: str) -> float:
    try:
        amount = float(value)
    except ValueError:
        amount = -1.0
    if not amount > 0 or amount == float("inf"):
        raise UsageError(f"{flag}: expected an amount above 0 such as 2.50, or none to remove the default bound, "
                         f"got {value!r}")
    return amount


def resume_goal_flags(opts: RunSpec) -> dict[str, Any]:
    """The goal flags of this command line, for a resumed session's goal (`engine.goal.resumed_goal`)."""
    return {"model": opts.goal_model, **bound_flags(opts)}


def bounds_line(spec: "GoalSpec", model: str) -> str:
    """The one stderr line that says which bounds this goal runs under."""
    from ..policy.models import resolve_model

    bounds = spec.bounds(resolve_model(model).price is not None)
    if bounds.unbounded:
        return ("loopwright: warning: this goal has no bounds (all removed with none): it runs until it is met, "
                "found impossible or interrupted")
    return (f"loopwright: goal bounds: {bounds.describe()}; change with --goal-max-turns, --goal-max-duration, "
            "--goal-max-budget-usd (a value, or none)")


def goal_from_options(opts: RunSpec, prompt: str | None, *,
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
    if opts.goal is not None and not opts.goal.strip():
        raise UsageError("--goal: the condition is empty; say what must hold when the work is done, "
                         "such as --goal \"all tests in tests/ pass\"")
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

    spec = GoalSpec(validate_condition(condition), tuple(checks), tuple(protect),
                    model=opts.goal_model or _default_evaluator(opts.model), **bound_flags(opts))
    return spec, opening_prompt(spec, prompt)


def opening_prompt(spec: GoalSpec, prompt: str | None) -> str:
    """What a goal's run starts with: the goal's directive, then the prompt given with it."""
    return spec.directive() + (f"\n\n{prompt}" if prompt else "")


def arm_goal(session: Session, model: str, spec: GoalSpec | None, saved: SavedGoal | None, opts: RunSpec) -> None:
    """A new goal, or a resumed session's, set on `session` (`model`:
    the agent's, for the bounds line): its checks and protected paths only from this spec
    (engine.goal.resumed_goal says why and warns about the rest)."""
    from .render import visible

    if spec is not None or saved is None or not saved.active:
        if spec is None and goal_flags_given(opts):
            raise UsageError(GOAL_FLAGS_NEED_A_GOAL)
        session.set_goal(spec)
        if spec is not None:
            print(bounds_line(spec, model), file=sys.stderr, flush=True)
        return
    from ..engine.goal import resumed_goal

    resumed, baseline, warnings = resumed_goal(saved, opts.check or [], opts.protect or [], **resume_goal_flags(opts))
    for warning in warnings:
        print(f"loopwright: warning: {visible(warning)}", file=sys.stderr, flush=True)
    session.set_goal(resumed, baseline)
    print(bounds_line(resumed, model), file=sys.stderr, flush=True)
