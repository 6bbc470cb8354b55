"""A transcript as HTML, record by record, so a long session streams and a live one grows: user
prompts, assistant text and thinking, each tool call with its input and result, denials,
retries, compactions, goal evaluations with their verdicts and the result of each run."""

from __future__ import annotations

import json
from typing import Any, Iterator

from ..stores.jsonl import _decode
from .html import badge, duration, esc, money, pre

DENIED = ("Permission needed for ", "Permission denied for ")  # the gate's words (engine/gate.py)
MAX_TEXT = 200_000  # one block shown at most this long; the rest is named, not sent


class Renderer:
    """Keeps the turn count across records; `turn` starts where an earlier page left off."""

    def __init__(self, turn: int = 0) -> None:
        self.turn = turn

    def record(self, r: dict[str, Any]) -> str:
        kind = r.get("type")
        if kind == "user":
            return self._user(r)
        if kind == "assistant":
            return self._assistant(r)
        if kind == "tool_finished":
            return self._result(r)
        if kind == "tool_started":
            return ""  # the call is shown with the assistant message that made it
        if kind == "system":
            return self._system(r)
        if kind == "attachment":
            return self._attachment(r)
        return _box("other", f"record {kind}", pre(r))

    def _user(self, r: dict[str, Any]) -> str:
        content = _content(r)
        if content and all(isinstance(b, dict) and b.get("type") == "tool_result" for b in content):
            return ""  # the tool_finished record before it shows these results
        text = "\n".join(_block_text(b) for b in content)
        who = "harness" if r.get("synthetic") else "user"
        return _box(who, "instruction from the harness" if who == "harness" else "user", _text(text), r)

    def _assistant(self, r: dict[str, Any]) -> str:
        self.turn += 1
        message = r.get("message") if isinstance(r.get("message"), dict) else {}
        parts = []
        for block in _content(r):
            if not isinstance(block, dict):
                continue
            if block.get("type") == "text":
                parts.append(_text(str(block.get("text", ""))))
            elif block.get("type") == "thinking":
                parts.append(f"<details><summary>thinking</summary>{_text(str(block.get('thinking', '')))}</details>")
            elif block.get("type") == "tool_use":
                parts.append(_call(block))
            else:
                parts.append(pre(block, "block"))
        meta = f"turn {self.turn} · {message.get('model', '')} · stop: {message.get('stop_reason')}"
        return _box("assistant", meta, "".join(parts), r)

    def _result(self, r: dict[str, Any]) -> str:
        result = r.get("result") if isinstance(r.get("result"), dict) else {}
        text = "\n".join(_block_text(b) for b in result.get("content", [])) if isinstance(
            result.get("content"), list) else str(result.get("content", ""))
        error = bool(result.get("is_error"))
        kind = "denied" if error and text.startswith(DENIED) else "error" if error else "ok"
        label = {"denied": "denied", "error": "error", "ok": "result"}[kind]
        anchor = esc(r.get("toolUseId", ""))
        return (f'<div class="rec tool-result {kind}" data-for="{anchor}"><div class="meta">{badge(label, kind)} '
                f"{esc(r.get('name', ''))} · {esc(r.get('toolUseId', ''))}</div>{pre(_cut(text), 'out')}</div>")

    def _system(self, r: dict[str, Any]) -> str:
        sub = str(r.get("subtype", ""))
        if sub == "api_retry":
            body = (f"{esc(r.get('content', ''))}: status {esc(r.get('errorStatus'))}, attempt {esc(r.get('attempt'))}"
                    f" of {esc(r.get('maxRetries'))}, retry in {duration(r.get('retryDelayMs'))}")
            return _box("retry", "retry", f"<p>{body}</p>", r)
        if sub == "compact_boundary":
            meta = r.get("compactMetadata") if isinstance(r.get("compactMetadata"), dict) else {}
            body = (f"<p>{esc(meta.get('trigger', ''))} compaction: {esc(meta.get('preTokens'))} → "
                    f"{esc(meta.get('postTokens'))} tokens</p>"
                    f"<details><summary>summary</summary>{_text(str(meta.get('summary', r.get('summary', ''))))}</details>")
            return _box("compaction", "compaction", body, r)
        if sub == "run_result":
            return self._run_result(r)
        return _box("notice " + str(r.get("level", "info")), sub or "notice", _text(str(r.get("content", ""))), r)

    def _run_result(self, r: dict[str, Any]) -> str:
        fields = {k: r.get(k) for k in ("resultSubtype", "terminalReason", "isError", "numTurns", "durationMs",
                                        "totalCostUsd")}
        head = (f"{badge(str(r.get('terminalReason', '')), 'bad' if r.get('isError') else 'good')} "
                f"{esc(r.get('numTurns'))} turns · {money(r.get('totalCostUsd'))} · {duration(r.get('durationMs'))}")
        return _box("result", "result", f"<p>{head}</p>{_text(str(r.get('content', '')))}{pre(fields, 'json')}", r)

    def _attachment(self, r: dict[str, Any]) -> str:
        a = r.get("attachment") if isinstance(r.get("attachment"), dict) else {}
        if a.get("type") == "attempts":
            from .attempts import attempts_html

            return _box("attempts", "attempts side by side", attempts_html(a), r)
        if a.get("type") != "goal_status":
            return _box("other", f"attachment {a.get('type', '')}", pre(a), r)
        if a.get("sentinel"):
            return _box("goal", "goal set", f"<p>{esc(a.get('condition', ''))}</p>", r)
        verdict = "cleared" if a.get("cleared") else "met" if a.get("met") else "impossible" if a.get(
            "failed") else "not met"
        body = (f"<p>{badge(verdict, verdict.replace(' ', '-'))} evaluation {esc(a.get('iterations'))} · "
                f"{duration(a.get('durationMs'))} · {esc(a.get('tokens'))} tokens</p>"
                f"<p class=\"reason\">{esc(a.get('reason', ''))}</p><p class=\"cond\">goal: {esc(a.get('condition', ''))}</p>")
        return _box("goal", "goal evaluation", body, r)


def _box(kind: str, title: str, body: str, r: dict[str, Any] | None = None) -> str:
    at = str((r or {}).get("timestamp", ""))[11:19]
    return (f'<div class="rec {esc(kind)}"><div class="meta"><b>{esc(title)}</b> <time>{esc(at)}</time></div>'
            f"{body}</div>")


def _call(block: dict[str, Any]) -> str:
    tool_input = block.get("input")
    return (f'<div class="call" id="call-{esc(block.get("id", ""))}"><div class="meta">→ <b>{esc(block.get("name", ""))}'
            f"</b> · {esc(block.get('id', ''))}</div>{pre(_cut(json.dumps(tool_input, ensure_ascii=False, indent=2)), 'in')}</div>")


def _content(r: dict[str, Any]) -> list[Any]:
    message = r.get("message")
    content = message.get("content") if isinstance(message, dict) else None
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    return content if isinstance(content, list) else []


def _block_text(block: Any) -> str:
    if not isinstance(block, dict):
        return str(block)
    if block.get("type") == "text":
        return str(block.get("text", ""))
    if block.get("type") == "tool_result":
        content = block.get("content")
        return "\n".join(_block_text(b) for b in content) if isinstance(content, list) else str(content or "")
    return f"[{block.get('type', 'block')}]"


def _text(text: str) -> str:
    return f'<div class="text">{esc(_cut(text))}</div>'


def _cut(text: str) -> str:
    return text if len(text) <= MAX_TEXT else text[:MAX_TEXT] + f"\n… ({len(text) - MAX_TEXT:,} more characters)"


def lines(path: Any, offset: int = 0, chunk: int = 1 << 16) -> Iterator[tuple[int, dict[str, Any] | None]]:
    """(offset after the line, record or None for a damaged line) of each whole line from `offset`;
    a last line without its newline is left for later (it is still being written)."""
    with open(path, "rb") as f:
        f.seek(offset)
        buffer = b""
        while block := f.read(chunk):
            buffer += block
            *whole, buffer = buffer.split(b"\n")
            for line in whole:
                offset += len(line) + 1
                if line.strip():
                    yield offset, _decode(line)
