"""One session's row in the web view, read from its transcript in one pass: project, start,
model, turns, cost (by model too), duration, terminal reason, goal status, first prompt, and for
an attempt of a `--attempts N` run its place in the run (the mark `loopwright sessions` shows)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..stores.sessionlist import _number, _one_line, _records, _text, attempt_mark


def summarize_file(path: Path) -> dict[str, Any]:
    """The row of one transcript; damaged lines are counted, never fatal."""
    out: dict[str, Any] = {"id": path.stem, "folder": "", "started": "", "model": "", "turns": 0, "cost_usd": 0.0,
                           "duration_ms": 0, "outcome": "", "goal": "", "first_prompt": "", "damaged_lines": 0,
                           "costs": {}, "attempt": None}
    waiting = False
    for record in _records(path, out):
        if not out["started"]:
            out["started"], out["folder"] = str(record.get("timestamp") or ""), str(record.get("cwd") or "")
        kind = record.get("type")
        if kind == "user" and not record.get("synthetic") and _text(record):
            out["first_prompt"] = out["first_prompt"] or _one_line(_text(record))
            waiting = True
        elif kind == "assistant":
            _assistant(record, out)
        elif kind == "attachment":
            _attachment(record, out)
        elif kind == "system" and record.get("subtype") == "run_result":
            out["turns"] += int(_number(record.get("numTurns")))
            out["cost_usd"] += _number(record.get("totalCostUsd"))
            out["duration_ms"] += int(_number(record.get("durationMs")))
            out["outcome"], waiting = str(record.get("terminalReason") or ""), False
    out["cost_usd"] = round(out["cost_usd"], 6)
    other = out["cost_usd"] - sum(out["costs"].values())
    if other > 1e-6:  # the evaluator, subagents: priced in the result, not per message
        out["costs"]["other"] = other
    if waiting:
        out["outcome"] = "interrupted"
    return out


def _assistant(record: dict[str, Any], out: dict[str, Any]) -> None:
    message = record.get("message")
    if not isinstance(message, dict):
        return
    model = str(message.get("model") or "")
    out["model"] = out["model"] or model
    usage = message.get("usage")
    if model and isinstance(usage, dict):
        cost = _message_cost(model, usage)
        if cost:
            out["costs"][model] = out["costs"].get(model, 0.0) + cost


def _message_cost(model: str, usage: dict[str, Any]) -> float:
    from ..core.types import Usage
    from ..policy.models import resolve_model
    from ..policy.pricing import cost_usd

    counts = {k: int(_number(usage.get(k))) for k in ("input_tokens", "output_tokens", "cache_creation_input_tokens",
                                                       "cache_read_input_tokens")}
    return cost_usd(Usage(**counts), resolve_model(model))


def _attachment(record: dict[str, Any], out: dict[str, Any]) -> None:
    attachment = record.get("attachment")
    if not isinstance(attachment, dict):
        return
    out["attempt"] = attempt_mark(attachment, out["attempt"])
    if attachment.get("type") == "goal_status":
        if attachment.get("cleared"):
            out["goal"] = "cleared"
        elif attachment.get("met"):
            out["goal"] = "met"
        elif attachment.get("failed"):
            out["goal"] = "failed"
        else:
            out["goal"] = "active"
