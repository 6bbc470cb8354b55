"""The Starlette application of `loopwright serve`: routes, the per-launch token (needed for
every page unless `--no-token`), the checks that keep it local (Host, Origin, token on every
change) and the security headers."""

from __future__ import annotations

import asyncio
import hmac
import ipaddress
import os
import re
import time
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any, AsyncIterator
from urllib.parse import urlencode

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import (HTMLResponse, JSONResponse, PlainTextResponse, RedirectResponse, Response,
                                 StreamingResponse)
from starlette.routing import Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from ..stores.sessionlist import _locked
from .index import SessionIndex
from .pages import cost_page, raw_link, schedules_page, session_page, sessions_json, sessions_list, sessions_page
from .transcript import Renderer, lines, raw_line

CSP = ("default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
       "form-action 'self'; base-uri 'none'; frame-ancestors 'none'")
HEADERS = [(b"content-security-policy", CSP.encode()), (b"x-content-type-options", b"nosniff"),
           (b"referrer-policy", b"same-origin"), (b"x-frame-options", b"DENY"), (b"cache-control", b"no-store")]
STATIC = {"style.css": "text/css; charset=utf-8", "live.js": "text/javascript; charset=utf-8"}
COOKIE = "loopwright_token"
ITEMS = re.compile(r"/routines/[^/]+/items")  # checks a routine's own token, not the launch token
_SAFE_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")
POLL_S = 0.25
LIST_POLL_S = 1.0  # the list's rows are rendered again this often while a page follows them


@dataclass
class Config:
    root: Path
    cwd: str | None  # None: every project
    token: str
    local: bool  # bound to loopback: the Host must name it (a loopback address or localhost)
    port: int
    store: str = ""  # the store URL of the schedules and routine ledgers ('': the home's SQLite file)
    open_reads: bool = False  # `--no-token`: pages without the token (changes still need it)


def build(config: Config, index: SessionIndex | None = None) -> Starlette:
    if index is None:
        from .mirrored import session_index

        index = session_index(config, _stores(config) if config.store else None)
    def sessions(request: Request) -> Response:  # plain functions run in the thread pool
        return HTMLResponse(sessions_page(index, dict(request.query_params)))

    def sessions_api(request: Request) -> Response:
        index.refresh_soon()
        return JSONResponse(sessions_json(index, dict(request.query_params)))

    replays = Replays(config)

    def session(request: Request) -> Response:
        sid = request.path_params["sid"]
        path = _path(index, sid)
        if path is None:
            return PlainTextResponse("no such session", 404)
        shown = replays.section(sid, config.token if has_token(request, config.token) else None)
        return StreamingResponse(session_page(index, path, sid, shown), media_type="text/html; charset=utf-8")

    async def replay(request: Request) -> Response:
        return await replays.run(request, index)

    def raw(request: Request) -> Response:
        return _raw(request, index)

    async def events(request: Request) -> Response:
        return await _events(request, index)

    async def list_events(request: Request) -> Response:
        return StreamingResponse(_list_tail(request, index), media_type="text/event-stream",
                                 headers={"x-accel-buffering": "no"})

    def schedules(request: Request) -> Response:
        store, ledger = _schedule_store(config), _ledger(config)
        try:
            return HTMLResponse(schedules_page(store, config.token if has_token(request, config.token) else None,
                                              ledger))
        finally:
            store.close()
            ledger.close()

    async def act(request: Request) -> Response:
        return await _act(request, config)

    async def items(request: Request) -> Response:  # its own token: the routine's (web/items.py)
        from .items import post_items

        if not same_origin(request):
            return PlainTextResponse("forbidden: a cross-site request", 403)
        return await post_items(request, lambda: _ledger(config), config.cwd)

    def cost(request: Request) -> Response:
        ledger = _ledger(config)
        try:
            return HTMLResponse(cost_page(index, ledger.daily_costs()))
        finally:
            ledger.close()

    routes = [Route("/", sessions), Route("/api/sessions", sessions_api), Route("/s/{sid}", session), Route("/s/{sid}/raw", raw),
              Route("/s/{sid}/events", events), Route("/s/{sid}/replay", replay, methods=["POST"]), Route("/list/events", list_events),
              Route("/schedules", schedules), Route("/schedules/{sid}/{action}", act, methods=["POST"]),
              Route("/routines/{name}/items", items, methods=["POST"]),
              Route("/routines/{sid}/{action}", act, methods=["POST"]),
              Route("/cost", cost), Route("/static/{name}", _static)]
    app = Starlette(routes=routes)
    app.state.config = config
    return Guard(app, config)  # type: ignore[return-value]


class Replays:
    """The sessions' replays from their pages: the last report of each, and one replay at a time
    per session, started by a POST with the token from our own pages (it runs tools, if in a copy)."""

    def __init__(self, config: Config) -> None:
        self.config = config
        self.running: set[str] = set()
        self.problems: dict[str, str] = {}  # the last replay from the page that could not run, and why

    def section(self, sid: str, token: str | None) -> str:
        from ..replay.kept import last
        from .replayed import section

        problem = self.problems.get(sid, "")
        kept = None
        try:
            kept = last(self.config.root, sid)
        except ValueError as exc:
            problem = problem or str(exc)
        if sid in self.running:
            problem = "a replay of this session is running; reload the page when it is done"
        return section(kept, problem, sid, token)

    async def run(self, request: Request, index: SessionIndex) -> Response:
        from .replayed import replay

        form = await request.form()
        given = form.get("token") or request.headers.get("x-loopwright-token")
        if not _valid(given if isinstance(given, str) else None, self.config.token):
            return PlainTextResponse("forbidden: replaying needs the token loopwright serve printed", 403)
        if not same_origin(request):
            return PlainTextResponse("forbidden: a cross-site request", 403)
        sid = request.path_params["sid"]
        path = _path(index, sid)
        if path is None:
            return PlainTextResponse("no such session", 404)
        if sid in self.running:
            return PlainTextResponse("a replay of this session is already running", 409)
        cwd = _recorded_cwd(path)
        self.running.add(sid)
        try:
            if cwd is None:
                problem = f"the session's project folder is not on this machine: {path} names none that exists here"
            else:
                problem = await replay(self.config.root, sid, path, self.config.store, cwd)
        finally:
            self.running.discard(sid)
        if problem:
            self.problems[sid] = problem
        else:
            self.problems.pop(sid, None)
        return RedirectResponse(f"/s/{sid}#replay", 303)


def _recorded_cwd(path: Path) -> str | None:
    """The folder the session ran in (its first record's `cwd`), when it is on this machine."""
    import json

    try:
        with path.open("rb") as f:
            first = json.loads(f.readline() or b"{}")
    except (OSError, ValueError):
        return None
    cwd = first.get("cwd") if isinstance(first, dict) else None
    return cwd if isinstance(cwd, str) and os.path.isabs(cwd) and os.path.isdir(cwd) else None


def _valid(given: str | None, token: str) -> bool:
    return bool(given) and hmac.compare_digest(given.encode(), token.encode())  # type: ignore[union-attr]


def has_token(request: Request, token: str) -> bool:
    return _valid(request.cookies.get(COOKIE), token)


def _path(index: SessionIndex, sid: str) -> Path | None:
    if not _SAFE_ID.fullmatch(sid):
        return None
    path = index.path_of(sid)
    if path is None and index.refresh(force=True) >= 0:
        path = index.path_of(sid)
    return path


async def _events(request: Request, index: SessionIndex) -> Response:
    """Server-sent events: the records appended after `offset`, as HTML, until the session ends."""
    path = _path(index, request.path_params["sid"])
    if path is None:
        return PlainTextResponse("no such session", 404)
    last = request.headers.get("last-event-id") or ""
    offset, turn = (last.split(":") + ["0"])[:2] if ":" in last else (request.query_params.get("offset", "0"),
                                                                      request.query_params.get("turn", "0"))
    if not (str(offset).isdigit() and str(turn).isdigit()):
        return PlainTextResponse("bad offset", 400)
    renderer = Renderer(int(turn), raw_link(request.path_params["sid"]))
    return StreamingResponse(_tail(request, path, int(offset), renderer), media_type="text/event-stream",
                             headers={"x-accel-buffering": "no"})


def _raw(request: Request, index: SessionIndex) -> Response:
    """One whole line of a transcript (`at`: where it starts; `agent`: a subagent's sidechain),
    as plain text: what a page cut for display."""
    sid = request.path_params["sid"]
    path, agent, at = _path(index, sid), request.query_params.get("agent"), request.query_params.get("at", "0")
    if path is None:
        return PlainTextResponse("no such session", 404)
    if agent is not None:
        if not _SAFE_ID.fullmatch(agent):
            return PlainTextResponse("no such subagent", 404)
        path = path.with_suffix("") / "subagents" / f"agent-{agent}.jsonl"
    if not at.isdigit():
        return PlainTextResponse("bad at: expected the byte offset where a line starts", 400)
    try:
        body = raw_line(path, int(at))
    except OSError:
        return PlainTextResponse("no such subagent" if agent is not None else "no such session", 404)
    if body is None:
        return PlainTextResponse(f"no line starts at byte {at}", 404)
    return StreamingResponse(body, media_type="text/plain; charset=utf-8")


async def _tail(request: Request, path: Path, offset: int, renderer: Renderer) -> AsyncIterator[bytes]:
    quiet_since = time.monotonic()
    while not await request.is_disconnected():
        html = []
        for at, offset, record in lines(path, offset):
            html.append(renderer.record(record, at) if record is not None else "")
        if html:
            yield _sse("records", "".join(html), f"{offset}:{renderer.turn}")
            quiet_since = time.monotonic()
        elif not _locked(path):
            yield b"event: done\ndata: ended\n\n"
            return
        elif time.monotonic() - quiet_since > 15:
            yield b": still running\n\n"
            quiet_since = time.monotonic()
        await asyncio.sleep(POLL_S)


async def _list_tail(request: Request, index: SessionIndex) -> AsyncIterator[bytes]:
    """Server-sent events for the sessions list: its rows as HTML, first as they are, then each
    time they change (a new session, a turn taken, a session ended)."""
    from starlette.concurrency import run_in_threadpool

    params, sent, quiet_since = dict(request.query_params), None, time.monotonic()
    while not await request.is_disconnected():
        html = await run_in_threadpool(_list_now, index, params)
        if html != sent:
            yield _sse("rows", html)
            sent, quiet_since = html, time.monotonic()
        elif time.monotonic() - quiet_since > 15:
            yield b": still here\n\n"
            quiet_since = time.monotonic()
        await asyncio.sleep(LIST_POLL_S)


def _list_now(index: SessionIndex, params: dict[str, str]) -> str:
    index.refresh()  # at most once a `min_interval_s`, however many pages follow the list
    return sessions_list(index, params)


def _sse(event: str, html: str, event_id: str = "") -> bytes:
    data = html.replace("\r", "")
    return ((f"id: {event_id}\n" if event_id else "") + f"event: {event}\n" +
            "".join(f"data: {line}\n" for line in data.split("\n")) + "\n").encode()


def _stores(config: Config) -> Any:
    from ..stores import open_store

    return open_store(config.store, config.cwd or config.root, {"LOOPWRIGHT_HOME": str(config.root)})


def _schedule_store(config: Config) -> Any:
    return _stores(config).schedules()


async def _act(request: Request, config: Config) -> Response:
    """Pause, resume or run now: only with the token in the form (or header) and from our own pages."""
    form = await request.form()
    given = form.get("token") or request.headers.get("x-loopwright-token")
    if not _valid(given if isinstance(given, str) else None, config.token):
        return PlainTextResponse("forbidden: this action needs the token loopwright serve printed", 403)
    if not same_origin(request):
        return PlainTextResponse("forbidden: a cross-site request", 403)
    sid, action = request.path_params["sid"], request.path_params["action"]
    if action not in ("pause", "resume", "run"):
        return PlainTextResponse("no such action", 404)
    if request.url.path.startswith("/routines/"):
        return _routine_act(config, sid, action)
    store = _schedule_store(config)
    try:
        done = store.run_now(sid, time.time()) if action == "run" else store.set_paused(sid, action == "pause")
    finally:
        store.close()
    if not done:
        return PlainTextResponse("no such schedule (or it has finished)", 404)
    return RedirectResponse(f"/schedules#schedule-{sid}", 303)


def _ledger(config: Config) -> Any:
    return _stores(config).ledger()


def _routine_act(config: Config, anchor: str, action: str) -> Response:
    """Pause or resume a routine, named by its page anchor (a digest of its file's path)."""
    from .pages import _anchor

    ledger = _ledger(config)
    try:
        key = next((k for k in ledger.known() if _anchor(k) == anchor), None)
        if key is None or action == "run":
            return PlainTextResponse("no such routine (or no such action for a routine)", 404)
        ledger.set_paused(key, action == "pause")
    finally:
        ledger.close()
    return RedirectResponse(f"/schedules#routine-{anchor}", 303)


def same_origin(request: Request) -> bool:
    """The browser says where a request came from: Origin, when sent, must be this server, and
    Sec-Fetch-Site, when sent, must not be another site."""
    origin = request.headers.get("origin")
    if origin is not None and origin != f"{request.url.scheme}://{request.headers.get('host', '')}":
        return False
    return request.headers.get("sec-fetch-site", "same-origin") in ("same-origin", "none")


async def _static(request: Request) -> Response:
    name = request.path_params["name"]
    if name not in STATIC:  # a fixed list: no path from the request ever reaches the file system
        return PlainTextResponse("not found", 404)
    data = resources.files(__package__).joinpath("static", name).read_bytes()
    return Response(data, media_type=STATIC[name])


def loopback_host(host: str, port: int) -> bool:
    """Whether a Host header names this server on loopback: `localhost` or a loopback address
    (127.x.y.z, [::1]) with our port — never a name DNS could point here (DNS rebinding)."""
    name, given = host.lower(), ""
    if not name.endswith("]") and ":" in name:  # a port after the name ([::1] alone has none)
        name, _, given = name.rpartition(":")
    if given != str(port) and not (given == "" and port == 80):
        return False
    if name == "localhost":
        return True
    if name.startswith("[") and name.endswith("]"):
        name = name[1:-1]
    elif ":" in name:
        return False  # an IPv6 address is bracketed in a Host
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


class Guard:
    """Every request: the Host must be ours when bound to loopback (no DNS rebinding), the token
    is needed for everything (unless `--no-token` on loopback), `?token=` becomes a cookie
    (HttpOnly, SameSite=Strict), headers are set."""

    def __init__(self, app: ASGIApp, config: Config) -> None:
        self.app, self.config = app, config

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        request = Request(scope)
        refusal = self._refusal(request)
        if refusal is not None:
            return await self._send(refusal, scope, receive, send)
        given = request.query_params.get("token")
        if given is not None and request.method == "GET":
            if not _valid(given, self.config.token):
                return await self._send(PlainTextResponse("forbidden: wrong token", 403), scope, receive, send)
            kept = [(k, v) for k, v in request.query_params.multi_items() if k != "token"]
            target = request.url.path + ("?" + urlencode(kept) if kept else "")
            response = RedirectResponse(target, 303)
            response.set_cookie(COOKIE, self.config.token, httponly=True, samesite="strict")
            return await self._send(response, scope, receive, send)

        async def with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                message["headers"] = list(message.get("headers", [])) + HEADERS
            await send(message)

        await self.app(scope, receive, with_headers)

    def _refusal(self, request: Request) -> Response | None:
        if self.config.local and not loopback_host(request.headers.get("host", ""), self.config.port):
            return PlainTextResponse("forbidden: unknown Host (this server answers only on loopback)", 403)
        if not self.config.open_reads and not (ITEMS.fullmatch(request.url.path) or has_token(
                request, self.config.token) or _valid(request.query_params.get("token"), self.config.token) or _valid(
                request.headers.get("x-loopwright-token"), self.config.token)):
            return PlainTextResponse("forbidden: open the address with ?token=… that loopwright serve printed", 403)
        return None

    async def _send(self, response: Response, scope: Scope, receive: Receive, send: Send) -> None:
        response.headers.update({k.decode(): v.decode() for k, v in HEADERS})
        await response(scope, receive, send)
