"""Turning user-given values (flags, later settings) into engine objects, with errors that name
the input and what was expected."""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING

from .core.errors import UsageError
from .policy.rules import normalise_mode

if TYPE_CHECKING:
    from .cli.options import Options
    from .engine.goal import GoalSpec

_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h|d)?\s*$")
_UNIT_S = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0, None: 1.0}


def parse_duration(value: str, flag: str) -> float:
    """`90`, `45s`, `30m`, `2h`, `1d`, `500ms` → seconds."""
    match = _DURATION.match(value)
    if not match or float(match.group(1)) <= 0:
        raise UsageError(f"{flag}: expected a positive duration such as 90s, 30m or 2h, got {value!r}")
    return float(match.group(1)) * _UNIT_S[match.group(2)]


def _default_evaluator(main: str | None) -> str:
    """haiku, unless the main model is another provider's: then that model judges too (one key)."""
    from .providers.routing import served_by_openai

    return main if main and served_by_openai(main) else "haiku"


def parse_mode(value: str) -> str:
    mode = normalise_mode(value)
    if mode is None:
        raise UsageError(
            f"--permission-mode: expected one of default, acceptEdits, plan, dontAsk, bypassPermissions "
            f"(or manual), got {value!r}")
    return mode


def positive(value: float | int | None, flag: str) -> None:
    if value is not None and value <= 0:
        raise UsageError(f"{flag}: expected a number above 0, got {value}")


def read_text_file(path: str, flag: str) -> str:
    try:
        return Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise UsageError(f"{flag}: cannot read {path!r}: {exc.strerror or exc}") from None


def parse_fallbacks(value: str | None) -> tuple[str, ...]:
    if not value:
        return ()
    models = tuple(m.strip() for m in value.split(",") if m.strip())
    if len(models) > 3:
        raise UsageError(f"--fallback-model: at most 3 models, got {len(models)} ({value!r})")
    return models


GOAL_CLEAR_WORDS = ("clear", "stop", "off", "reset", "none", "cancel")


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


def goal_from_options(opts: Options, prompt: str | None) -> tuple["GoalSpec | None", str | None]:
    """The goal a headless run sets (from `-p "/goal COND"`, `--goal` or `--goal-file`) and the
    prompt that starts it. `/goal clear` and friends clear instead: (None, None)."""
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
        if checks or protect or opts.goal_max_turns or opts.goal_max_duration:
            raise UsageError("--check, --protect and --goal-max-* need a goal (--goal COND or -p \"/goal COND\")")
        return None, prompt
    from .engine.goal import GoalSpec, validate_condition  # only runs with a goal pay for it

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
