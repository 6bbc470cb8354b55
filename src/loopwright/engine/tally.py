"""A run's accounts: usage and cost per model and per purpose (main loop, compaction, wrap-up,
goal evaluator), stop reasons seen, retries, time spent waiting on the API; and the `RunResult`
built from them."""

from __future__ import annotations

from collections import Counter
from typing import Sequence

from ..core.events import CapabilityReport, ModelUsage, PermissionDenial, RunResult, Subtype, TerminalReason
from ..policy.models import resolve_model
from ..policy.pricing import cost_usd
from ..core.types import Message, Response

RETRY_KINDS = ("rate_limit", "overloaded", "server", "network")
Extra = Sequence[tuple[str, str, ModelUsage]]  # (role, model, usage) of calls made outside the loop


class Tally:
    def __init__(self) -> None:
        self.model_usage: dict[str, ModelUsage] = {}
        self.role_usage: dict[str, ModelUsage] = {}
        self.stop_counts: Counter[str] = Counter()
        self.retries: Counter[str] = Counter()
        self.warnings: list[str] = []
        self.api_seconds = 0.0
        self.last_response: Response | None = None  # of the main loop
        self.last_call_ms = 0  # how long the main loop's last call took

    def account(self, response: Response, role: str, seconds: float = 0.0) -> None:
        cost = cost_usd(response.usage, resolve_model(response.model))
        self.model_usage[response.model] = self.model_usage.get(response.model, ModelUsage()).add(response.usage, cost)
        self.role_usage[role] = self.role_usage.get(role, ModelUsage()).add(response.usage, cost)
        if role == "main":
            self.last_response, self.last_call_ms = response, int(seconds * 1000)
            self.stop_counts[response.raw_stop_reason or "none"] += 1

    def merged(self, extra: Extra) -> tuple[dict[str, ModelUsage], dict[str, ModelUsage]]:
        """Usage by model and by role with calls made elsewhere ((role, model, usage) each) added."""
        by_model, by_role = dict(self.model_usage), dict(self.role_usage)
        for role, model, mu in extra:
            if mu.calls:
                by_role[role] = by_role.get(role, ModelUsage()) + mu
                by_model[model] = by_model.get(model, ModelUsage()) + mu
        return by_model, by_role

    def spent(self, extra: Extra) -> tuple[float, int]:
        """Money and tokens of every call so far, for the budget breakers."""
        by_model = self.merged(extra)[0] if extra else self.model_usage
        return (sum(m.cost_usd for m in by_model.values()), sum(m.usage.total for m in by_model.values()))

    def result(self, *, subtype: Subtype, reason: TerminalReason, is_error: bool, text: str, errors: tuple[str, ...], turns: int,
               session_id: str, duration_ms: int, messages: Sequence[Message], denials: Sequence[PermissionDenial],
               extra: Extra, reports: dict[str, CapabilityReport]) -> RunResult:
        by_model, by_role = self.merged(extra)
        r = self.last_response
        return RunResult(
            subtype=subtype, is_error=is_error, result=text, session_id=session_id,
            num_turns=turns, duration_ms=duration_ms, duration_api_ms=int(self.api_seconds * 1000),
            total_cost_usd=sum(m.cost_usd for m in by_model.values()),
            usage=self.role_usage.get("main", ModelUsage()).usage, model_usage=by_model,
            stop_reason=r.raw_stop_reason if r else None, terminal_reason=reason,
            stop_details=r.stop_details if r else None, errors=errors, permission_denials=tuple(denials),
            stop_reason_counts=dict(self.stop_counts), retries={k: self.retries.get(k, 0) for k in RETRY_KINDS},
            messages=tuple(messages), warnings=(*self.warnings, *denied_warning(denials)), role_usage=by_role,
            reports=reports,
        )


def denied_warning(denials: Sequence[PermissionDenial]) -> tuple[str, ...]:
    """One warning that counts the calls refused permission, so a denial is never silent."""
    if not denials:
        return ()
    names = ", ".join(dict.fromkeys(d.tool_name for d in denials))
    return (f"{len(denials)} tool call(s) were denied permission ({names}); see permission_denials",)
