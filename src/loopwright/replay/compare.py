"""Where a replay leaves its record, and why: both transcripts (the session's and each subagent's)
are read as the steps a reader of the loop cares about — the model's answers, each tool call's
result, the goal's verdicts, what hooks and the goal sent back, compactions, the run's end — and
compared step by step; the first step that differs is the divergence, named by its kind."""

from __future__ import annotations

import difflib
import json
from dataclasses import asdict, dataclass, field
from typing import Any

from .conversation import text_of

# Kinds of divergence (the report's `kind`), each with what it means.
KINDS = {
    "tool_result": "a tool call's result differs",
    "blocked": "a call the record ran is now blocked",
    "allowed": "a call the record shows blocked now runs",
    "goal": "a goal check or the evaluator's verdict changed",
    "feedback": "what a hook or the goal sent back to the model differs",
    "prompt": "a run starts with another prompt (its goal, a command or the opening context changed)",
    "limit": "a limit or breaker ends the run at another point",
    "outcome": "the run ends differently",
    "request": "the replay asked the model something the record never answered",
    "missing": "the record goes on where the replay stopped",
}
LIMIT_REASONS = ("max_turns", "max_budget", "budget", "max_duration", "duration", "max_tokens_total",
                 "goal_max", "thrashing", "no_progress", "breaker", "refills", "limit")
HOOK_BLOCK = "A PreToolUse hook blocked this call"
RULE_BLOCKS = ("Permission denied for ", "Permission needed for ", "The user declined this ",
               "The auto-mode classifier blocked", "Auto mode cannot approve")


@dataclass(frozen=True)
class Step:
    kind: str  # answer, tool, goal, feedback, prompt, compact, result
    data: dict[str, Any]
    where: str  # the record it came from: "<chain> record N"


@dataclass
class Divergence:
    kind: str
    chain: str  # "main" or "agent <prompt…>"
    why: str
    recorded: Any = None
    replayed: Any = None
    diff: str = ""
    where: str = ""  # the record of the session where it happened

    def to_json(self) -> dict[str, Any]:
        return {k: v for k, v in asdict(self).items() if v not in (None, "")} | {"meaning": KINDS[self.kind]}


@dataclass
class Comparison:
    divergences: list[Divergence] = field(default_factory=list)

    @property
    def first(self) -> Divergence | None:
        return self.divergences[0] if self.divergences else None


def steps(records: list[dict[str, Any]], chain: str) -> list[Step]:
    """The comparable steps of one transcript (raw records). Tool results of one answer are put in
    the order of its calls: parallel calls finish in any order."""
    out: list[Step] = []
    pending: dict[str, Step] = {}
    order: list[str] = []

    def flush() -> None:
        out.extend(pending[i] for i in order if i in pending)
        pending.clear()
        order.clear()

    for n, r in enumerate(records, 1):
        where, kind = f"{chain} record {n}", r.get("type")
        if kind == "assistant":
            flush()
            message = r.get("message") or {}
            content = message.get("content") or []
            order.extend(str(b.get("id")) for b in content if isinstance(b, dict) and b.get("type") == "tool_use")
            out.append(Step("answer", {"text": text_of(content), "calls": [
                [b.get("name"), b.get("input")] for b in content if isinstance(b, dict) and b.get("type") == "tool_use"]},
                where))
        elif kind == "tool_finished":
            result = r.get("result") or {}
            pending[str(r.get("toolUseId"))] = Step("tool", {
                "id": r.get("toolUseId"), "name": r.get("name"), "is_error": bool(result.get("is_error")),
                "text": text_of(result.get("content", ""))}, where)
        elif kind == "user":
            flush()
            content = (r.get("message") or {}).get("content")
            if isinstance(content, list) and any(isinstance(b, dict) and b.get("type") == "tool_result" for b in content):
                continue  # the results, already compared one by one
            text = text_of(content)
            if r.get("synthetic") and out and out[-1].kind == "goal" and "feedback" not in out[-1].data:
                out[-1].data["feedback"] = text  # what the goal's verdict sent back belongs to it
                continue
            out.append(Step("feedback" if r.get("synthetic") else "prompt", {"text": text}, where))
        elif kind == "attachment" and (r.get("attachment") or {}).get("type") == "goal_status":
            status = r["attachment"]
            if status.get("sentinel"):
                continue
            out.append(Step("goal", {"met": bool(status.get("met")), "failed": bool(status.get("failed")),
                                     "reason": status.get("reason", "")}, where))
        elif kind == "system" and r.get("subtype") == "compact_boundary":
            flush()
            out.append(Step("compact", {"summary": r.get("summary", "")}, where))
        elif kind == "system" and r.get("subtype") == "run_result":
            flush()
            out.append(Step("result", {"subtype": r.get("resultSubtype"), "terminal_reason": r.get("terminalReason"),
                                       "is_error": bool(r.get("isError")), "turns": r.get("numTurns")}, where))
    flush()
    return out


def compare(recorded: list[Step], replayed: list[Step], chain: str) -> Divergence | None:
    """The first divergence of one transcript's replay from its record, or None."""
    for mine, theirs in zip(recorded, replayed):
        if mine.kind == theirs.kind and mine.data == theirs.data:
            continue
        return _classify(mine, theirs, chain)
    if len(replayed) < len(recorded):
        step = recorded[len(replayed)]
        return Divergence("missing", chain, f"the replay stopped before the record's {step.kind} step",
                          recorded=step.data, where=step.where)
    if len(replayed) > len(recorded):
        step = replayed[len(recorded)]
        return Divergence("outcome", chain, f"the replay went on after the record ended (a {step.kind} step)",
                          replayed=step.data)
    return None


def _classify(mine: Step, theirs: Step, chain: str) -> Divergence:
    where = mine.where
    if mine.kind == theirs.kind == "tool":
        name = mine.data["name"]
        was, now = _blocker(mine.data), _blocker(theirs.data)
        if now and not was:
            return Divergence("blocked", chain, f"{name} call {mine.data['id']} is now blocked by {now}",
                              mine.data["text"], theirs.data["text"], _diff(mine.data["text"], theirs.data["text"]), where)
        if was and not now:
            return Divergence("allowed", chain, f"{name} call {mine.data['id']} was blocked by {was} in the record "
                              "and now runs", mine.data["text"], theirs.data["text"],
                              _diff(mine.data["text"], theirs.data["text"]), where)
        return Divergence("tool_result", chain, f"the result of {name} call {mine.data['id']} differs",
                          mine.data, theirs.data, _diff(mine.data["text"], theirs.data["text"]), where)
    if mine.kind == theirs.kind == "goal":
        said = _diff(mine.data.get("feedback", ""), theirs.data.get("feedback", ""))
        if _verdict(mine.data) == _verdict(theirs.data):
            return Divergence("goal", chain, f"the goal's verdict ({_verdict(mine.data)}) sent the agent back with "
                              "other words (its checks' output differs)", mine.data, theirs.data, said, where)
        return Divergence("goal", chain, f"the goal's verdict changed: {_verdict(mine.data)} in the record, "
                          f"{_verdict(theirs.data)} now", mine.data, theirs.data, said, where)
    if theirs.kind == "result" or mine.kind == "result":
        return _ending(mine, theirs, chain)
    if mine.kind == theirs.kind == "prompt":
        return Divergence("prompt", chain, "the run's prompt differs", mine.data["text"], theirs.data["text"],
                          _diff(mine.data["text"], theirs.data["text"]), where)
    if mine.kind == theirs.kind == "feedback":
        return Divergence("feedback", chain, "what was sent back to the model differs", mine.data["text"],
                          theirs.data["text"], _diff(mine.data["text"], theirs.data["text"]), where)
    if "goal" in (mine.kind, theirs.kind):
        return Divergence("goal", chain, f"the goal was judged at another point (record: {mine.kind}, "
                          f"replay: {theirs.kind})", mine.data, theirs.data, where=where)
    return Divergence("outcome", chain, f"the record has a {mine.kind} step where the replay has a {theirs.kind} "
                      "step", mine.data, theirs.data, _diff(_show(mine.data), _show(theirs.data)), where)


def _ending(mine: Step, theirs: Step, chain: str) -> Divergence:
    """A run that ends at another point, or another way: a limit or breaker, or its outcome."""
    def limited(step: Step) -> bool:
        reason = str(step.data.get("terminal_reason") or "") if step.kind == "result" else ""
        return any(word in reason for word in LIMIT_REASONS)

    if theirs.kind == "result" and mine.kind != "result":
        kind = "limit" if limited(theirs) else "outcome"
        why = f"the replay ended earlier ({theirs.data.get('terminal_reason')}) where the record went on to a {mine.kind} step"
    elif mine.kind == "result" and theirs.kind != "result":
        kind = "limit" if limited(mine) else "outcome"
        why = f"the record ended here ({mine.data.get('terminal_reason')}) and the replay went on (a {theirs.kind} step)"
    elif limited(mine) != limited(theirs):
        kind = "limit"
        why = (f"the record ended here on a limit ({mine.data.get('terminal_reason')}) that the replay did not trip "
               f"(it ended {theirs.data.get('subtype')}/{theirs.data.get('terminal_reason')})" if limited(mine) else
               f"the replay ended on a limit ({theirs.data.get('terminal_reason')}) the record did not trip "
               f"(it ended {mine.data.get('subtype')}/{mine.data.get('terminal_reason')})")
    else:
        kind = "limit" if limited(mine) else "outcome"
        why = (f"the run ends differently: {mine.data.get('subtype')}/{mine.data.get('terminal_reason')} in the record, "
               f"{theirs.data.get('subtype')}/{theirs.data.get('terminal_reason')} now")
    return Divergence(kind, chain, why, mine.data, theirs.data, where=mine.where)


def _blocker(tool: dict[str, Any]) -> str:
    if not tool.get("is_error"):
        return ""
    text = str(tool.get("text", ""))
    if text.startswith(HOOK_BLOCK):
        return "a PreToolUse hook"
    if text.startswith(RULE_BLOCKS):
        return "the permission gate (a rule or mode)"
    if text.startswith("No such tool: "):
        return "the tool list (the tool is no longer offered: --tools, --disallowedTools)"
    return ""


def _verdict(goal: dict[str, Any]) -> str:
    state = "met" if goal.get("met") else "impossible" if goal.get("failed") else "not met"
    return f"{state} ({goal.get('reason') or 'no reason'})"


def _show(data: Any) -> str:
    return json.dumps(data, indent=1, ensure_ascii=False, sort_keys=True)


def _diff(recorded: str, replayed: str) -> str:
    lines = difflib.unified_diff(str(recorded).splitlines(keepends=True), str(replayed).splitlines(keepends=True),
                                 "recorded", "replayed", lineterm="")
    return "".join(line if line.endswith("\n") else line + "\n" for line in lines)
