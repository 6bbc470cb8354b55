"""Turns engine events into output: stream-json lines (Claude Code's shapes), and a live
progress view for people. Pure formatting plus writes to the given streams."""

from __future__ import annotations

import json
import re
import sys
from typing import Any, TextIO, assert_never

from ..core.events import (
    ApiRetry,
    AssistantMessage,
    CompactBoundary,
    Event,
    GoalStatus,
    HookResponse,
    HookStarted,
    LoopStatus,
    ModelCall,
    Notice,
    PartialEvent,
    ResultEvent,
    RunResult,
    SystemInit,
    ToolFinished,
    ToolProgress,
    ToolStarted,
    UserMessage,
)
from ..core.types import (
    BlockDelta,
    BlockStart,
    BlockStop,
    StreamDelta,
    StreamEvent,
    StreamStart,
    StreamStop,
)

# Control characters a terminal would act on instead of showing: C0 but tab and newline (a lone
# carriage return too: it lets text overwrite what was printed), DEL, C1, and the bidirectional
# overrides and isolates that make text read differently from what it holds.
_CONTROL = re.compile("[\x00-\x08\x0b-\x0c\x0e-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]|\r(?!\n)")


def _shown(match: re.Match[str]) -> str:
    code = ord(match.group())
    if code < 0x20:
        return "^" + chr(code + 0x40)  # ESC is ^[, BEL ^G, CR ^M (caret notation, as `cat -v`)
    if code == 0x7F:
        return "^?"
    if code < 0xA0:
        return "M-^" + chr(code - 0x40)  # C1: CSI (0x9b) is M-^[, as `cat -v` shows it
    return f"<U+{code:04X}>"


def visible(text: str) -> str:
    """Text for a terminal: every control or escape sequence from a model, tool or hook made
    visible (ESC [2K shows as `^[[2K`), newlines and tabs kept. JSON output never goes
    through this: it keeps the exact text."""
    return _CONTROL.sub(_shown, text)


def dumps(obj: Any) -> str:
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":"))


def stream_json(event: Event, session_id: str, version: str) -> dict[str, Any] | None:
    """The stream-json line for an event, or None when the event has no line."""
    match event:
        case SystemInit():
            return {"type": "system", "subtype": "init", "session_id": event.session_id, "cwd": event.cwd,
                    "tools": list(event.tools), "model": event.model, "permissionMode": event.permission_mode,
                    "mcp_servers": list(event.mcp_servers), "loopwright_version": version}
        case AssistantMessage():
            message = {"id": event.id, "type": "message", "role": "assistant", "model": event.model,
                       "content": event.message.to_api()["content"], "stop_reason": event.stop_reason,
                       "stop_sequence": None, "usage": event.usage.to_api()}
            return {"type": "assistant", "message": message, "parent_tool_use_id": None, "session_id": session_id}
        case UserMessage() if not event.synthetic:
            return None  # the prompt itself is not echoed (Claude Code: --replay-user-messages)
        case UserMessage():
            return {"type": "user", "message": event.message.to_api(), "parent_tool_use_id": None,
                    "session_id": session_id}
        case ApiRetry():
            return {"type": "system", "subtype": "api_retry", "attempt": event.attempt,
                    "max_retries": event.max_retries, "retry_delay_ms": int(event.delay_s * 1000),
                    "error_status": event.status, "error": event.error_kind, "message": event.message,
                    "session_id": session_id}
        case Notice():
            return {"type": "system", "subtype": event.subtype, "level": event.level, "content": event.text,
                    "session_id": session_id}
        case PartialEvent():
            return {"type": "stream_event", "event": api_event(event.event), "session_id": session_id,
                    "parent_tool_use_id": None}
        case CompactBoundary():
            return {"type": "system", "subtype": "compact_boundary", "session_id": session_id,
                    "compact_metadata": {"trigger": event.trigger, "pre_tokens": event.pre_tokens,
                                         "post_tokens": event.post_tokens}}
        case GoalStatus():
            return {"type": "system", "subtype": "goal_status", "session_id": session_id, **event.attachment()}
        case LoopStatus():
            return {"type": "system", "subtype": "loop_status", "session_id": session_id, **event.to_json()}
        case HookStarted():
            return {"type": "system", "subtype": "hook_started", "hook_id": event.hook_id,
                    "hook_name": event.hook_name, "hook_event": event.hook_event, "session_id": session_id}
        case HookResponse():
            return {"type": "system", "subtype": "hook_response", "hook_id": event.hook_id,
                    "hook_name": event.hook_name, "hook_event": event.hook_event, "output": event.output,
                    "stdout": event.stdout, "stderr": event.stderr, "exit_code": event.exit_code,
                    "outcome": event.outcome, "session_id": session_id}
        case ResultEvent():
            return event.result.to_json()
        case ToolProgress():
            return {"type": "system", "subtype": "tool_progress", **event.to_json(), "session_id": session_id}
        case ToolStarted() | ToolFinished() | ModelCall():
            return None
        case _:
            assert_never(event)


def api_event(event: StreamEvent) -> dict[str, Any]:
    match event:
        case StreamStart():
            return {"type": "message_start", "message": {"id": event.id, "type": "message", "role": "assistant",
                                                          "model": event.model, "content": [], "stop_reason": None,
                                                          "usage": event.usage.to_api()}}
        case BlockStart():
            return {"type": "content_block_start", "index": event.index, "content_block": event.block}
        case BlockDelta():
            return {"type": "content_block_delta", "index": event.index, "delta": event.delta}
        case BlockStop():
            return {"type": "content_block_stop", "index": event.index}
        case StreamDelta():
            return {"type": "message_delta", "delta": {"stop_reason": event.stop_reason,
                    "stop_sequence": event.stop_sequence, "stop_details": event.stop_details}, "usage": event.usage}
        case StreamStop():
            return {"type": "message_stop"}
        case _:
            assert_never(event)


def plural(count: int, word: str) -> str:
    """`1 turn`, `2 turns`, `0 turns`."""
    return f"{count} {word}" if count == 1 else f"{count} {word}s"


def _short(value: Any, width: int = 80) -> str:
    text = value if isinstance(value, str) else dumps(value)
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 1] + "…"


def _gist(tool: str, output: str) -> str:
    """One line for a tool's output: a shell's verdict is usually its last line, a file's
    content its first."""
    lines = [line for line in output.splitlines() if line.strip()]
    if not lines:
        return "(no output)"
    pick = lines[-1] if tool == "Bash" else lines[0]
    more = f"  (+{len(lines) - 1} lines)" if len(lines) > 1 else ""
    return _short(pick, 80) + more


def goal_line(event: GoalStatus, turn: int) -> str:
    if event.sentinel:
        return f"◎ goal set: {_short(event.condition, 100)}"
    verdict = "MET" if event.met else "IMPOSSIBLE" if event.failed else "not met yet"
    why = f": {_short(event.reason, 90)}" if event.reason else ""
    return (f"◎ goal · turn {turn} · evaluation {event.iterations} · {verdict} · "
            f"{event.duration_ms / 1000:.1f}s · ${event.cost_usd:.4f}{why}")


def loop_line(event: LoopStatus) -> str:
    import time

    note = f"\n  ! {event.note}" if event.note else ""
    if event.next_at is None:
        return f"⟳ loop over after {plural(event.iterations, 'iteration')}: {event.reason}{note}"
    at = time.strftime("%H:%M:%S", time.localtime(event.next_at))
    return f"⟳ iteration {event.iterations} done · next at {at} ({event.reason}){note}"


class Progress:
    """A live, line-based view of a run for a person at a terminal (written to stderr)."""

    def __init__(self, out: TextIO | None = None) -> None:
        self.out = out or sys.stderr
        self.turn = 0

    def __call__(self, event: Event) -> None:
        line = self.line(event)
        if line:
            print(visible(line), file=self.out, flush=True)

    def line(self, event: Event) -> str | None:
        match event:
            case SystemInit():
                return f"● session {event.session_id} · model {event.model} · {len(event.tools)} tools · {event.cwd}"
            case AssistantMessage():
                self.turn = event.turn
                text = event.message.text.strip()
                return f"\n[turn {event.turn}] {text}" if text else None
            case ToolStarted():
                return f"  → {event.name}({_short(event.input, 70)})"
            case ToolProgress():
                done = f"{event.progress:g}/{event.total:g}" if event.total else f"{event.progress:g}"
                return f"    … {event.name}: {done}{' ' + event.message if event.message else ''}"
            case ToolFinished():
                mark = "✗" if event.is_error else "✓"
                return f"    {mark} {_gist(event.name, event.output)}"
            case ApiRetry():
                status = f" {event.status}" if event.status else ""
                return f"  ↻ API error{status} ({event.error_kind}); retry {event.attempt} in {event.delay_s:.1f}s"
            case Notice():
                return f"  ! {event.text}"
            case CompactBoundary():
                return f"  ⇣ compacted the conversation ({event.trigger}): ~{event.pre_tokens} → ~{event.post_tokens} tokens"
            case GoalStatus():
                return goal_line(event, self.turn)
            case LoopStatus():
                return loop_line(event)
            case ResultEvent():
                r = event.result
                if r.terminal_reason == "aborted":  # the person's own interrupt: not a failure
                    return (f"\n■ interrupted by you · {plural(r.num_turns, 'turn')} · "
                            f"${r.total_cost_usd:.4f} · {r.duration_ms / 1000:.1f}s")
                return (f"\n■ {r.subtype} · {r.terminal_reason} · {plural(r.num_turns, 'turn')} · "
                        f"${r.total_cost_usd:.4f} · {r.duration_ms / 1000:.1f}s")
            case UserMessage() | PartialEvent() | HookStarted() | HookResponse() | ModelCall():
                return None  # hook failures arrive as notices
            case _:
                assert_never(event)


def print_result(result: RunResult, fmt: str) -> None:
    if fmt == "json":
        print(dumps(result.to_json()), flush=True)
    elif fmt == "text" and result.structured_output is not None:
        print(visible(dumps(result.structured_output)), flush=True)
    elif fmt == "text":
        for denial in result.permission_denials:  # the person sees what was refused, not only the model
            print(f"loopwright: {denied_line(denial)}", file=sys.stderr, flush=True)
        text = result.result
        if result.is_error and result.errors:
            text = (text + "\n" if text else "") + "Error: " + "; ".join(result.errors)
        print(visible(text), flush=True)


def denied_line(denial: Any) -> str:
    """`denied Write(out.txt): why; to allow it: the flag or rule`."""
    given = denial.tool_input
    target = next((given[k] for k in ("file_path", "path", "notebook_path", "command", "pattern", "url")
                   if isinstance(given.get(k), str)), "")
    target = target if len(target) <= 80 else target[:79] + "…"
    line = f"denied {denial.tool_name}({target}): {denial.reason or 'permission was not given'}"
    return visible(line + (f"; to allow it: {denial.hint}" if denial.hint else ""))


def printable(text: str) -> str:
    """Text from a settings file made safe for a terminal: control characters (an escape
    sequence could rewrite what the screen shows) appear as escapes."""
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)
