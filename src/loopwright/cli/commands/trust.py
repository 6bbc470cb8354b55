"""`loopwright trust [PATH]`, `--list`, `--revoke PATH`: the folders whose project settings may
run code and widen permissions at the terminal, decided ahead for scripted set-ups (the question
the interactive session asks once per folder; `-p` never asks, as in Claude Code)."""

from __future__ import annotations

import json
import os

from ...core.errors import UsageError
from ..parsing import Parser


def parser() -> Parser:
    p = Parser(prog="loopwright trust", allow_abbrev=False,
                description="Trust a folder: its project settings (hooks, allow rules, env) apply in interactive "
                "sessions without the question. Without PATH: this folder.")
    p.add_argument("path", nargs="?", help="The folder to trust (default: the current one).")
    p.add_argument("--list", action="store_true", help="The folders remembered, trusted or declined.")
    p.add_argument("--revoke", metavar="PATH", help="Forget PATH: its project settings stay off until you are "
                   "asked again (the next interactive session there).")
    p.add_argument("--json", action="store_true", help="With --list: JSON.")
    return p


def run_trust(args: list[str]) -> int:
    from ...stores.trust import TrustStore, folder_key
    from ..core import printable

    opts = parser().parse_args(args)
    store = TrustStore.default()
    if opts.list:
        if opts.path or opts.revoke:
            raise UsageError("loopwright trust: --list takes no PATH")
        folders = store.folders()
        if opts.json:
            print(json.dumps(folders, indent=1, sort_keys=True))
        for folder, entry in sorted(folders.items()) if not opts.json else ():
            state = "trusted " if entry.get("trusted") else "declined"
            print(f"{state}  {printable(folder)}  ({entry.get('how', '')} {entry.get('at', '')})")
        if not folders and not opts.json:
            print("No folders remembered yet.")
        return 0
    if opts.revoke is not None:
        if opts.path:
            raise UsageError("loopwright trust: give either PATH or --revoke PATH")
        forgotten = store.forget(opts.revoke)
        print(f"{'Forgot' if forgotten else 'Nothing remembered about'} {printable(folder_key(opts.revoke))}")
        return 0
    folder = opts.path or "."
    if not os.path.isdir(folder):
        raise UsageError(f"loopwright trust: {folder!r} is not a folder")
    store.remember(folder, True, how="loopwright trust")
    print(f"Trusted {printable(folder_key(folder))}: its project settings apply in interactive sessions.")
    return 0
