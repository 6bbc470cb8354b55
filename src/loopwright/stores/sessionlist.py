"""What `loopwright sessions` shows: one summary a transcript — its id, folder, start, turns,
cost, outcome, first prompt, and for an attempt of a `--attempts N` run which one it was and
whether it won — read from the file as it is. A damaged or half-written line is
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
            "first_prompt": "", "damaged_lines": 0, "attempt": None}


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
        elif kind == "attachment" and isinstance(record.get("attachment"), dict):
            out["attempt"] = attempt_mark(record["attachment"], out["attempt"])
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


def attempt_mark(body: dict[str, Any], mark: dict[str, Any] | None) -> dict[str, Any] | None:
    """An attempt's place in its run, from its transcript's attachments: `attempt` (written as it
    starts: run, number, how many) and `attempts` (the run's ruling: whether this one won). Not an
    attempt's: `mark` as it was."""
    kind = body.get("type")
    if kind == "attempt" and isinstance(body.get("attempt"), int):
        return {"run": str(body.get("run") or ""), "number": body["attempt"], "of": _count(body.get("of")),
                "branch": str(body.get("branch") or ""), "won": None, "winner": None}
    if kind != "attempts" or not isinstance(body.get("this_attempt"), int):
        return mark
    rows = [r for r in body.get("attempts") or [] if isinstance(r, dict)]
    number = body["this_attempt"]
    branch = next((str(r.get("branch") or "") for r in rows if r.get("attempt") == number), "")
    run = str(body.get("run") or "") or (mark or {}).get("run") or _run_of(branch)
    winner = body.get("winner") if isinstance(body.get("winner"), int) else None
    return {"run": run, "number": number, "of": len(rows) or (mark or {}).get("of", 0), "branch": branch,
            "won": winner == number, "winner": winner}


def attempt_label(mark: dict[str, Any] | None) -> str:
    """`attempt 2/3 of run 1a2b3c4d, won` (`attempt 1 won`, `no winner`; nothing while the run
    has no ruling: running, or cut short)."""
    if not mark:
        return ""
    if mark.get("won") is None:
        ruled = ""
    elif mark["won"]:
        ruled = ", won"
    else:
        ruled = f", attempt {mark['winner']} won" if mark.get("winner") is not None else ", no winner"
    return f"attempt {mark['number']}/{mark['of']} of run {str(mark['run'])[:8]}{ruled}"


def _run_of(branch: str) -> str:
    """The run in an attempt's branch name, `loopwright/<run>/<k>` (a ruling recorded before runs were)."""
    parts = branch.split("/")
    return parts[1] if len(parts) == 3 and parts[0] == "loopwright" else ""


def _count(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


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
