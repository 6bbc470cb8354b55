"""The HTTP/1.1 the simulator speaks, on asyncio streams: request heads and bodies in,
response heads, bodies and chunks out. Only what API clients send: no pipelining guarantees
beyond reading requests in order, no multipart, no trailers kept.
"""

from __future__ import annotations

import asyncio
import time
from email.utils import formatdate
from http import HTTPStatus

from ...core.fastclass import dataclass

__all__ = ["BadRequest", "Request", "chunk", "head", "read_body", "read_request"]

MAX_LINE = 1 << 16  # a request line or header line longer than this is refused
MAX_HEADERS = 200
_REASONS = {s.value: s.phrase for s in HTTPStatus} | {529: "Overloaded"}
_END = (b"\r\n", b"\n")


class BadRequest(Exception):
    """A request the simulator cannot parse: answered with a plain 400, then the connection closes."""


@dataclass
class Request:
    method: str
    target: str
    version: str
    headers: dict[str, str]  # lower-case names; a repeated header keeps its last value

    @property
    def keep_alive(self) -> bool:
        tokens = {t.strip().lower() for t in self.headers.get("connection", "").split(",")}
        if self.version == "HTTP/1.0":
            return "keep-alive" in tokens
        return "close" not in tokens


async def _line(reader: asyncio.StreamReader) -> bytes:
    try:
        return await reader.readline()
    except ValueError as exc:  # the StreamReader's limit: a line without an end in sight
        raise BadRequest(f"a line longer than {MAX_LINE} bytes") from exc


async def read_request(reader: asyncio.StreamReader) -> Request | None:
    """The next request's line and headers; None when the client closed between requests."""
    line = await _line(reader)
    while line in _END:  # blank lines before a request line are allowed (RFC 9112 §2.2)
        line = await _line(reader)
    if not line:
        return None
    parts = line.decode("latin-1").split()
    if len(parts) != 3 or not parts[2].startswith("HTTP/1."):
        raise BadRequest(f"bad request line {line[:80]!r}")
    headers: dict[str, str] = {}
    for _ in range(MAX_HEADERS):
        line = await _line(reader)
        if line in _END:
            return Request(method=parts[0], target=parts[1], version=parts[2], headers=headers)
        if not line:
            return None  # the client went away in the middle of its headers
        name, sep, value = line.decode("latin-1").partition(":")
        if not sep or not name.strip():
            raise BadRequest(f"bad header line {line[:80]!r}")
        headers[name.strip().lower()] = value.strip()
    raise BadRequest(f"more than {MAX_HEADERS} headers")


async def read_body(reader: asyncio.StreamReader, headers: dict[str, str]) -> bytes:
    """The body as sent with content-length or chunked transfer encoding (trailers dropped)."""
    if headers.get("transfer-encoding", "").lower() == "chunked":
        parts = []
        while True:
            size_line = (await _line(reader)).split(b";")[0].strip()
            try:
                size = int(size_line or b"0", 16)
            except ValueError:
                raise BadRequest(f"bad chunk size {size_line[:20]!r}") from None
            if size == 0:
                break
            parts.append(await reader.readexactly(size))
            await _line(reader)
        while (await _line(reader)) not in (*_END, b""):
            pass  # trailers
        return b"".join(parts)
    length = headers.get("content-length") or "0"
    if not length.isdigit():
        raise BadRequest(f"bad content-length {length[:20]!r}")
    return await reader.readexactly(int(length))


_date: tuple[int, str] = (0, "")  # (the second, its Date header value): formatted once a second, not per response


def _http_date() -> str:
    global _date
    now = int(time.time())
    if _date[0] != now:
        _date = (now, formatdate(now, usegmt=True))
    return _date[1]


def head(status: int, headers: dict[str, str]) -> bytes:
    """A response's status line and headers, ending with the blank line."""
    lines = [
        f"HTTP/1.1 {status} {_REASONS.get(status, '')}",
        "server: loopwright-simulator",
        f"date: {_http_date()}",
    ]
    lines += [f"{name}: {value}" for name, value in headers.items()]
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")


def chunk(data: bytes) -> bytes:
    """One chunk of a chunked body; an empty one ends the body."""
    return b"%x\r\n%s\r\n" % (len(data), data)
