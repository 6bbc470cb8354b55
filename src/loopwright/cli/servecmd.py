"""`loopwright serve [--port 8484] [--host 127.0.0.1] [--all]`: the local web view of the stores.
Prints the address with a per-launch token (as Jupyter does); changes need it, and so does
everything when bound beyond loopback."""

from __future__ import annotations

import ipaddress
import os
import secrets
import sys

from ..core.errors import UsageError
from .parsing import Parser


def run_serve(args: list[str]) -> int:
    p = Parser(prog="loopwright serve", description="A local web view of sessions, schedules and cost.")
    p.add_argument("--port", type=int, default=8484, help="The port (default 8484).")
    p.add_argument("--host", default="127.0.0.1", help="The address to bind (default 127.0.0.1; any other "
                   "address needs the token for every request).")
    p.add_argument("--all", action="store_true", help="Every folder's sessions (default: this folder's).")
    opts = p.parse_args(args)
    if not 0 < opts.port < 65536:
        raise UsageError(f"--port: expected 1 to 65535, got {opts.port}")
    try:
        import uvicorn

        from ..web.app import Config, build
    except ImportError as exc:
        raise UsageError(f"loopwright serve needs the `serve` extra (pip install 'loopwright[serve]'): {exc}") from None
    from ..stores.jsonl import home

    local = _loopback(opts.host)
    token = secrets.token_urlsafe(24)
    config = Config(home(), None if opts.all else os.getcwd(), token, local, opts.port)
    shown = f"[{opts.host}]" if ":" in opts.host else opts.host
    scope = "every folder" if opts.all else os.getcwd()
    print(f"loopwright serve: sessions of {scope}; Ctrl-C stops it\n"
          f"    http://{shown}:{opts.port}/?token={token}\n"
          f"(the token is needed to pause, resume or run a schedule{'' if local else ', and for every request'})",
          file=sys.stderr, flush=True)
    if not local:
        print("loopwright serve: warning: bound beyond loopback without TLS; the token travels in clear text",
              file=sys.stderr, flush=True)
    uvicorn.run(build(config), host=opts.host, port=opts.port, log_level="warning", timeout_graceful_shutdown=1)
    return 0


def _loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False
