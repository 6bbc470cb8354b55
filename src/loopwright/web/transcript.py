"""A transcript as HTML, record by record, so a long session streams and a live one grows: user
prompts, assistant text and thinking, each tool call with its input and result, denials,
retries, compactions, goal evaluations with their verdicts and the result of each run. The
model's text is drawn as Markdown (web.markdown), and once: a run's result, which repeats the
last answer, is not shown a second time."""

from __future__ import annotations

import json
from typing import Any, Callable, Iterator

from ..stores.jsonl import _decode
from .html import badge, duration, esc, link, money

DENIED = ("Permission needed for ", "Permission denied for ")  # the gate's words (engine/gate.py)
MAX_TEXT = 200_000  # one block shown at most this long; the rest is named and linked, not sent


class Renderer:
    """Keeps the turn count across records; `turn` starts where an earlier page left off. `raw`
    gives the address of the whole line that starts at a byte offset: a block cut for display
    links there."""

    def __init__(self, turn: int = 0, raw: Callable[[int], str] | None = None) -> None:
        self.turn, self.raw = turn, raw
        self.at: int | None = None  # where the line of the record being rendered starts
        self.answer: str | None = None  # the text of the last assistant message: a run's result repeats it

    def record(self, r: dict[str, Any], at: int | None = None) -> str:
        self.at = at
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
        return _box("other", f"record {kind}", self._pre(r))

    def _user(self, r: dict[str, Any]) -> str:
        content = _content(r)
        if content and all(isinstance(b, dict) and b.get("type") == "tool_result" for b in content):
            return ""  # the tool_finished record before it shows these results
        text = "\n".join(_block_text(b) for b in content)
        who = "harness" if r.get("synthetic") else "user"
        return _box(who, "instruction from the harness" if who == "harness" else "user", self._text(text), r)

    def _assistant(self, r: dict[str, Any]) -> str:
        self.turn += 1
        message = _object(r.get("message"))
        parts, said = [], []
        for block in _content(r):
            if not isinstance(block, dict):
                continue
            if block.get("type") == "text":
                said.append(str(block.get("text", "")))
                parts.append(self._markdown(said[-1]))
            elif block.get("type") == "thinking":
                parts.append(f"<details><summary>thinking</summary>{self._text(str(block.get('thinking', '')))}</details>")
            elif block.get("type") == "tool_use":
                parts.append(self._call(block))
            else:
                parts.append(self._pre(block, "block"))
        self.answer = "\n".join(said).strip() if said else self.answer
        meta = f"turn {self.turn} · {message.get('model', '')} · stop: {message.get('stop_reason')}"
        return _box("assistant", meta, "".join(parts), r)

    def _result(self, r: dict[str, Any]) -> str:
        result = _object(r.get("result"))
        text = "\n".join(_block_text(b) for b in result.get("content", [])) if isinstance(
            result.get("content"), list) else str(result.get("content", ""))
        error = bool(result.get("is_error"))
        kind = "denied" if error and text.startswith(DENIED) else "error" if error else "ok"
        label = {"denied": "denied", "error": "error", "ok": "result"}[kind]
        anchor = esc(r.get("toolUseId", ""))
        return (f'<div class="rec tool-result {kind}" data-for="{anchor}"><div class="meta">{badge(label, kind)} '
                f"{esc(r.get('name', ''))} · {esc(r.get('toolUseId', ''))}</div>{self._pre(text, 'out')}</div>")

    def _system(self, r: dict[str, Any]) -> str:
        sub = str(r.get("subtype", ""))
        if sub == "api_retry":
            body = (f"{esc(r.get('content', ''))}: status {esc(r.get('errorStatus'))}, attempt {esc(r.get('attempt'))}"
                    f" of {esc(r.get('maxRetries'))}, retry in {duration(r.get('retryDelayMs'))}")
            return _box("retry", "retry", f"<p>{body}</p>", r)
        if sub == "compact_boundary":
            meta = _object(r.get("compactMetadata"))
            body = (f"<p>{esc(meta.get('trigger', ''))} compaction: {esc(meta.get('preTokens'))} → "
                    f"{esc(meta.get('postTokens'))} tokens</p>"
                    f"<details><summary>summary</summary>{self._text(str(meta.get('summary', r.get('summary', ''))))}</details>")
            return _box("compaction", "compaction", body, r)
        if sub == "run_result":
            return self._run_result(r)
        if sub == "model_call":  # a prompt hook's or the classifier's own call to a model
            given = r.get("answer")
            answer: dict[str, Any] = given if isinstance(given, dict) else {}
            said = "\n".join(str(b.get("text", "")) for b in answer.get("content") or [] if isinstance(b, dict))
            who = {"prompt_hook": "prompt hook", "classifier": "auto-mode classifier"}.get(str(r.get("purpose")), "model")
            body = (f"{self._text(said)}<details><summary>what it was asked</summary>"
                    f"{self._text(str(r.get('request', '')))}</details>")
            return _box("notice info", f"{who} · {answer.get('model', '')}", body, r)
        return _box("notice " + str(r.get("level", "info")), sub or "notice", self._text(str(r.get("content", ""))), r)

    def _run_result(self, r: dict[str, Any]) -> str:
        fields = {k: r.get(k) for k in ("resultSubtype", "terminalReason", "isError", "numTurns", "durationMs",
                                        "totalCostUsd")}
        head = (f"{badge(str(r.get('terminalReason', '')), 'bad' if r.get('isError') else 'good')} "
                f"{esc(r.get('numTurns'))} turns · {money(r.get('totalCostUsd'))} · {duration(r.get('durationMs'))}")
        content = str(r.get("content", ""))
        if r.get("isError"):
            said = self._text(content)
        elif content.strip() and content.strip() == self.answer:
            said = '<p class="muted">the answer above</p>'
        else:  # an answer no message showed (a workflow's return value, a structured output)
            said = self._markdown(content)
        return _box("result", "result", f"<p>{head}</p>{said}{self._pre(fields, 'json')}", r)

    def _attachment(self, r: dict[str, Any]) -> str:
        a = _object(r.get("attachment"))
        if a.get("type") == "attempts":
            from .attempts import attempts_html

            return _box("attempts", "attempts side by side", attempts_html(a), r)
        if a.get("type") != "goal_status":
            return _box("other", f"attachment {a.get('type', '')}", self._pre(a), r)
        if a.get("sentinel"):
            return _box("goal", "goal set", f"<p>{esc(a.get('condition', ''))}</p>", r)
        verdict = "cleared" if a.get("cleared") else "met" if a.get("met") else "impossible" if a.get(
            "failed") else "not met"
        body = (f"<p>{badge(verdict, verdict.replace(' ', '-'))} evaluation {esc(a.get('iterations'))} · "
                f"{duration(a.get('durationMs'))} · {esc(a.get('tokens'))} tokens</p>"
                f"<p class=\"reason\">{esc(a.get('reason', ''))}</p><p class=\"cond\">goal: {esc(a.get('condition', ''))}</p>")
        return _box("goal", "goal evaluation", body, r)

    def _call(self, block: dict[str, Any]) -> str:
        tool_input = json.dumps(block.get("input"), ensure_ascii=False, indent=2)
        return (f'<div class="call" id="call-{esc(block.get("id", ""))}"><div class="meta">→ <b>{esc(block.get("name", ""))}'
                f"</b> · {esc(block.get('id', ''))}</div>{self._pre(tool_input, 'in')}</div>")

    def _text(self, text: str) -> str:
        return f'<div class="text">{self._cut(text)}</div>'

    def _markdown(self, text: str) -> str:
        from .markdown import markdown_html

        shown, cut = (text, "") if len(text) <= MAX_TEXT else (text[:MAX_TEXT], self._cut(text)[len(esc(text[:MAX_TEXT])):])
        return f'<div class="md">{markdown_html(shown)}{cut}</div>'

    def _pre(self, value: Any, cls: str = "") -> str:
        text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, indent=2)
        klass = f' class="{esc(cls)}"' if cls else ""
        return f"<pre{klass}>{self._cut(text)}</pre>"

    def _cut(self, text: str) -> str:
        """`text` as HTML, at most `MAX_TEXT` characters of it: the rest is counted, and linked
        as the whole line when the page knows where it starts."""
        if len(text) <= MAX_TEXT:
            return esc(text)
        more = f"… ({len(text) - MAX_TEXT:,} more characters)"
        whole = f" {link(self.raw(self.at), 'show the whole record')}" if self.raw and self.at is not None else ""
        return f'{esc(text[:MAX_TEXT])}\n<span class="cut">{esc(more)}{whole}</span>'


def _box(kind: str, title: str, body: str, r: dict[str, Any] | None = None) -> str:
    at = str((r or {}).get("timestamp", ""))[11:19]
    return (f'<div class="rec {esc(kind)}"><div class="meta"><b>{esc(title)}</b> <time>{esc(at)}</time></div>'
            f"{body}</div>")


def _object(value: Any) -> dict[str, Any]:
    """A record's field that should be a JSON object; {} when it is not (a damaged record is shown, not fatal)."""
    return value if isinstance(value, dict) else {}


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


def lines(path: Any, offset: int = 0, chunk: int = 1 << 16) -> Iterator[tuple[int, int, dict[str, Any] | None]]:
    """(where the line starts, the offset after it, its record or None for a damaged line) of each
    whole line from `offset`; a last line without its newline is left for later (it is still being
    written). Linear in the bytes read however long a line is: each block is searched once and a
    long line's pieces are joined once, when its newline comes."""
    with open(path, "rb") as f:
        f.seek(offset)
        pieces: list[bytes] = []  # the line begun and not yet ended
        while block := f.read(chunk):
            begin = 0
            while (end := block.find(b"\n", begin)) >= 0:
                line = b"".join((*pieces, block[begin:end])) if pieces else block[begin:end]
                pieces, begin, start, offset = [], end + 1, offset, offset + len(line) + 1
                if line.strip():
                    yield start, offset, _decode(line)
            if begin < len(block):
                pieces.append(block[begin:])


def raw_line(path: Any, at: int, chunk: int = 1 << 16) -> Iterator[bytes] | None:
    """The bytes of the line that starts at `at`, read piece by piece (a record cut for display,
    shown whole); None when no line starts there."""
    f = open(path, "rb")
    try:
        if at > 0:
            f.seek(at - 1)
            if f.read(1) != b"\n":
                f.close()
                return None
        if not f.read(1):
            f.close()
            return None
        f.seek(at)
    except OSError:
        f.close()
        raise
    return _until_newline(f, chunk)


def _until_newline(f: Any, chunk: int) -> Iterator[bytes]:
    with f:
        while block := f.read(chunk):
            end = block.find(b"\n")
            if end >= 0:
                yield block[:end]
                return
            yield block
