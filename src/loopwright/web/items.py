"""`POST /routines/{name}/items`: items for a routine whose source is `http: true`, queued in the
ledger as pending with their fields; the routine's next fire takes them as any source's. The
caller shows the routine's own token (`Authorization: Bearer …`, compared in constant time); the
body is one JSON item or a list, each with a string `id`. Answers: 202 with what was queued and
what was already there, 400 naming the bad item, 401 without the right token, 404 for a routine
that is not here or takes no items over HTTP."""

from __future__ import annotations

import hmac
import json
import os
import time
from pathlib import Path
from typing import Any, Callable

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

MAX_BODY = 1_000_000  # bytes
MAX_ITEMS = 1000  # a request
MAX_ID = 200  # characters
FOLDER = Path(".loopwright") / "routines"


class Refusal(Exception):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status, self.message = status, message


async def post_items(request: Request, open_ledger: Callable[[], Any], cwd: str | None) -> Response:
    name = request.path_params["name"]
    try:
        routine, key = await run_in_threadpool(_routine, open_ledger, cwd, name)
        await run_in_threadpool(_authorize, open_ledger, key, name, request.headers.get("authorization"))
        items = _items(await _body(request), routine)
        answer = await run_in_threadpool(_queue, open_ledger, key, items)
    except Refusal as no:
        headers = {"www-authenticate": 'Bearer realm="loopwright"'} if no.status == 401 else None
        return JSONResponse({"error": no.message}, no.status, headers=headers)
    queued = [i for i, status in answer.items() if status == "queued"]
    already = {i: status for i, status in answer.items() if status != "queued"}
    return JSONResponse({"routine": name, "queued": queued, "already": already,
                         "already_done": [i for i, status in already.items() if status == "done"]}, 202)


def _routine(open_ledger: Callable[[], Any], cwd: str | None, name: str) -> tuple[Any, str]:
    """The routine named in the address: its file in the served folder (with `serve --all`, the
    one `http:` routine of that name any project has shown), read and checked."""
    import yaml

    from ..proactive.routine import NAME, RoutineError, parse_routine

    missing = Refusal(404, f"no routine {name!r} here: expected a file {FOLDER / (name + '.yaml')} "
                           "in the folder `loopwright serve` was started in")
    if not NAME.fullmatch(name):
        raise missing
    if cwd is not None:
        paths = [Path(cwd) / FOLDER / f"{name}.yaml"]
    else:
        ledger = open_ledger()
        try:
            paths = [Path(k) for k in ledger.token_keys() if Path(k).stem == name]
        finally:
            ledger.close()
    paths = [p for p in paths if p.is_file()]
    if len(paths) > 1:
        raise Refusal(409, f"several projects have an `http:` routine {name!r}; run `loopwright serve` in the "
                           "project's folder to POST to one of them")
    if not paths:
        raise missing
    try:
        routine = parse_routine(name, str(paths[0]), yaml.safe_load(paths[0].read_text(encoding="utf-8")))
    except (OSError, UnicodeDecodeError, yaml.YAMLError, RoutineError):
        raise Refusal(409, f"routine {name!r} cannot take items now: its file is invalid "
                           f"(`loopwright routine show {name}` says why)") from None
    if routine.source_kind != "http":
        raise Refusal(404, f"routine {name!r} takes its items from its `{routine.source_kind}:` source, not over "
                           "HTTP (its file needs `source: {http: true}`)")
    return routine, os.path.abspath(routine.path)


def _authorize(open_ledger: Callable[[], Any], key: str, name: str, header: str | None) -> None:
    ledger = open_ledger()
    try:
        token = ledger.token(key)
    finally:
        ledger.close()
    show = f"`loopwright routine show {name}` shows it"
    if token is None:
        raise Refusal(401, f"routine {name!r} has no token yet: `loopwright routine show {name}` makes one and "
                           "shows it")
    scheme, _, given = (header or "").strip().partition(" ")
    if scheme.lower() != "bearer" or not given.strip():
        raise Refusal(401, f"expected the header `Authorization: Bearer <token>` with routine {name!r}'s token ({show})")
    if not hmac.compare_digest(given.strip().encode(), token.encode()):
        raise Refusal(401, f"wrong token for routine {name!r} ({show})")


async def _body(request: Request) -> Any:
    size = request.headers.get("content-length", "")
    if size.isdigit() and int(size) > MAX_BODY:
        raise Refusal(413, f"the body is {int(size)} bytes: expected at most {MAX_BODY}")
    data = bytearray()
    async for chunk in request.stream():
        data += chunk
        if len(data) > MAX_BODY:
            raise Refusal(413, f"the body is over {MAX_BODY} bytes: expected at most {MAX_BODY}")
    if not data.strip():
        raise Refusal(400, 'the body is empty: expected one JSON item such as {"id": "r1"}, or a list of them')
    try:
        return json.loads(bytes(data))
    except (ValueError, UnicodeDecodeError) as exc:
        raise Refusal(400, f"the body is not JSON ({exc}): expected one item such as {{\"id\": \"r1\"}}, "
                           "or a list of them") from None


def _items(body: Any, routine: Any) -> list[tuple[str, str]]:
    """(id, fields as JSON) for each item; the first bad one refuses the whole request."""
    from ..proactive.routine import placeholders

    many = isinstance(body, list)
    given = body if many else [body]
    if not given:
        raise Refusal(400, "the list is empty: expected at least one item")
    if len(given) > MAX_ITEMS:
        raise Refusal(400, f"{len(given)} items: expected at most {MAX_ITEMS} in one request")
    needed = [f for f in placeholders(routine.template) if f != "id"]
    what = "goal" if routine.goal else "prompt"
    out: list[tuple[str, str]] = []
    seen: set[str] = set()
    for n, item in enumerate(given, 1):
        where = f"item {n}" if many else "the item"
        if not isinstance(item, dict):
            raise Refusal(400, f"{where}: expected a JSON object with a string `id`, got {type(item).__name__}")
        item_id = item.get("id")
        if not isinstance(item_id, str) or not item_id.strip() or len(item_id) > MAX_ID or not item_id.isprintable():
            raise Refusal(400, f"{where}: `id`: expected a non-empty string of at most {MAX_ID} printable "
                               f"characters, got {json.dumps(item_id)[:80] if 'id' in item else 'no id'}")
        where = f"{where} (id {item_id!r})"
        if item_id in seen:
            raise Refusal(400, f"{where}: the id appears twice in this request: expected each id once")
        missing = [f for f in needed if f not in item]
        if missing:
            raise Refusal(400, f"{where}: no field {', '.join(missing)}: the routine's {what} fills in "
                               + ", ".join("{" + f + "}" for f in missing))
        seen.add(item_id)
        out.append((item_id, json.dumps(item, ensure_ascii=False)))
    return out


def _queue(open_ledger: Callable[[], Any], key: str, items: list[tuple[str, str]]) -> dict[str, str]:
    ledger = open_ledger()
    try:
        return ledger.queue(key, items, time.time())
    finally:
        ledger.close()
