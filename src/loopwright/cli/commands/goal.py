"""`loopwright goal status|clear [--session ID]` and `/goal` with no condition: a session's goal
as its transcript records it (the `goal_status` attachments)."""

from __future__ import annotations

import sys
from pathlib import Path

from ...core.errors import SessionError, UsageError
from ...engine.goal import cleared_status, saved_goal
from ..core import attachments, describe
from ..parsing import Parser
from ...compose.render import visible


def parser() -> Parser:
    p = Parser(prog="loopwright goal", description="Show or clear a session's goal.")
    p.add_argument("action", choices=["status", "clear"], help="status: the goal and how far it got; clear: "
                   "drop it (the session goes on without one).")
    p.add_argument("--session", help="Session id (default: the most recent session of this directory).")
    p.add_argument("--store", metavar="URL", help="Where sessions live (default: $LOOPWRIGHT_STORE).")
    return p


def run(args: list[str]) -> int:
    opts = parser().parse_args(args)
    from ...session import open_session
    from ..core import run_stores

    cwd = Path.cwd().resolve()
    store = run_stores(opts.store, cwd).sessions
    session_id = opts.session or store.latest()
    if session_id is None:
        raise SessionError(f"No session found for {cwd}")
    loaded = store.load(session_id)
    if loaded is None:
        raise SessionError(f"No conversation found with session ID: {session_id}")
    saved = saved_goal(attachments(loaded[0]))
    if opts.action == "status":
        print(visible(describe(saved)))
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
    print(visible(f"Goal cleared: {saved.spec.condition}"), file=sys.stdout)
    return 0
