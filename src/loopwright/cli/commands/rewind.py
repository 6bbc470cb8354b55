"""`loopwright rewind --session ID [--to N|PROMPT_ID] [--code|--conversation|--both] [--dry-run]`:
list a session's checkpoints (one per prompt that changed files through Write or Edit), or put
the code, the conversation or both back to how they were before a prompt, in whichever store
holds the session (`--store`). No model call."""

from __future__ import annotations

import os
import sys
import time
from typing import Any

from ...core.errors import UsageError
from ..parsing import Parser
from ...compose.render import visible


def parser() -> Parser:
    p = Parser(prog="loopwright rewind", description="A session's checkpoints, and going back to one.")
    p.add_argument("--session", required=True, metavar="ID", help="The session (see `loopwright sessions`).")
    p.add_argument("--to", metavar="N|PROMPT_ID", help="Go back to before this checkpoint (its number in the "
                   "list, or its prompt's id); without it, the checkpoints are listed.")
    what = p.add_mutually_exclusive_group()
    what.add_argument("--code", dest="what", action="store_const", const="code", help="Files only (the default).")
    what.add_argument("--conversation", dest="what", action="store_const", const="conversation",
                      help="The conversation only: a resume continues from before that prompt.")
    what.add_argument("--both", dest="what", action="store_const", const="both", help="Files and conversation.")
    p.add_argument("--dry-run", action="store_true", help="Say what would change, change nothing.")
    p.add_argument("--store", metavar="URL", help="Where sessions live (default: $LOOPWRIGHT_STORE).")
    return p


def run_rewind(args: list[str]) -> int:
    opts = parser().parse_args(args)
    from ...session.checkpoints import Checkpoints
    from ..core import run_stores

    stores = run_stores(opts.store, os.getcwd())
    if not stores.sessions.exists(opts.session):
        raise UsageError(f"--session {opts.session}: no such session (see `loopwright sessions --all`)")
    store = Checkpoints(stores.checkpoints(opts.session))
    if opts.to is None:
        return _list(store)
    target = store.find(opts.to)
    if target is None:
        raise UsageError(f"--to {opts.to}: no checkpoint with that number or prompt id in session {opts.session} "
                         "(list them with `loopwright rewind --session ID`)")
    what = opts.what or "code"
    log = None
    if what in ("conversation", "both") and not opts.dry_run:
        try:  # locked before any file changes: a session another process writes is left whole
            log = stores.sessions.open(opts.session)
        except OSError as exc:
            raise UsageError(f"--session {opts.session}: cannot rewind its conversation: {exc}") from None
    try:
        if what in ("code", "both"):
            lines = store.rewind(target, dry_run=opts.dry_run)
            for line in lines or ["no file to change"]:
                print(visible(("would be " if opts.dry_run else "") + line))
            print("changes made by shell commands are not tracked and were left as they are", file=sys.stderr)
        if log is not None:
            _rewind_conversation(log, stores.sessions.export(opts.session) or b"", target.prompt_id)
        if what in ("conversation", "both"):
            print(visible(f"conversation{' would be' if opts.dry_run else ''} rewound to before prompt "
                          f"{target.number}; `loopwright -r {opts.session}` continues from there"))
    finally:
        if log is not None:
            log.close()
    return 0


def _list(store: "object") -> int:
    checkpoints = store.list()  # type: ignore[attr-defined]
    if not checkpoints:
        print("no checkpoints in this session (they are made in interactive sessions, or with "
              "CLAUDE_CODE_ENABLE_SDK_FILE_CHECKPOINTING=true)", file=sys.stderr)
        return 0
    for c in checkpoints:
        when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(c.time))
        files = ", ".join(os.path.basename(f) for f in c.files[:5]) + (" …" if len(c.files) > 5 else "")
        print(visible(f"{c.number:>3}  {when}  {c.prompt_id}  {len(c.files)} file(s){': ' + files if files else ''}"))
    return 0


def _rewind_conversation(log: Any, transcript: bytes, prompt_id: str) -> None:
    """A record saying replay stops before `prompt_id`'s message, appended to the session's
    `log` (its writer's lock held); the transcript keeps the rest."""
    import json

    from ...core.ids import uuid4
    from ...session.recorder import iso_timestamp
    from ...session.records import REWOUND, Record, SystemEntry

    last: dict = {}
    for line in reversed(transcript.decode("utf-8", "replace").splitlines()):
        try:
            last = json.loads(line)
            break
        except ValueError:
            continue
    entry = SystemEntry(REWOUND, f"conversation rewound to before {prompt_id}", data={"before": prompt_id})
    record = Record(entry, uuid4(), last.get("uuid"), str(last.get("sessionId", "")), iso_timestamp(time.time()),
                    str(last.get("cwd", "")))
    log.append(record.to_json(), sync=True)
