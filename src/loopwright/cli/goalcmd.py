"""`loopwright goal status|clear [--session ID]` and `/goal` with no condition: a session's goal
as its transcript records it (the `goal_status` attachments)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any, Iterable

from ..core.errors import SessionError, UsageError
from ..engine.goal import SavedGoal, cleared_status, saved_goal


def attachments(records: Iterable[Any]) -> list[dict[str, Any]]:
    """Attachment bodies from parsed records (`session.Record`) or raw record dicts."""
    out = []
    for r in records:
        if isinstance(r, dict):
            if r.get("type") == "attachment" and isinstance(r.get("attachment"), dict):
                out.append(r["attachment"])
        elif getattr(r.entry, "type", None) == "attachment":
            out.append(dict(r.entry.attachment))
    return out


def describe(saved: SavedGoal | None) -> str:
    if saved is None:
        return "No goal set"
    last = saved.last
    state = "active" if saved.active else ("achieved" if last.get("met") else "failed" if last.get("failed")
                                          else "cleared")
    lines = [f"Goal ({state}): {saved.spec.condition}"]
    if saved.spec.checks:
        lines.append("checks: " + "; ".join(saved.spec.checks))
    if saved.spec.protect:
        lines.append("protected: " + ", ".join(saved.spec.protect))
    lines.append(f"evaluations: {last.get('iterations', 0)} · evaluator tokens: {last.get('tokens', 0)} · "
                 f"time: {last.get('durationMs', 0) / 1000:.0f}s")
    if last.get("reason"):
        lines.append(f"last reason: {last['reason']}")
    return "\n".join(lines)


def run(args: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="loopwright goal", description="Show or clear a session's goal.")
    parser.add_argument("action", choices=["status", "clear"])
    parser.add_argument("--session", help="Session id (default: the most recent session of this directory).")
    opts = parser.parse_args(args)
    from ..session import open_session
    from ..stores.jsonl import JsonlStore

    cwd = Path.cwd().resolve()
    store = JsonlStore.default(cwd)
    session_id = opts.session or store.latest()
    if session_id is None:
        raise SessionError(f"No session found for {cwd}")
    loaded = store.load(session_id)
    if loaded is None:
        raise SessionError(f"No conversation found with session ID: {session_id}")
    saved = saved_goal(attachments(loaded[0]))
    if opts.action == "status":
        print(describe(saved))
        return 0
    if saved is None or not saved.active:
        print("No goal set")
        return 0
    session = open_session(store, str(cwd), resume=session_id)
    try:
        if session.recorder is None:
            raise UsageError("this session cannot be written")
        session.recorder.attach(cleared_status(saved.spec.condition))
    finally:
        session.close()
    print(f"Goal cleared: {saved.spec.condition}", file=sys.stdout)
    return 0
