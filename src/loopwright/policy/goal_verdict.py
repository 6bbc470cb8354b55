"""Reading a goal evaluator's answer (met / not yet met / impossible) out of whatever text the
model produced. Pure."""

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
class GoalVerdict:
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


def _from_dict(data: dict[str, Any]) -> GoalVerdict | None:
    reason = str(data.get("reason") or data.get("explanation") or "").strip()
    status = str(data.get("status") or data.get("verdict") or "").lower().replace(" ", "_").replace("-", "_")
    if status in ("met", "not_met", "not_yet_met", "impossible"):
        return GoalVerdict("not_met" if status == "not_yet_met" else status, reason)  # type: ignore[arg-type]
    ok = data.get("ok", data.get("met"))
    if not isinstance(ok, bool):
        return None
    if ok:
        return GoalVerdict("met", reason)
    return GoalVerdict("impossible" if data.get("impossible") is True else "not_met", reason)


def parse_verdict(text: str) -> GoalVerdict | None:
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
