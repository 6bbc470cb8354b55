"""Reading a goal evaluator's answer (met / not yet met / impossible) out of whatever text the
model produced, and the hard bounds a goal condition states in words. Pure."""

from __future__ import annotations

import re
from typing import Any, Literal

from ..core import jsonsafe
from ..core.fastclass import dataclass

Status = Literal["met", "not_met", "impossible"]

VERDICT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "ok": {"type": "boolean", "description": "true when the condition is met"},
        "impossible": {"type": "boolean", "description": "true when the condition can never be met"},
        "reason": {"type": "string", "description": "the evidence for the verdict, or what is missing"},
    },
    "required": ["ok", "reason"],
    "additionalProperties": False,
}


@dataclass(frozen=True, slots=True)
class Verdict:
    status: Status
    reason: str


_FENCE = re.compile(r"```(?:json)?\s*(.*?)```", re.S | re.I)


def _objects(text: str) -> list[str]:
    """Balanced `{…}` spans in order of appearance, ignoring braces inside JSON strings."""
    spans, depth, start, in_str, escaped = [], 0, -1, False, False
    for i, ch in enumerate(text):
        if in_str:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_str = False
            continue
        if ch == '"' and depth:
            in_str = True
        elif ch == "{":
            if depth == 0:
                start = i
            depth += 1
        elif ch == "}" and depth:
            depth -= 1
            if depth == 0:
                spans.append(text[start : i + 1])
    return spans


def _from_dict(data: dict[str, Any]) -> Verdict | None:
    reason = str(data.get("reason") or data.get("explanation") or "").strip()
    status = str(data.get("status") or data.get("verdict") or "").lower().replace(" ", "_").replace("-", "_")
    if status in ("met", "not_met", "not_yet_met", "impossible"):
        return Verdict("not_met" if status == "not_yet_met" else status, reason)  # type: ignore[arg-type]
    ok = data.get("ok", data.get("met"))
    if not isinstance(ok, bool):
        return None
    if ok:
        return Verdict("met", reason)
    return Verdict("impossible" if data.get("impossible") is True else "not_met", reason)


def parse_verdict(text: str) -> Verdict | None:
    """The last well-formed verdict object in the text (code fences and prose around it are
    fine), or None when there is none: the caller asks again, then counts it as not met."""
    candidates = [m.group(1) for m in _FENCE.finditer(text)] + _objects(text)
    for raw in reversed(candidates):
        try:
            data = jsonsafe.loads(raw.strip())
        except ValueError:
            continue
        if isinstance(data, dict) and (verdict := _from_dict(data)) is not None:
            return verdict
    return None


# ---------------------------------------------------------------- bounds stated in words


@dataclass(frozen=True, slots=True)
class Bounds:
    max_turns: int | None = None
    max_duration_s: float | None = None


_UNITS = {"s": 1, "sec": 1, "second": 1, "m": 60, "min": 60, "minute": 60, "h": 3600, "hr": 3600, "hour": 3600,
          "d": 86400, "day": 86400}
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
        key = unit.lower().rstrip("s") or "s"
        seconds.append(float(amount) * _UNITS.get(key, _UNITS.get(key[:1], 1)))
    return Bounds(min(turns) if turns else None, min(seconds) if seconds else None)
