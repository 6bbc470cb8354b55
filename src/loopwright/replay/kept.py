"""The last replay of each session, kept in the loopwright home (`replays/<session id>.json`, one
file a session, private to the user: a report quotes tool output) for the session's page in the
web view. `loopwright replay SESSION` keeps its report there; `--check` over a folder of fixtures
does not (a fixture is often an edited copy of a session, with its id)."""

from __future__ import annotations

import json
import os
import re
import time
from pathlib import Path
from typing import Any, Sequence

FOLDER = "replays"
_SAFE_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")


def where(root: Path, session_id: str) -> Path | None:
    """The file of a session's last replay; None for an id that cannot name a file safely."""
    return root / FOLDER / f"{session_id}.json" if _SAFE_ID.fullmatch(session_id) else None


def save(root: Path, report: dict[str, Any], flags: Sequence[str], now: float | None = None) -> Path | None:
    """Keep `report` (`Report.to_json()`) as the session's last replay, with when it ran and the
    flags it added; written whole or not at all. None when the session's id cannot name a file."""
    path = where(root, str(report.get("session", "")))
    if path is None:
        return None
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    kept = {**report, "replayedAt": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(now)), "flags": list(flags)}
    temporary = path.with_name(f".{path.name}.{os.getpid()}")
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as out:
        json.dump(kept, out, ensure_ascii=False)
    os.replace(temporary, path)
    return path


def last(root: Path, session_id: str) -> dict[str, Any] | None:
    """The session's last replay, or None when it was never replayed. A file that cannot be read
    raises ValueError naming it (the page says so rather than showing nothing)."""
    path = where(root, session_id)
    if path is None or not path.is_file():
        return None
    try:
        value = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ValueError(f"{path}: the last replay's report cannot be read ({exc})") from None
    if not isinstance(value, dict):
        raise ValueError(f"{path}: the last replay's report is not a JSON object")
    return value
