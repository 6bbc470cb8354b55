"""The Anthropic adapter against a tiny stdlib fake of the Messages API (canned raw bytes per
request): event folding, headers, every status row, retry hints, SSE errors, cut streams,
transport failures, keep-alive, abandonment. Proves we work against any loopback fake."""

from __future__ import annotations

import collections
import gc
import json
import socket
import struct
import subprocess
import sys
import threading
import warnings
from collections.abc import Callable
from contextlib import aclosing
from dataclasses import dataclass
from email.utils import formatdate
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import anyio
import pytest

from loopwright.core.errors import ModelError, UsageError
from loopwright.testing import Simulator
from loopwright.providers.anthropic import (
    ERROR_CODE_KIND,
    STATUS_KIND,
    AnthropicModel,
    map_status_error,
    parse_retry_after,
    with_cache_breakpoints,
)
from loopwright.core.types import (
    BlockDelta,
    BlockStart,
    BlockStop,
    Message,
    ModelRequest,
    StreamDelta,
    StreamStart,
    StreamStop,
    Usage,
)


# Every test once on httpx and once on aiohttp (the `http_library` fixture in conftest.py).
pytestmark = pytest.mark.usefixtures("http_library")

# ---------------------------------------------------------------- the fake server

Reply = Callable[["_Handler"], None]


@dataclass
class Seen:
    method: str
    path: str
    headers: dict[str, str]
    body: bytes
    client_port: int

    @property
    def json(self) -> Any:
        return json.loads(self.body)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: "_Server"

    def log_message(self, *args: Any) -> None:
        pass

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("content-length") or 0))
        fake = self.server.fake
        fake.requests.append(
            Seen("POST", self.path, {k.lower(): v for k, v in self.headers.items()}, body, self.client_address[1])
        )
        reply = fake.replies.popleft() if fake.replies else respond(500, b"no reply scripted")
        reply(self)


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    fake: "FakeAPI"


class FakeAPI:
    """Serves scripted replies in order; records every request."""

    def __init__(self, *replies: Reply) -> None:
        self.replies: collections.deque[Reply] = collections.deque(replies)
        self.requests: list[Seen] = []
        self.client_closed = threading.Event()
        self.release = threading.Event()
        self._server = _Server(("127.0.0.1", 0), _Handler)
        self._server.fake = self
        self._thread = threading.Thread(target=self._server.serve_forever, args=(0.01,), daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def __enter__(self) -> "FakeAPI":
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release.set()
        self._server.shutdown()
        self._server.server_close()


def http_bytes(status: int, body: bytes, headers: dict[str, str] | None = None, *, length: bool = True) -> bytes:
    try:
        reason = HTTPStatus(status).phrase
    except ValueError:
        reason = "Whatever"
    head = {"request-id": "req_header_1", "content-type": "text/event-stream"}
    head.update(headers or {})
    if length:
        head["content-length"] = str(len(body))
    lines = [f"HTTP/1.1 {status} {reason}"] + [f"{k}: {v}" for k, v in head.items()]
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + body


def raw(data: bytes, *, close: bool = False) -> Reply:
    def reply(h: _Handler) -> None:
        h.wfile.write(data)
        h.wfile.flush()
        if close:
            h.close_connection = True

    return reply


def respond(status: int, body: bytes, headers: dict[str, str] | None = None) -> Reply:
    return raw(http_bytes(status, body, headers))


def reset() -> Reply:
    """Abort the connection with a TCP RST (SO_LINGER 0), before any response byte."""

    def reply(h: _Handler) -> None:
        h.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        h.connection.close()
        h.close_connection = True

    return reply


def hang_after(data: bytes) -> Reply:
    """Send `data`, then wait (bounded) until the client closes the connection."""

    def reply(h: _Handler) -> None:
        h.wfile.write(data)
        h.wfile.flush()
        h.connection.settimeout(10)
        try:
            while h.connection.recv(1024):
                pass
            h.server.fake.client_closed.set()
        except OSError:
            h.server.fake.client_closed.set()
        h.close_connection = True

    return reply


def silent() -> Reply:
    def reply(h: _Handler) -> None:
        h.server.fake.release.wait(10)
        h.close_connection = True

    return reply


def sse(*events: tuple[str, dict[str, Any]]) -> bytes:
    return b"".join(f"event: {name}\ndata: {json.dumps(data)}\n\n".encode() for name, data in events)


def stream_ok(*events: tuple[str, dict[str, Any]], headers: dict[str, str] | None = None) -> Reply:
    return respond(200, sse(*events), headers)


def error_body(kind: str, message: str, *, code: str | None = None, request_id: str | None = "req_body_1") -> bytes:
    error: dict[str, Any] = {"type": kind, "message": message}
    if code is not None:
        error["details"] = {"error_code": code}
    body: dict[str, Any] = {"type": "error", "error": error}
    if request_id:
        body["request_id"] = request_id
    return json.dumps(body).encode()


def status_error(status: int, kind: str, message: str = "boom", headers: dict[str, str] | None = None, **kw: Any) -> Reply:
    return respond(status, error_body(kind, message, **kw), {"content-type": "application/json", **(headers or {})})


def message_start(usage: dict[str, int] | None = None) -> tuple[str, dict[str, Any]]:
    return (
        "message_start",
        {
            "type": "message_start",
            "message": {
                "id": "msg_01",
                "type": "message",
                "role": "assistant",
                "model": "claude-sonnet-5",
                "content": [],
                "stop_reason": None,
                "stop_sequence": None,
                "usage": usage or {"input_tokens": 12, "output_tokens": 1},
            },
        },
    )


def block_start(index: int, block: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    return ("content_block_start", {"type": "content_block_start", "index": index, "content_block": block})


def block_delta(index: int, delta: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    return ("content_block_delta", {"type": "content_block_delta", "index": index, "delta": delta})


def block_stop(index: int) -> tuple[str, dict[str, Any]]:
    return ("content_block_stop", {"type": "content_block_stop", "index": index})


def message_delta(stop_reason: str, usage: dict[str, int] | None = None, **delta: Any) -> tuple[str, dict[str, Any]]:
    return (
        "message_delta",
        {
            "type": "message_delta",
            "delta": {"stop_reason": stop_reason, "stop_sequence": None, **delta},
            "usage": usage or {"output_tokens": 5},
        },
    )


MESSAGE_STOP = ("message_stop", {"type": "message_stop"})
PING = ("ping", {"type": "ping"})


def text_stream(text: str = "Hello") -> tuple[tuple[str, dict[str, Any]], ...]:
    return (
        message_start(),
        block_start(0, {"type": "text", "text": ""}),
        block_delta(0, {"type": "text_delta", "text": text}),
        block_stop(0),
        message_delta("end_turn"),
        MESSAGE_STOP,
    )


REQUEST = ModelRequest(model="claude-sonnet-5", messages=(Message.user("hi"),), max_tokens=64000, system="be brief")


async def collect(model: AnthropicModel, request: ModelRequest = REQUEST) -> list[Any]:
    try:
        return [event async for event in model.stream(request)]
    finally:
        await model.aclose()


async def failure(fake: FakeAPI, **kw: Any) -> ModelError:
    with pytest.raises(ModelError) as info:
        await collect(AnthropicModel(api_key="k", base_url=fake.base_url, **kw))
    return info.value


# ---------------------------------------------------------------- streams


@pytest.mark.anyio
async def test_text_stream_folds_into_events() -> None:
    events = (
        message_start({"input_tokens": 12, "output_tokens": 1, "cache_read_input_tokens": 100, "cache_creation_input_tokens": 7}),
        PING,
        block_start(0, {"type": "text", "text": ""}),
        block_delta(0, {"type": "text_delta", "text": "Hel"}),
        PING,
        block_delta(0, {"type": "text_delta", "text": "lo"}),
        block_stop(0),
        ("future_event", {"type": "future_event", "x": 1}),
        message_delta("end_turn", {"output_tokens": 9, "input_tokens": 12}),
        MESSAGE_STOP,
    )
    with FakeAPI(stream_ok(*events, headers={"request-id": "req_abc"})) as fake:
        got = await collect(AnthropicModel(api_key="k", base_url=fake.base_url))
    assert got == [
        StreamStart("msg_01", "claude-sonnet-5", Usage(12, 1, 7, 100), request_id="req_abc"),
        BlockStart(0, {"type": "text", "text": ""}),
        BlockDelta(0, {"type": "text_delta", "text": "Hel"}),
        BlockDelta(0, {"type": "text_delta", "text": "lo"}),
        BlockStop(0),
        StreamDelta("end_turn", {"output_tokens": 9, "input_tokens": 12}, None, None),
        StreamStop(),
    ]


@pytest.mark.anyio
async def test_tool_use_input_json_deltas() -> None:
    tool = {"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {}}
    events = (
        message_start(),
        block_start(0, tool),
        block_delta(0, {"type": "input_json_delta", "partial_json": ""}),
        block_delta(0, {"type": "input_json_delta", "partial_json": '{"location": "Pa'}),
        block_delta(0, {"type": "input_json_delta", "partial_json": 'ris"}'}),
        block_stop(0),
        message_delta("tool_use", {"output_tokens": 42}),
        MESSAGE_STOP,
    )
    with FakeAPI(stream_ok(*events)) as fake:
        got = await collect(AnthropicModel(api_key="k", base_url=fake.base_url))
    assert got[1] == BlockStart(0, tool)
    fragments = [e.delta["partial_json"] for e in got if isinstance(e, BlockDelta)]
    assert json.loads("".join(fragments)) == {"location": "Paris"}
    assert got[-2] == StreamDelta("tool_use", {"output_tokens": 42})


@pytest.mark.anyio
async def test_thinking_and_signature() -> None:
    events = (
        message_start(),
        block_start(0, {"type": "thinking", "thinking": "", "signature": ""}),
        block_delta(0, {"type": "thinking_delta", "thinking": "Let me think"}),
        block_delta(0, {"type": "signature_delta", "signature": "EqQBCgIYAhIM"}),
        block_stop(0),
        block_start(1, {"type": "text", "text": ""}),
        block_delta(1, {"type": "text_delta", "text": "42"}),
        block_stop(1),
        message_delta("end_turn"),
        MESSAGE_STOP,
    )
    with FakeAPI(stream_ok(*events)) as fake:
        got = await collect(AnthropicModel(api_key="k", base_url=fake.base_url))
    deltas = [(e.index, e.delta) for e in got if isinstance(e, BlockDelta)]
    assert deltas == [
        (0, {"type": "thinking_delta", "thinking": "Let me think"}),
        (0, {"type": "signature_delta", "signature": "EqQBCgIYAhIM"}),
        (1, {"type": "text_delta", "text": "42"}),
    ]
    assert [e.index for e in got if isinstance(e, BlockStop)] == [0, 1]


@pytest.mark.anyio
async def test_refusal_stop_details_and_stop_sequence() -> None:
    details = {"type": "refusal", "category": "cyber", "explanation": "no"}
    events = (message_start(), message_delta("refusal", {"output_tokens": 0}, stop_details=details), MESSAGE_STOP)
    with FakeAPI(stream_ok(*events)) as fake:
        got = await collect(AnthropicModel(api_key="k", base_url=fake.base_url))
    assert got[1] == StreamDelta("refusal", {"output_tokens": 0}, None, details)

    events = (message_start(), message_delta("stop_sequence", stop_sequence="END"), MESSAGE_STOP)
    with FakeAPI(stream_ok(*events)) as fake:
        got = await collect(AnthropicModel(api_key="k", base_url=fake.base_url))
    assert got[1].stop_sequence == "END" and got[1].stop_details is None


@pytest.mark.anyio
async def test_crlf_and_chunked_transfer() -> None:
    body = sse(*text_stream()).replace(b"\n", b"\r\n")
    chunked = b"".join(b"%x\r\n%s\r\n" % (len(body[i : i + 7]), body[i : i + 7]) for i in range(0, len(body), 7))
    reply = raw(http_bytes(200, chunked + b"0\r\n\r\n", {"transfer-encoding": "chunked"}, length=False))
    with FakeAPI(reply) as fake:
        got = await collect(AnthropicModel(api_key="k", base_url=fake.base_url))
    assert [type(e) for e in got] == [StreamStart, BlockStart, BlockDelta, BlockStop, StreamDelta, StreamStop]


# ---------------------------------------------------------------- what we send


@pytest.mark.anyio
async def test_headers_and_body_with_api_key() -> None:
    with FakeAPI(stream_ok(*text_stream())) as fake:
        await collect(AnthropicModel(api_key="sk-test", base_url=fake.base_url, default_headers={"anthropic-beta": "b1"}))
    seen = fake.requests[0]
    assert (seen.method, seen.path) == ("POST", "/v1/messages")
    assert seen.headers["x-api-key"] == "sk-test"
    assert "authorization" not in seen.headers
    assert seen.headers["anthropic-version"] == "2023-06-01"
    assert seen.headers["content-type"] == "application/json"
    assert seen.headers["accept"] == "text/event-stream"
    assert seen.headers["user-agent"].startswith("loopwright/")
    assert seen.headers["anthropic-beta"] == "b1"
    assert seen.json == with_cache_breakpoints(REQUEST.to_api(stream=True))
    assert seen.json["stream"] is True
    assert b": " not in seen.body  # compact separators


@pytest.mark.anyio
async def test_auth_token_sends_bearer() -> None:
    with FakeAPI(stream_ok(*text_stream())) as fake:
        await collect(AnthropicModel(auth_token="tok", base_url=fake.base_url))
    assert fake.requests[0].headers["authorization"] == "Bearer tok"
    assert "x-api-key" not in fake.requests[0].headers


@pytest.mark.anyio
@pytest.mark.parametrize("suffix", ["", "/"])
async def test_base_url_with_or_without_trailing_slash(suffix: str) -> None:
    with FakeAPI(stream_ok(*text_stream())) as fake:
        await collect(AnthropicModel(api_key="k", base_url=fake.base_url + suffix))
    assert fake.requests[0].path == "/v1/messages"


@pytest.mark.anyio
async def test_base_url_with_a_path_prefix() -> None:
    with FakeAPI(stream_ok(*text_stream())) as fake:
        await collect(AnthropicModel(api_key="k", base_url=fake.base_url + "/proxy/anthropic/"))
    assert fake.requests[0].path == "/proxy/anthropic/v1/messages"


@pytest.mark.anyio
async def test_keep_alive_reuses_one_connection() -> None:
    with FakeAPI(stream_ok(*text_stream()), stream_ok(*text_stream("again"))) as fake:
        model = AnthropicModel(api_key="k", base_url=fake.base_url)
        try:
            first = [e async for e in model.stream(REQUEST)]
            second = [e async for e in model.stream(REQUEST)]
        finally:
            await model.aclose()
    assert first[2].delta["text"] == "Hello" and second[2].delta["text"] == "again"
    assert len(fake.requests) == 2
    assert fake.requests[0].client_port == fake.requests[1].client_port


@pytest.mark.anyio
async def test_count_tokens() -> None:
    reply = respond(200, b'{"input_tokens": 1234}', {"content-type": "application/json"})
    request = ModelRequest(
        model="claude-sonnet-5", messages=(Message.user("hi"),), max_tokens=100, extra={"temperature": 0.5}
    )
    with FakeAPI(reply) as fake:
        model = AnthropicModel(api_key="k", base_url=fake.base_url)
        try:
            assert await model.count_tokens(request) == 1234
        finally:
            await model.aclose()
    seen = fake.requests[0]
    assert seen.path == "/v1/messages/count_tokens"
    assert seen.json == {"model": "claude-sonnet-5", "messages": [{"role": "user", "content": [{"type": "text", "text": "hi"}]}]}
    assert seen.headers["accept"] == "application/json"


@pytest.mark.anyio
async def test_count_tokens_error_is_mapped() -> None:
    with FakeAPI(status_error(404, "not_found_error", "model: nope")) as fake:
        model = AnthropicModel(api_key="k", base_url=fake.base_url)
        try:
            with pytest.raises(ModelError) as info:
                await model.count_tokens(REQUEST)
        finally:
            await model.aclose()
    assert info.value.kind == "not_found" and info.value.status == 404


def test_one_model_serves_successive_event_loops() -> None:
    """A sync wrapper runs one event loop per call; pooled connections must not leak across."""
    with FakeAPI(stream_ok(*text_stream("one")), stream_ok(*text_stream("two"))) as fake:
        model = AnthropicModel(api_key="k", base_url=fake.base_url)

        async def once() -> str:
            return "".join([e.delta["text"] async for e in model.stream(REQUEST) if isinstance(e, BlockDelta)])

        with warnings.catch_warnings():
            # the first loop's pooled socket can only be dropped, not closed, once its loop ended
            warnings.simplefilter("ignore", ResourceWarning)
            assert anyio.run(once) == "one"
            assert anyio.run(once) == "two"
            anyio.run(model.aclose)
            gc.collect()


@pytest.mark.anyio
async def test_lone_surrogate_in_content_is_replaced_not_fatal() -> None:
    request = ModelRequest(model="m", messages=(Message.user("bad \udcff byte"),), max_tokens=10)
    with FakeAPI(stream_ok(*text_stream())) as fake:
        await collect(AnthropicModel(api_key="k", base_url=fake.base_url), request)
    assert fake.requests[0].json["messages"][0]["content"][0]["text"] == "bad ? byte"


@pytest.mark.anyio
async def test_redirect_is_an_error_not_an_empty_stream() -> None:
    with FakeAPI(respond(307, b"", {"location": "http://elsewhere.invalid/"})) as fake:
        err = await failure(fake)
    assert err.status == 307 and err.kind == "invalid_request"


# ---------------------------------------------------------------- HTTP errors

# Every row of the status table, plus the range fallbacks; the body's error type is one we do
# not know, so the status alone decides.
STATUS_ROWS = [*STATUS_KIND.items(), (418, "invalid_request"), (451, "invalid_request"), (507, "server"), (599, "server")]


@pytest.mark.anyio
@pytest.mark.parametrize(("status", "kind"), STATUS_ROWS)
async def test_status_table_over_http(status: int, kind: str) -> None:
    with FakeAPI(status_error(status, "some_future_error", "went wrong")) as fake:
        err = await failure(fake)
    assert (err.kind, err.status, err.message) == (kind, status, "went wrong")
    assert err.error_type == "some_future_error"
    assert err.request_id == "req_header_1"  # the header wins over the body


def test_status_table_is_complete() -> None:
    assert set(STATUS_KIND) == {400, 401, 402, 403, 404, 408, 409, 413, 429, 500, 502, 503, 504, 529}


@pytest.mark.parametrize(
    ("status", "error_type", "kind"),
    [
        (400, "invalid_request_error", "invalid_request"),
        (401, "authentication_error", "authentication"),
        (402, "billing_error", "billing"),
        (403, "permission_error", "permission"),
        (404, "not_found_error", "not_found"),
        (404, "invalid_request_error", "not_found"),  # a generic type never overrides the status
        (413, "request_too_large", "invalid_request"),
        (429, "rate_limit_error", "rate_limit"),
        (500, "api_error", "server"),
        (503, "overloaded_error", "overloaded"),  # a specific type wins over the status
        (500, "rate_limit_error", "rate_limit"),
        (504, "timeout_error", "server"),
        (529, "overloaded_error", "overloaded"),
    ],
)
def test_error_type_overrides(status: int, error_type: str, kind: str) -> None:
    assert map_status_error(status, {}, error_body(error_type, "m")).kind == kind


@pytest.mark.parametrize("code", sorted(c for c, k in ERROR_CODE_KIND.items() if k == "spend_limit"))
def test_spend_limit_codes(code: str) -> None:
    err = map_status_error(429, {}, error_body("rate_limit_error", "monthly cap", code=code))
    assert err.kind == "spend_limit" and err.status == 429


def test_other_error_codes() -> None:
    assert map_status_error(429, {}, error_body("rate_limit_error", "ramp", code="ramp_limit_exceeded")).kind == "rate_limit"
    assert map_status_error(429, {}, error_body("rate_limit_error", "x", code="brand_new_code")).kind == "rate_limit"
    null_details = json.dumps({"type": "error", "error": {"type": "rate_limit_error", "message": "m", "details": None}})
    assert map_status_error(429, {}, null_details).kind == "rate_limit"


@pytest.mark.anyio
async def test_spend_limit_over_http() -> None:
    reply = status_error(429, "rate_limit_error", "You have reached your spend limit", code="enforced_spend_limit_reached")
    with FakeAPI(reply) as fake:
        err = await failure(fake)
    assert err.kind == "spend_limit"


@pytest.mark.anyio
async def test_prompt_too_long_over_http() -> None:
    reply = status_error(400, "invalid_request_error", "prompt is too long: 200082 tokens > 200000 maximum")
    with FakeAPI(reply) as fake:
        err = await failure(fake)
    assert err.kind == "prompt_too_long" and err.status == 400
    assert "200082" in err.message


def test_prompt_too_long_only_on_400() -> None:
    assert map_status_error(400, {}, error_body("invalid_request_error", "Prompt is too long")).kind == "prompt_too_long"
    assert map_status_error(413, {}, error_body("request_too_large", "prompt is too long")).kind == "invalid_request"
    assert map_status_error(400, {}, error_body("invalid_request_error", "messages.1: bad")).kind == "invalid_request"


def test_non_json_error_body() -> None:
    err = map_status_error(502, {}, b"<html><body>\n  Bad   gateway\n</body></html>")
    assert err.kind == "server" and err.error_type is None
    assert err.message == "HTTP 502: <html><body> Bad gateway </body></html>"
    assert map_status_error(503, {}, b"").message == "HTTP 503"


def test_request_id_from_body_when_no_header() -> None:
    assert map_status_error(500, {}, error_body("api_error", "m", request_id="req_b")).request_id == "req_b"
    assert map_status_error(500, {"request-id": "req_h"}, error_body("api_error", "m")).request_id == "req_h"


# ---------------------------------------------------------------- retry hints


@pytest.mark.anyio
async def test_retry_after_ms_wins_over_retry_after() -> None:
    reply = status_error(429, "rate_limit_error", headers={"retry-after-ms": "1500", "retry-after": "30"})
    with FakeAPI(reply) as fake:
        err = await failure(fake)
    assert err.retry_after == 1.5


@pytest.mark.anyio
async def test_retry_after_seconds_and_should_retry() -> None:
    reply = status_error(529, "overloaded_error", headers={"retry-after": "0.25", "x-should-retry": "false"})
    with FakeAPI(reply) as fake:
        err = await failure(fake)
    assert (err.kind, err.retry_after, err.should_retry) == ("overloaded", 0.25, False)


@pytest.mark.anyio
async def test_retry_after_http_date_over_http() -> None:
    reply = status_error(503, "api_error", headers={"retry-after": formatdate(4102444800, usegmt=True)})  # 2100-01-01
    with FakeAPI(reply) as fake:
        err = await failure(fake)
    assert err.retry_after is not None and err.retry_after > 365 * 86400


@pytest.mark.parametrize(
    ("headers", "expected"),
    [
        ({}, None),
        ({"retry-after": "7"}, 7.0),
        ({"retry-after": "0.05"}, 0.05),
        ({"retry-after-ms": "30"}, 0.03),
        ({"retry-after-ms": "30", "retry-after": "9"}, 0.03),
        ({"retry-after-ms": "junk", "retry-after": "9"}, 9.0),
        ({"retry-after": "-3"}, 0.0),
        ({"retry-after": "nan"}, None),
        ({"retry-after": "inf"}, None),
        ({"retry-after": "soon"}, None),
        ({"retry-after": "Wed, 21 Oct 2015 07:28:30 GMT"}, 30.0),  # now = 07:28:00
        ({"retry-after": "Wed, 21 Oct 2015 07:27:00 GMT"}, 0.0),  # already past
    ],
)
def test_parse_retry_after(headers: dict[str, str], expected: float | None) -> None:
    now = 1445412480.0  # Wed, 21 Oct 2015 07:28:00 GMT
    got = parse_retry_after(headers, now=now)
    if expected is None:
        assert got is None
    else:
        assert got == pytest.approx(expected)


@pytest.mark.parametrize(("value", "expected"), [("true", True), ("false", False), ("TRUE", True), ("maybe", None)])
def test_should_retry_header(value: str, expected: bool | None) -> None:
    assert map_status_error(500, {"x-should-retry": value}, b"").should_retry is expected


# ---------------------------------------------------------------- stream failures


@pytest.mark.anyio
async def test_sse_error_event() -> None:
    error = {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}
    with FakeAPI(stream_ok(message_start(), ("error", error), headers={"request-id": "req_s"})) as fake:
        model = AnthropicModel(api_key="k", base_url=fake.base_url)
        got: list[Any] = []
        with pytest.raises(ModelError) as info:
            async for event in model.stream(REQUEST):
                got.append(event)
        await model.aclose()
    assert [type(e) for e in got] == [StreamStart]
    err = info.value
    assert (err.kind, err.status, err.message, err.request_id, err.error_type) == (
        "overloaded", None, "Overloaded", "req_s", "overloaded_error"
    )


@pytest.mark.parametrize(
    ("error_type", "kind"),
    [("invalid_request_error", "invalid_request"), ("api_error", "server"), ("mystery_error", "server")],
)
def test_sse_error_kinds_without_status(error_type: str, kind: str) -> None:
    assert map_status_error(None, {}, {"type": "error", "error": {"type": error_type, "message": "m"}}).kind == kind


@pytest.mark.anyio
async def test_complete_body_without_message_stop_is_stream_incomplete() -> None:
    events = (message_start(), block_start(0, {"type": "text", "text": ""}), block_delta(0, {"type": "text_delta", "text": "Hi"}), block_stop(0))
    with FakeAPI(stream_ok(*events)) as fake:
        err = await failure(fake)
    assert err.kind == "stream_incomplete"


@pytest.mark.anyio
async def test_final_frame_without_blank_line_is_stream_incomplete() -> None:
    body = sse(*text_stream())[:-1]  # message_stop frame not closed
    with FakeAPI(respond(200, body)) as fake:
        err = await failure(fake)
    assert err.kind == "stream_incomplete"


@pytest.mark.anyio
async def test_connection_closed_mid_body_is_network() -> None:
    body = sse(message_start(), block_start(0, {"type": "text", "text": ""}))
    chunk = b"%x\r\n%s\r\n" % (len(body), body)
    reply = raw(http_bytes(200, chunk, {"transfer-encoding": "chunked"}, length=False), close=True)
    with FakeAPI(reply) as fake:
        err = await failure(fake)
    assert err.kind == "network"


@pytest.mark.anyio
async def test_malformed_event_data() -> None:
    with FakeAPI(respond(200, b"event: message_start\ndata: {not json\n\n")) as fake:
        err = await failure(fake)
    assert err.kind == "server" and "malformed message_start" in err.message


# ---------------------------------------------------------------- transport failures


@pytest.mark.anyio
async def test_connection_refused_is_unreachable_until_the_url_answered_then_network() -> None:
    from test_never_silent import closed_port  # a port no earlier test's simulator answered on

    port = closed_port()
    model = AnthropicModel(api_key="k", base_url=f"http://127.0.0.1:{port}")
    with pytest.raises(ModelError) as info:
        await collect(model)
    assert info.value.kind == "unreachable" and info.value.status is None
    assert f"127.0.0.1:{port}" in info.value.message and "refused" in info.value.message
    assert isinstance(info.value.__cause__, Exception)
    with Simulator([{"text": "hi"}], port=port) as sim:  # the same URL answers once ...
        await collect(model)
    assert sim.message_requests
    with pytest.raises(ModelError) as info:  # ... so a refusal now is an outage
        await collect(model)
    assert info.value.kind == "network" and info.value.status is None


@pytest.mark.anyio
async def test_connection_reset_is_network() -> None:
    with FakeAPI(reset()) as fake:
        err = await failure(fake)
    assert err.kind == "network"


@pytest.mark.anyio
async def test_read_timeout_is_network_timed_out() -> None:
    with FakeAPI(silent()) as fake:
        err = await failure(fake, timeout=0.2)
    assert err.kind == "network" and "timed out" in err.message


@pytest.mark.anyio
async def test_bad_base_url_is_usage_error() -> None:
    with pytest.raises(UsageError):
        await collect(AnthropicModel(api_key="k", base_url="ftp://example.invalid"))


# ---------------------------------------------------------------- abandonment and cancellation


def _open_stream_reply() -> Reply:
    body = sse(message_start(), block_start(0, {"type": "text", "text": ""}))
    return hang_after(http_bytes(200, b"%x\r\n%s\r\n" % (len(body), body), {"transfer-encoding": "chunked"}, length=False))


@pytest.mark.anyio
async def test_abandoned_stream_closes_the_response() -> None:
    with FakeAPI(_open_stream_reply()) as fake:
        model = AnthropicModel(api_key="k", base_url=fake.base_url)
        async with aclosing(model.stream(REQUEST)) as events:
            async for event in events:
                assert isinstance(event, StreamStart)
                break
        assert await anyio.to_thread.run_sync(fake.client_closed.wait, 10)
        await model.aclose()


@pytest.mark.anyio
async def test_cancelled_stream_closes_the_response_and_cancellation_propagates() -> None:
    with FakeAPI(_open_stream_reply()) as fake:
        model = AnthropicModel(api_key="k", base_url=fake.base_url)
        got: list[Any] = []
        with anyio.CancelScope() as scope:
            async for event in model.stream(REQUEST):  # a ModelError here would fail the test
                got.append(event)
                if len(got) == 2:
                    scope.cancel()
        assert scope.cancelled_caught
        assert [type(e) for e in got] == [StreamStart, BlockStart]
        assert await anyio.to_thread.run_sync(fake.client_closed.wait, 10)
        await model.aclose()


# ---------------------------------------------------------------- from_env and import


def test_from_env_with_key() -> None:
    model = AnthropicModel.from_env({"ANTHROPIC_API_KEY": "sk-1"})
    assert model._headers["x-api-key"] == "sk-1" and "authorization" not in model._headers
    assert model.base_url == "https://api.anthropic.com"
    assert "sk-1" not in repr(model)


def test_from_env_with_token_and_base_url() -> None:
    model = AnthropicModel.from_env({"ANTHROPIC_AUTH_TOKEN": "tok", "ANTHROPIC_BASE_URL": "http://127.0.0.1:9/"})
    assert model._headers["authorization"] == "Bearer tok" and "x-api-key" not in model._headers
    assert model.base_url == "http://127.0.0.1:9"


def test_from_env_with_neither() -> None:
    with pytest.raises(UsageError) as info:
        AnthropicModel.from_env({"ANTHROPIC_API_KEY": ""})
    text = str(info.value)
    assert "\n" not in text
    assert "ANTHROPIC_API_KEY" in text and "loopwright demo" in text
    assert info.value.exit_code == 2


def test_import_does_not_load_the_sdk() -> None:
    code = "import sys, loopwright.providers.anthropic; print('anthropic' in sys.modules, 'pydantic' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert out[0] == "False"


def test_implements_the_model_port() -> None:
    from loopwright.core.ports import Model

    assert isinstance(AnthropicModel(api_key="k"), Model)


# ---------------------------------------------------------------- the shipped simulator, when present


@pytest.mark.anyio
async def test_against_the_loopback_simulator() -> None:
    testing = pytest.importorskip("loopwright.testing")
    simulator_cls = getattr(testing, "Simulator", None)
    if simulator_cls is None:
        pytest.skip("loopwright.testing.Simulator not written yet")
    with simulator_cls([{"text": "hi"}]) as sim:
        got = await collect(AnthropicModel(api_key="k", base_url=sim.base_url))
    assert isinstance(got[0], StreamStart) and isinstance(got[-1], StreamStop)
    assert "".join(e.delta.get("text", "") for e in got if isinstance(e, BlockDelta)) == "hi"


SIMULATED_FAULTS = [
    ({"fault": {"status": 529, "retry_after": 2}}, "overloaded"),
    ({"fault": {"status": 429, "error_code": "enforced_spend_limit_reached"}}, "spend_limit"),
    ({"fault": {"sse_error": {"type": "overloaded_error", "message": "Overloaded"}, "after_blocks": 1}}, "overloaded"),
    ({"fault": {"cut": True, "after_blocks": 1}}, ("stream_incomplete", "network")),
    ({"fault": {"reset": True}}, "network"),
]


@pytest.mark.anyio
@pytest.mark.parametrize(("spec", "kind"), SIMULATED_FAULTS)
async def test_faults_from_the_loopback_simulator(spec: dict[str, Any], kind: str | tuple[str, ...]) -> None:
    testing = pytest.importorskip("loopwright.testing")
    if getattr(testing, "Simulator", None) is None:
        pytest.skip("loopwright.testing.Simulator not written yet")
    with testing.Simulator([spec]) as sim:
        with pytest.raises(ModelError) as info:
            await collect(AnthropicModel(api_key="k", base_url=sim.base_url))
    assert info.value.kind in ((kind,) if isinstance(kind, str) else kind)


@pytest.mark.anyio
async def test_tool_use_from_the_loopback_simulator() -> None:
    testing = pytest.importorskip("loopwright.testing")
    if getattr(testing, "Simulator", None) is None:
        pytest.skip("loopwright.testing.Simulator not written yet")
    with testing.Simulator([{"tool_use": {"name": "Read", "input": {"path": "a.txt"}}}]) as sim:
        got = await collect(AnthropicModel(api_key="k", base_url=sim.base_url))
    start = next(e for e in got if isinstance(e, BlockStart) and e.block["type"] == "tool_use")
    fragments = "".join(e.delta["partial_json"] for e in got if isinstance(e, BlockDelta) and e.index == start.index)
    assert json.loads(fragments) == {"path": "a.txt"}
    assert next(e for e in got if isinstance(e, StreamDelta)).stop_reason == "tool_use"
