"""What `loopwright sessions` shows: one summary a transcript — its id, folder, start, turns,
cost, outcome and first prompt — read from the file as it is. A damaged or half-written line is
passed over, never fatal; a file another process holds the write lock on is `running`."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator

from .jsonl import _decode, project_name

try:
    import fcntl
except ImportError:  # pragma: no cover - not on POSIX
    fcntl = None  # type: ignore[assignment]

MAX_PROMPT = 60


def session_files(root: Path, cwd: str | None) -> list[Path]:
    """The transcripts of the folder `cwd` (every folder when None), newest first."""
    projects = root / "projects"
    folders = [projects / project_name(cwd)] if cwd is not None else sorted(projects.glob("*"))
    files = [p for folder in folders if folder.is_dir() for p in folder.glob("*.jsonl") if p.is_file()]
    return sorted(files, key=lambda p: p.stat().st_mtime_ns, reverse=True)


def summarize(path: Path) -> dict[str, Any]:
    """One session's summary; `outcome` is the last run's terminal reason, `running` while
    another process writes it, or `interrupted` when its last prompt got no result."""
    out = _empty(path.stem)
    return _summary(out, _records(path, out), lambda: _locked(path))


def summarize_lines(session_id: str, lines: list[bytes], locked: Callable[[], bool]) -> dict[str, Any]:
    """The same summary of a session kept elsewhere (a database) as its JSONL lines."""
    out = _empty(session_id)
    return _summary(out, _decoded(lines, out), locked)


def _empty(session_id: str) -> dict[str, Any]:
    return {"id": session_id, "folder": "", "started": "", "turns": 0, "cost_usd": 0.0, "outcome": "",
            "first_prompt": "", "damaged_lines": 0}


def _summary(out: dict[str, Any], records: Iterable[dict[str, Any]], locked: Callable[[], bool]) -> dict[str, Any]:
    waiting = False
    for record in records:
        if not out["started"]:
            out["started"] = str(record.get("timestamp") or "")
            out["folder"] = str(record.get("cwd") or "")
        kind = record.get("type")
        if kind == "user" and not record.get("toolUseResult") and _text(record):
            out["first_prompt"] = out["first_prompt"] or _one_line(_text(record))
            waiting = True
        elif kind == "system" and record.get("subtype") == "run_result":
            out["turns"] += _number(record.get("numTurns"))
            out["cost_usd"] += _number(record.get("totalCostUsd"))
            out["outcome"], waiting = str(record.get("terminalReason") or ""), False
    out["cost_usd"] = round(out["cost_usd"], 6)
    if locked():
        out["outcome"] = "running"
    elif waiting:
        out["outcome"] = "interrupted"
    return out


def _decoded(lines: list[bytes], out: dict[str, Any]) -> Iterator[dict[str, Any]]:
    for line in lines:
        record = _decode(line)
        if record is None:
            out["damaged_lines"] += 1
            continue
        yield record


def _records(path: Path, out: dict[str, Any]) -> Iterator[dict[str, Any]]:
    try:
        with open(path, "rb") as f:
            for line in f:
                if not line.strip():
                    continue
                record = _decode(line)
                if record is None:
                    out["damaged_lines"] += 1
                    continue
                yield record
    except OSError:
        out["damaged_lines"] += 1


def _text(record: dict[str, Any]) -> str:
    message = record.get("message")
    content = message.get("content") if isinstance(message, dict) else None
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return " ".join(b.get("text", "") for b in content if isinstance(b, dict) and b.get("type") == "text")
    return ""


def _one_line(text: str) -> str:
    line = " ".join(text.split())
    return line if len(line) <= MAX_PROMPT else line[:MAX_PROMPT - 1] + "…"


def _number(value: Any) -> float:
    return value if isinstance(value, (int, float)) and not isinstance(value, bool) else 0


def _locked(path: Path) -> bool:
    if fcntl is None:
        return False
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        return False
    except BlockingIOError:
        return True
    finally:
        os.close(fd)
