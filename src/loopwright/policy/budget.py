"""Circuit breakers checked before every model call: turns, money, tokens, wall time. Pure:
the caller supplies what was spent; a limit ends the run with a result, never a crash."""

from __future__ import annotations


from ..core.fastclass import dataclass
from .stop import Finish, Limits


@dataclass(frozen=True, slots=True)
class Budget:
    max_budget_usd: float | None = None
    max_tokens_total: int | None = None
    max_duration_s: float | None = None


@dataclass(frozen=True, slots=True)
class Spent:
    turns: int = 0
    cost_usd: float = 0.0
    tokens: int = 0
    elapsed_s: float = 0.0


def check_limits(spent: Spent, limits: Limits, budget: Budget) -> Finish | None:
    """Checked before every model call: a limit ends the run with a result, never a crash."""
    if limits.max_turns is not None and spent.turns >= limits.max_turns:
        return Finish("error_max_turns", "max_turns", True, (f"Reached maximum number of turns ({limits.max_turns})",))
    spent_out = spend_limit(spent, budget)
    if spent_out is not None:
        return spent_out
    if budget.max_duration_s is not None and spent.elapsed_s >= budget.max_duration_s:
        return duration_limit(budget)
    return None


def spend_limit(spent: Spent, budget: Budget) -> Finish | None:
    """Money or tokens used up. Also checked before a response's tools run: nothing more starts."""
    if budget.max_budget_usd is not None and spent.cost_usd >= budget.max_budget_usd:
        return Finish("error_max_budget_usd", "budget_exhausted", True,
                      (f"Reached maximum budget (${budget.max_budget_usd:g}); spent ${spent.cost_usd:.4f}",))
    if budget.max_tokens_total is not None and spent.tokens >= budget.max_tokens_total:
        return Finish("error_max_budget_tokens", "budget_exhausted", True,
                      (f"Reached maximum total tokens ({budget.max_tokens_total}); used {spent.tokens}",))
    return None


def duration_limit(budget: Budget) -> Finish:
    """The result of running out of time, also when the deadline cut a tool or a model call short."""
    return Finish("error_max_duration", "max_duration", True, (f"Reached maximum duration ({budget.max_duration_s:g} s)",))


def time_left(spent: Spent, budget: Budget) -> float | None:
    """Seconds until the duration limit (None: no limit), the deadline of whatever runs now."""
    return None if budget.max_duration_s is None else max(0.0, budget.max_duration_s - spent.elapsed_s)
