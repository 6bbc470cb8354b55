"""A goal's hard bounds — turns, wall time, money — from its flags, the words of its condition
and the defaults, so that no goal runs away unless someone said it may. Pure."""

from __future__ import annotations

import re

from ..core.fastclass import dataclass
from .durations import unit_seconds

BOUND_KEYS = ("turns", "duration", "budget")
# What bounds a goal nobody bounded: generous for real work, far short of a runaway's bill.
DEFAULT_TURNS, DEFAULT_DURATION_S, DEFAULT_BUDGET_USD = 100, 7200.0, 10.0


@dataclass(frozen=True, slots=True)
class Bounds:
    max_turns: int | None = None
    max_duration_s: float | None = None
    max_budget_usd: float | None = None


@dataclass(frozen=True, slots=True)
class GoalBounds:
    """The bounds in force and where each came from: `flag`, `condition`, `default`, `none`
    (removed on purpose) or `unpriced` (a money bound cannot be counted for this model)."""

    bounds: Bounds
    origin: dict[str, str]

    def to_json(self) -> dict[str, object]:
        b = self.bounds
        return {"max_turns": b.max_turns, "max_duration_s": b.max_duration_s, "max_budget_usd": b.max_budget_usd,
                "origin": dict(self.origin)}

    def describe(self) -> str:
        """One line: `100 turns (default), 2h (default), $10 (flag)`."""
        b, parts = self.bounds, []
        for key, value, unit in (("turns", b.max_turns, "{:g} turns"), ("duration", b.max_duration_s, None),
                                 ("budget", b.max_budget_usd, "${:g}")):
            origin = self.origin[key]
            if value is not None:
                parts.append(f"{unit.format(value) if unit else _duration(value)} ({origin})")
            elif origin == "unpriced":
                parts.append("no money bound (no price is known for the model)")
            else:
                parts.append(f"no {key} bound (removed)")
        return ", ".join(parts)

    @property
    def unbounded(self) -> bool:
        b = self.bounds
        return b.max_turns is None and b.max_duration_s is None and b.max_budget_usd is None


def goal_bounds(flags: Bounds, condition: str, removed: tuple[str, ...] = (), *, priced: bool = True) -> GoalBounds:
    """Flags and the condition's words together (the tightest wins); what neither states takes
    the default, unless `removed` names it; money is bounded only where `priced`."""
    said = parse_bounds(condition)
    values: dict[str, float | None] = {}
    origin: dict[str, str] = {}
    for key, flag, words, default in (("turns", flags.max_turns, said.max_turns, DEFAULT_TURNS),
                                      ("duration", flags.max_duration_s, said.max_duration_s, DEFAULT_DURATION_S),
                                      ("budget", flags.max_budget_usd, None, DEFAULT_BUDGET_USD)):
        given = [(v, o) for v, o in ((flag, "flag"), (words, "condition")) if v is not None]
        if given:
            values[key], origin[key] = min(given, key=lambda pair: pair[0])
        elif key in removed:
            values[key], origin[key] = None, "none"
        else:
            values[key], origin[key] = default, "default"
    if not priced and origin["budget"] != "none":
        values["budget"], origin["budget"] = None, "unpriced"
    turns = values["turns"]
    return GoalBounds(Bounds(None if turns is None else int(turns), values["duration"], values["budget"]), origin)


def _duration(seconds: float) -> str:
    for unit, size in (("h", 3600), ("m", 60)):
        if seconds >= size and seconds % size == 0:
            return f"{seconds / size:g}{unit}"
    return f"{seconds:g}s"


# ---------------------------------------------------------------- bounds stated in words

_TURNS = re.compile(
    r"\b(?:stop|give up|quit|end)\s+after\s+(\d+)\s+(?:turns?|tries|try|attempts?|iterations?|rounds?)\b"
    r"|\b(?:at most|no more than|within|up to|max(?:imum)?(?: of)?)\s+(\d+)\s+(?:turns?|tries|attempts?|iterations?|rounds?)\b",
    re.I)
_TIME = re.compile(
    r"\b(?:within|in under|in less than|at most|no more than|(?:stop|give up|quit) after)\s+(\d+(?:\.\d+)?)\s*"
    r"(seconds?|secs?|s|minutes?|mins?|m|hours?|hrs?|h|days?|d)\b", re.I)


def parse_bounds(condition: str) -> Bounds:
    """Turn and time limits written into a goal condition ("or stop after 20 turns", "stop
    after 5 tries", "within 30 minutes"): the harness enforces them, not only the evaluator.
    When several are stated, the tightest wins."""
    turns = [int(a or b) for a, b in _TURNS.findall(condition)]
    seconds = []
    for amount, unit in _TIME.findall(condition):
        seconds.append(float(amount) * unit_seconds(unit))
    return Bounds(min(turns) if turns else None, min(seconds) if seconds else None)
