"""A recorded session made fit to commit as a test fixture: trimmed to what a replay reads, and
scrubbed of secrets — API keys and tokens by their shapes, `Authorization` and key-like values,
paths under the home folder written as `~`. Sidechains are written beside the file, as a
transcript's are. A scrubbed value a tool prints again in the replay shows as a divergence there:
fixtures should come from sessions that handle no secrets."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

from ..core.errors import UsageError
from .recording import load

# What a replay reads; the rest (tool_started, retries, notices) is left out.
KEPT = {"user", "assistant", "tool_finished", "attachment"}
KEPT_SYSTEM = {"compact_boundary", "run_result", "resent_results_only", "conversation_rewound", "model_call"}
REDACTED = "[REDACTED]"
_SECRETS = [re.compile(p) for p in (
    r"sk-ant-[A-Za-z0-9_\-]{8,}",  # Anthropic
    r"\bsk-(?:proj-|svcacct-)?[A-Za-z0-9_\-]{16,}",  # OpenAI and look-alikes
    r"\bgh[pousr]_[A-Za-z0-9]{20,}", r"\bgithub_pat_[A-Za-z0-9_]{20,}",  # GitHub
    r"\bxox[abprs]-[A-Za-z0-9\-]{10,}",  # Slack
    r"\bAKIA[0-9A-Z]{16}\b", r"\bAIza[0-9A-Za-z_\-]{35}\b",  # AWS key ids, Google API keys
    r"\beyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}",  # JWTs
    r"(?i)\bglpat-[A-Za-z0-9_\-]{20,}",  # GitLab
)]
# `Authorization: Bearer x`, `x-api-key: x`, `"token": "x"`, `API_KEY=x`: the value goes.
_LABELLED = re.compile(
    r"(?i)(\b(?:authorization|proxy-authorization|x-api-key|api[_-]?key|access[_-]?token|auth[_-]?token|"
    r"secret(?:[_-]?key)?|password|passwd|token)\b\"?\s*[:=]\s*\"?)((?:bearer|basic|token)\s+)?([^\s\"',;]+)")
_KEYLIKE = re.compile(r"(?i)^(authorization|proxy-authorization|x-api-key|api[_-]?key|.*token|.*secret.*|password)$")


_URL_PASSWORD = re.compile(r"(://[^/\s:@]+:)[^/\s@]+@")  # postgresql://user:PASSWORD@host


def scrub_text(text: str, home: str) -> str:
    """`text` with secret-shaped values redacted, and paths under `home` as `~` (none when "")."""
    for pattern in _SECRETS:
        text = pattern.sub(REDACTED, text)
    text = _URL_PASSWORD.sub(lambda m: m.group(1) + REDACTED + "@", text)
    text = _LABELLED.sub(lambda m: m.group(1) + (m.group(2) or "") + REDACTED, text)
    if home and home != "/":
        text = re.sub(re.escape(home.rstrip("/")) + r"(?=/|\b|$)", "~", text)
    return text


def scrub(value: Any, home: str) -> Any:
    if isinstance(value, str):
        return scrub_text(value, home)
    if isinstance(value, list):
        return [scrub(v, home) for v in value]
    if isinstance(value, dict):
        return {k: REDACTED if isinstance(v, str) and _KEYLIKE.match(str(k)) and v else scrub(v, home)
                for k, v in value.items()}
    return value


OPENING = ("gitHead", "gitRoot", "argv")  # how a run started: kept on the next record kept when its own is not


def trim(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    carried: dict[str, Any] = {}
    for r in records:
        if r.get("type") in KEPT or (r.get("type") == "system" and r.get("subtype") in KEPT_SYSTEM):
            out.append(carried | r)
            carried = {}
        else:
            carried |= {k: r[k] for k in OPENING if k in r}
    return out


def export(session: str, out: Path, *, store: str | None = None, home: str | None = None) -> Path:
    """Write `session` to `out` (a new `.jsonl` file), trimmed and scrubbed; its sidechains go to
    `<out without .jsonl>/subagents/`. Returns `out`."""
    if out.suffix != ".jsonl":
        raise UsageError(f"{out}: expected a file name ending in .jsonl (a replay finds transcripts by it)")
    if out.exists():
        raise UsageError(f"{out}: already exists; expected a new file")
    recording = load(session, store=store, cwd=os.getcwd())
    home = os.path.realpath(os.path.expanduser("~")) if home is None else home
    # the first record carries how the session started (argv, gitHead): kept even when trimmed away
    start = {k: recording.first[k] for k in ("gitHead", "gitRoot", "argv") if k in recording.first}
    main = trim(recording.main)
    if main and start:
        main[0] = main[0] | start
    out.parent.mkdir(parents=True, exist_ok=True)
    _write(out, [scrub(r, home) for r in main])
    for agent, raw in recording.sidechains.items():
        _write(out.with_suffix("") / "subagents" / f"agent-{agent}.jsonl", [scrub(r, home) for r in trim(raw)])
    return out


def _write(path: Path, records: list[dict[str, Any]]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        for record in records:
            f.write(json.dumps(record, ensure_ascii=False, separators=(",", ":")) + "\n")
