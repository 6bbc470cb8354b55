"""`loopwright sessions [--all] [--json]`: the sessions of this folder (or of every folder),
newest first — id, folder, start, turns, cost, outcome, first prompt."""

from __future__ import annotations

import json
import os
import sys

from .parsing import Parser
from .render import visible


def run_sessions(args: list[str]) -> int:
    p = Parser(prog="loopwright sessions", description="List sessions, newest first (this folder's by default).")
    p.add_argument("--all", action="store_true", help="Every folder's sessions.")
    p.add_argument("--json", action="store_true", help="A JSON array instead of a table.")
    p.add_argument("--limit", type=int, default=50, help="At most this many (default 50; 0: all).")
    opts = p.parse_args(args)
    from ..stores.jsonl import home
    from ..stores.sessionlist import session_files, summarize

    cwd = os.getcwd()
    files = session_files(home(), None if opts.all else cwd)
    if opts.limit > 0:
        files = files[:opts.limit]
    rows = [summarize(f) for f in files]
    if opts.json:
        print(json.dumps(rows, ensure_ascii=False))
        return 0
    if not rows:
        print(f"no sessions in {'any folder' if opts.all else cwd}", file=sys.stderr)
        return 0
    for r in rows:
        where = f"  {r['folder']}" if opts.all else ""
        damaged = f"  ({r['damaged_lines']} damaged line(s))" if r["damaged_lines"] else ""
        print(visible(f"{r['id']}  {r['started'][:19].replace('T', ' ')}  {r['turns']:>4} turns  "
                      f"${r['cost_usd']:.4f}  {r['outcome'] or '-':<14}{where}  {r['first_prompt']}{damaged}"))
    return 0
