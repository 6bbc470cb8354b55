"""`loopwright sessions [--all] [--json]`: the sessions of this folder (or of every folder),
newest first — id, folder, start, turns, cost, outcome, first prompt; an attempt of a
`--attempts N` run is marked with its place in the run and whether it won."""

from __future__ import annotations

import json
import os
import sys

from ..parsing import Parser
from ...compose.render import visible


def sessions_parser() -> Parser:
    p = Parser(prog="loopwright sessions", description="List sessions, newest first (this folder's by default).")
    p.add_argument("--all", action="store_true", help="Every folder's sessions.")
    p.add_argument("--json", action="store_true", help="A JSON array instead of a table.")
    p.add_argument("--limit", type=int, default=50, help="At most this many (default 50; 0: all).")
    p.add_argument("--store", metavar="URL", help="Where sessions live (default: $LOOPWRIGHT_STORE).")
    return p


def run_sessions(args: list[str]) -> int:
    opts = sessions_parser().parse_args(args)
    from ..core import run_stores

    cwd = os.getcwd()
    stores = run_stores(opts.store, cwd)
    if stores.files:
        from ...stores.sessionlist import session_files, summarize

        files = session_files(stores.root, None if opts.all else cwd)
        rows = [summarize(f) for f in (files[:opts.limit] if opts.limit > 0 else files)]
    else:
        rows = stores.sessions.summaries(not opts.all, opts.limit)
    if opts.json:
        print(json.dumps(rows, ensure_ascii=False))
        return 0
    if not rows:
        print(f"no sessions in {'any folder' if opts.all else cwd}", file=sys.stderr)
        return 0
    from ...stores.sessionlist import attempt_label

    for r in rows:
        where = f"  {r['folder']}" if opts.all else ""
        attempt = f"[{attempt_label(r.get('attempt'))}] " if r.get("attempt") else ""
        damaged = f"  ({r['damaged_lines']} damaged line(s))" if r["damaged_lines"] else ""
        print(visible(f"{r['id']}  {r['started'][:19].replace('T', ' ')}  {r['turns']:>4} turns  "
                      f"${r['cost_usd']:.4f}  {r['outcome'] or '-':<14}{where}  {attempt}{r['first_prompt']}{damaged}"))
    return 0


def session_parser() -> Parser:
    p = Parser(prog="loopwright session", description="One session, from whichever store holds it.")
    sub = p.add_subparsers(dest="action", required=True)
    export = sub.add_parser("export", help="Write the session as a Claude Code JSONL transcript (stdout by "
                            "default), from any store.")
    export.add_argument("id", help="The session id.")
    export.add_argument("--output", "-o", metavar="FILE", help="Write it to this file (created 0600) instead.")
    export.add_argument("--agent", metavar="AGENT_ID", help="A subagent's sidechain transcript instead.")
    export.add_argument("--store", metavar="URL", help="Where sessions live (default: $LOOPWRIGHT_STORE).")
    return p


def run_session(args: list[str]) -> int:
    """`loopwright session export ID [--output FILE]`: the session as a Claude Code JSONL transcript."""
    opts = session_parser().parse_args(args)
    from ...core.errors import UsageError
    from ..core import run_stores

    stores = run_stores(opts.store, os.getcwd())
    try:
        data = stores.sessions.export(opts.id, opts.agent)
    except ValueError as exc:  # an agent id that is no id
        raise UsageError(f"--agent {opts.agent}: {exc}") from None
    if data is None:
        what = f"sidechain of agent {opts.agent} in session" if opts.agent else "session"
        raise UsageError(f"no {what} {opts.id} in the store {stores.url} (see `loopwright sessions --all`)")
    if opts.output is None:
        sys.stdout.flush()
        sys.stdout.buffer.write(data)
        sys.stdout.buffer.flush()
        return 0
    from ...core.home import open_private

    try:
        fd = open_private(opts.output, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
        with os.fdopen(fd, "wb") as f:
            f.write(data)
    except OSError as exc:
        raise UsageError(f"--output {opts.output}: cannot write it ({exc.strerror or exc}); expected a file path "
                         "in a folder that exists") from None
    return 0
