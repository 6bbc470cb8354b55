"""`loopwright serve [--port 8484] [--host 127.0.0.1] [--all] [--no-token]`: the local web view of
the stores. Prints the address with a per-launch token (as Jupyter does): every page needs it (on
a shared machine any local user can reach a loopback port), kept in a cookie after the first
visit; `--no-token` opens the pages on loopback, on purpose, and changes still need it. `--port 0`
takes a free port; the address printed has the port bound."""

from __future__ import annotations

import errno
import ipaddress
import os
import secrets
import socket
import sys

from ...core.errors import UsageError
from ..parsing import Parser


def parser() -> Parser:
    p = Parser(prog="loopwright serve", description="A local web view of sessions, schedules and cost.")
    p.add_argument("--port", type=int, default=8484, help="The port (default 8484; 0 takes a free one).")
    p.add_argument("--host", default="127.0.0.1", help="The address to bind (default 127.0.0.1; an address "
                   "beyond loopback sends the token in clear text).")
    p.add_argument("--no-token", action="store_true", help="Pages without the token (loopback only): anyone "
                   "on this machine can then read every transcript shown; pausing, resuming or running a "
                   "schedule still needs it.")
    p.add_argument("--all", action="store_true", help="Every folder's sessions (default: this folder's).")
    p.add_argument("--store", metavar="URL", help="Where the schedules and routine ledgers shown live (default: "
                   "$LOOPWRIGHT_STORE, else the home's SQLite file); sessions are the home's transcript files.")
    return p


def run_serve(args: list[str]) -> int:
    opts = parser().parse_args(args)
    if not 0 <= opts.port < 65536:
        raise UsageError(f"--port: expected 0 (a free port) to 65535, got {opts.port}")
    try:
        import uvicorn

        from ...web.app import Config, build
    except ImportError as exc:
        raise UsageError(f"loopwright serve needs the `serve` extra (pip install 'loopwright[serve]'): {exc}") from None
    from ...stores import open_store, store_url
    from ...stores.jsonl import home

    url = store_url(opts.store)
    stores = open_store(url, os.getcwd())  # a bad URL, or a database that is down, is said now, not on
    if not stores.files:                   # the first page after the address was printed
        stores.connect().close()
    local = _loopback(opts.host)
    if opts.no_token and not local:
        raise UsageError(f"--no-token: only on a loopback address (127.0.0.1, ::1, localhost), not --host {opts.host}: "
                         "beyond it anyone who can reach the port could read every transcript")
    sock = _bind(opts.host, opts.port)
    port = sock.getsockname()[1]
    token = secrets.token_urlsafe(24)
    config = Config(home(), None if opts.all else os.getcwd(), token, local, port, url, open_reads=opts.no_token)
    shown = f"[{opts.host.strip('[]')}]" if ":" in opts.host else opts.host
    scope = "every folder" if opts.all else os.getcwd()
    who = ("(--no-token: anyone on this machine can read every transcript shown here; pausing, resuming or "
           "running a schedule still needs the token)" if opts.no_token else
           "(every page needs the token: open this address once and a cookie keeps it)")
    print(f"loopwright serve: sessions of {scope}; Ctrl-C stops it\n    http://{shown}:{port}/?token={token}\n{who}",
          file=sys.stderr, flush=True)
    if not local:
        print("loopwright serve: warning: bound beyond loopback without TLS; the token travels in clear text",
              file=sys.stderr, flush=True)
    server = uvicorn.Server(uvicorn.Config(build(config), host=opts.host, port=port, log_level="warning",
                                           timeout_graceful_shutdown=1))
    with sock:
        server.run(sockets=[sock])
    return 0


def _bind(host: str, port: int) -> socket.socket:
    """The listening socket, bound here so that `--port 0` learns its port before the address is
    printed, and a port in use is one clear error."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    try:
        return socket.create_server((host.strip("[]"), port), family=family)
    except OSError as exc:
        what = "in use" if exc.errno == errno.EADDRINUSE else (exc.strerror or str(exc))
        raise UsageError(f"--host {host} --port {port}: cannot listen there ({what}); "
                         "expected a free port (--port 0 takes one) on an address of this machine") from None


def _loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False
