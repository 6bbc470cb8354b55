"""Reading a hook's answer: a command's exit code, stdout and stderr (or an HTTP body, or a
parsed JSON object) become an `Answer`; the answers of one event merge into a `HookResult`."""

from __future__ import annotations

import json
import tempfile
from dataclasses import replace
from typing import Any, Mapping, Sequence

from ..core import jsonsafe
from ..core.fastclass import dataclass
from ..core.hookevents import EVENTS
from ..core.ports import NO_HOOK_RESULT, HookResult

# Per-event answer rules, from the one table of hook events (core/hookevents.py).
BLOCKABLE = frozenset(e for e, facts in EVENTS.items() if facts.blocks)
PLAIN_CONTEXT = frozenset(e for e, facts in EVENTS.items() if facts.plain_context)
CONTEXT_EVENTS = frozenset(e for e, facts in EVENTS.items() if facts.context)
NO_CONTINUE = frozenset(e for e, facts in EVENTS.items() if not facts.stops)
PERMISSION_DECISIONS = ("allow", "deny", "ask", "defer")
RANK = {"deny": 3, "block": 3, "ask": 2, "allow": 1}
MAX_TEXT = 10_000  # characters of one hook text (context, message, reason) kept inline
MAX_SAVED = 1024 * 1024  # characters of a longer text written to its file
CANNOT_RUN = frozenset({126, 127})  # the shell's "not executable" and "not found"


@dataclass(frozen=True, slots=True)
class Answer:
    """One handler's answer. `error` is a non-blocking failure: shown as a warning, the action
    proceeds. `unanswered`: the error means the hook gave no usable answer at all (timed out,
    killed, could not run, garbage or oversized output), which the failure policy may turn into
    an ask on PreToolUse. `notice` is text for the user only (stderr of exit 2 where it cannot
    block)."""

    decision: str | None = None
    reason: str | None = None
    updated_input: dict[str, Any] | None = None
    context: tuple[str, ...] = ()
    stop: bool = False
    stop_reason: str | None = None
    system_message: str | None = None
    error: str | None = None
    updated_output: Any = None  # PostToolUse `updatedMCPToolOutput`: replaces an MCP tool's output
    notice: str | None = None
    unanswered: bool = False
    retry: bool = False  # PermissionDenied: one more try is allowed


def no_answer(why: str) -> Answer:
    return Answer(error=why, unanswered=True)


def from_text(event: str, text: str) -> Answer:
    """Exit-0 stdout or a 2xx body: JSON when it starts with `{`, else plain text."""
    stripped = text.strip()
    if stripped.startswith("{"):
        try:
            data = jsonsafe.loads(stripped)
        except (ValueError, RecursionError) as exc:
            return no_answer(f"invalid JSON output ({exc}): {_first_line(stripped)}")
        return from_json(event, data)
    if stripped and event in PLAIN_CONTEXT:
        return Answer(context=(cap(stripped),))
    return Answer()


def from_process(event: str, code: int, stdout: str, stderr: str) -> Answer:
    if code == 0:
        return from_text(event, stdout)
    if code < 0:
        return no_answer(f"killed by signal {-code} before it answered")
    if code in CANNOT_RUN:
        return no_answer(f"could not run (exit code {code}): {_first_line(stderr) or 'no stderr'}")
    parsed = from_text(event, stdout) if stdout.strip().startswith("{") else None
    if code == 2:
        return blocking(event, parsed, stderr)
    if parsed is not None:  # JSON decides, the exit code is ignored; garbage is no answer
        return parsed
    return Answer(error=f"Failed with non-blocking status code {code}: {_first_line(stderr) or 'no stderr'}")


def blocking(event: str, parsed: Answer | None, stderr: str) -> Answer:
    """Exit 2: a block whatever the JSON says (it may only supply the reason)."""
    base = parsed if parsed is not None and parsed.error is None else Answer()
    reason = base.reason or cap(stderr.strip()) or "blocked by a hook (exit code 2)"
    if event == "PreToolUse":
        return replace(base, decision="deny", reason=reason, updated_input=None)
    if event in BLOCKABLE:
        return replace(base, decision="block", reason=reason)
    return Answer(notice=cap(stderr.strip()) or None)


def from_json(event: str, data: Any) -> Answer:
    problem = _check(data)
    if problem:
        return no_answer(f"hook output: {problem}")
    specific: Mapping[str, Any] = data.get("hookSpecificOutput") or {}
    named = specific.get("hookEventName")
    if named is not None and named != event:
        return no_answer(f"hook output: hookSpecificOutput.hookEventName is {named!r} on a {event} hook")
    decision, reason = None, data.get("reason")
    if event == "PreToolUse":
        legacy = {"approve": "allow", "block": "deny"}.get(data.get("decision") or "")
        decision = specific.get("permissionDecision") or legacy
        decision = "ask" if decision == "defer" else decision  # no deferred tool calls here: a person decides
        reason = specific.get("permissionDecisionReason") or reason
    elif event in BLOCKABLE and data.get("decision") == "block":
        decision = "block"
    context = specific.get("additionalContext") if event in CONTEXT_EVENTS else None
    updated = specific.get("updatedInput") if event == "PreToolUse" else None
    stop = data.get("continue") is False and event not in NO_CONTINUE
    message, stop_reason = data.get("systemMessage"), data.get("stopReason") if stop else None
    return Answer(decision, cap(reason) if reason else None, updated, (cap(context),) if context else (), stop,
                  cap(stop_reason) if stop_reason else None, cap(message) if message else None,
                  updated_output=specific.get("updatedMCPToolOutput") if event == "PostToolUse" else None,
                  retry=event == "PermissionDenied" and specific.get("retry") is True)


_TYPES: dict[str, tuple[type, str]] = {
    "continue": (bool, "true or false"), "suppressOutput": (bool, "true or false"),
    "stopReason": (str, "a string"), "systemMessage": (str, "a string"), "reason": (str, "a string"),
    "decision": (str, '"block"'), "hookSpecificOutput": (dict, "an object"),
}
_SPECIFIC: dict[str, tuple[type, str]] = {
    "permissionDecisionReason": (str, "a string"), "updatedInput": (dict, "an object"),
    "additionalContext": (str, "a string"), "hookEventName": (str, "a string"), "retry": (bool, "true or false"),
}


def _check(data: Any) -> str | None:
    if not isinstance(data, dict):
        return f"expected a JSON object, got {type(data).__name__}"
    for key, (kind, what) in _TYPES.items():
        if data.get(key) is not None and not isinstance(data[key], kind):
            return f"`{key}` must be {what}, got {json.dumps(data[key])[:80]}"
    if data.get("decision") not in (None, "block", "approve"):
        return f'`decision` must be "block" (or, on PreToolUse, "approve"), got {data["decision"]!r}'
    specific = data.get("hookSpecificOutput") or {}
    for key, (kind, what) in _SPECIFIC.items():
        if specific.get(key) is not None and not isinstance(specific[key], kind):
            return f"`hookSpecificOutput.{key}` must be {what}, got {json.dumps(specific[key])[:80]}"
    if specific.get("permissionDecision") not in (None, *PERMISSION_DECISIONS):
        return (f"`hookSpecificOutput.permissionDecision` must be one of {', '.join(PERMISSION_DECISIONS)}, "
                f"got {specific['permissionDecision']!r}")
    return None


def merge(answers: Sequence[Answer], finished: Sequence[int] = (), event: str = "") -> HookResult:
    """deny (or block) > ask > allow, with the reasons of the winning decision; `updatedInput`
    from the last handler to finish; every context and system message; any `continue: false`
    stops, whatever else was decided (on PreToolUse the call is denied too: nothing more runs)."""
    if not answers:
        return NO_HOOK_RESULT
    decided = [a for a in answers if a.decision in RANK]
    decision = max(decided, key=lambda a: RANK[a.decision or ""]).decision if decided else None
    reasons = _unique(a.reason for a in decided if a.decision == decision and a.reason)
    updated = output = None
    for index in finished or range(len(answers)):
        if answers[index].updated_input is not None:
            updated = answers[index].updated_input
        if answers[index].updated_output is not None:
            output = answers[index].updated_output
    stops = [a for a in answers if a.stop]
    stop_reason = next((a.stop_reason for a in stops if a.stop_reason), None)
    if stops and event == "PreToolUse":
        decision, reasons = "deny", [stop_reason or "a hook stopped the run"]
    return HookResult(
        decision=decision, reason="\n".join(reasons) or None, updated_input=updated,
        additional_context=tuple(c for a in answers for c in a.context),
        stop=bool(stops), stop_reason=stop_reason,
        system_messages=tuple(a.system_message for a in answers if a.system_message), updated_output=output,
        retry=any(a.retry for a in answers),
    )


def cap(text: str) -> str:
    """Claude Code's 10,000-character limit on hook text: the rest goes to a file (its first
    MAX_SAVED characters), and the model gets a preview and the path."""
    if len(text) <= MAX_TEXT:
        return text
    saved = text[:MAX_SAVED]
    with tempfile.NamedTemporaryFile("w", prefix="loopwright-hook-", suffix=".txt", delete=False,
                                     encoding="utf-8", errors="replace") as f:
        f.write(saved)
    what = "the whole text is" if len(saved) == len(text) else f"its first {len(saved)} characters are"
    return f"{text[:2000]}\n… [hook output of {len(text)} characters, cut here; {what} in {f.name}]"


def _first_line(text: str) -> str:
    return next((line.strip() for line in text.splitlines() if line.strip()), "")[:200]


def _unique(items: Any) -> list[str]:
    seen: list[str] = []
    for item in items:
        if item not in seen:
            seen.append(item)
    return seen
