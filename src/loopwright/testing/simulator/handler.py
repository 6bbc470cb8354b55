"""One HTTP/1.1 connection of the simulator, as an asyncio task: routing, auth, validation,
replies and faults. Speaks the bytes itself (chunked SSE, partial bodies, TCP resets) because
faults need that control; `http11` reads requests and frames responses.
"""

from __future__ import annotations

import asyncio
import json
import socket
import struct
import time
from typing import Any

from . import http11
from .matching import last_user_text
from .openai_validate import check_chat
from .openai_wire import (
    DONE_FRAME, NO_KEY_MESSAGE, anthropic_view, chat_error, chat_id, completion, completion_chunks, data_frame,
    fault_error,
)
from .record import RecordedRequest, Served
from .script import STATUS_OF_TYPE, Fault, Reply
from .validate import check_request
from .wire import (
    build_message,
    error_body,
    error_type_for,
    estimate_input_tokens,
    frame,
    honour_tool_choice,
    stream_events,
)

__all__ = ["Connection"]

_ROUTES = {
    "/v1/messages": "messages", "/v1/messages/count_tokens": "count_tokens", "/v1/chat/completions": "chat",
}
_SSE_HEADERS = {"content-type": "text/event-stream", "cache-control": "no-cache", "transfer-encoding": "chunked"}
_GONE = (OSError, asyncio.IncompleteReadError)  # the client hung up or reset


class Connection:
    """Serves the requests of one accepted connection, in order, until either side closes it."""

    def __init__(self, sim: Served, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.sim, self.reader, self.writer = sim, reader, writer
        self.close_connection = False
        self._started = False
        self._aborted = False

    async def serve(self) -> None:
        try:
            while not self.close_connection:
                try:
                    request = await http11.read_request(self.reader)
                except http11.BadRequest as exc:
                    return await self._bad_request(str(exc))
                if request is None:
                    return
                await self._one(request)
        except _GONE:
            pass
        finally:
            self._close()

    async def _one(self, request: http11.Request) -> None:
        self.command, self._started = request.method, False
        self.close_connection = not request.keep_alive
        if request.headers.get("expect", "").lower() == "100-continue":
            self.writer.write(b"HTTP/1.1 100 Continue\r\n\r\n")
        try:
            raw = await http11.read_body(self.reader, request.headers)
        except http11.BadRequest as exc:
            return await self._bad_request(str(exc))
        rec = self.sim._record(request.method, request.target, request.headers, raw)
        try:
            await self._dispatch(rec)
            if not self._aborted:
                await self.writer.drain()
            rec.finished = time.monotonic()
        except _GONE:
            self.close_connection = True  # the client went away mid-response
        except Exception as exc:  # a simulator bug: make the test fail loudly, not hang
            self.sim._failed(exc)
            if not self._started:
                message = f"simulator internal error: {exc!r}"
                self._send_json(rec, 500, error_body("api_error", message, rec.request_id), {"x-should-retry": "false"})
            self.close_connection = True
        finally:
            self.sim._answered(rec)

    async def _bad_request(self, reason: str) -> None:
        data = f"simulator: bad request: {reason}".encode()
        headers = {"content-type": "text/plain", "content-length": str(len(data)), "connection": "close"}
        self.writer.write(http11.head(400, headers) + data)
        self.close_connection = True

    def _close(self) -> None:
        if not self._aborted:
            self.writer.close()

    async def _delay(self, reply: Reply) -> None:
        """The model's thinking time: the simulator's own delay plus the reply's."""
        seconds = self.sim.delay + reply.delay
        if seconds:
            await asyncio.sleep(seconds)  # stop() cancels this task: nothing is answered then

    # --- request side ---------------------------------------------------------------------

    async def _dispatch(self, rec: RecordedRequest) -> None:
        endpoint = _ROUTES.get(rec.path)
        if endpoint is None or self.command != "POST":
            return self._error(rec, 404, "not_found_error", f"Not found: {self.command} {rec.path}")
        if endpoint == "chat":
            return await self._chat(rec)
        if not _authenticated(rec.headers):
            return self._error(rec, 401, "authentication_error", "x-api-key header is required")
        body = rec.body
        if not isinstance(body, dict):
            return self._error(rec, 400, "invalid_request_error", "The request body is not a valid JSON object")
        if self.sim.validate:
            problem = check_request(body, count_tokens=endpoint == "count_tokens")
            if problem:
                return self._error(rec, 400, "invalid_request_error", problem)
        if endpoint == "count_tokens":
            return self._send_json(rec, 200, {"input_tokens": estimate_input_tokens(body)})
        taken = self.sim._take(body, rec)
        if taken is None:
            return self._error(rec, 400, "invalid_request_error", _unmatched_message(body))
        reply = honour_tool_choice(taken, body)
        if isinstance(reply, str):
            return self._error(rec, 400, "invalid_request_error", reply)
        await self._delay(reply)
        return self._answer(rec, body, reply)

    # --- replies --------------------------------------------------------------------------

    def _answer(self, rec: RecordedRequest, body: dict[str, Any], reply: Reply) -> None:
        fault = reply.fault
        if fault is not None and fault.kind == "reset":
            return self._reset(rec)
        if fault is not None and fault.kind == "status":
            assert fault.status is not None
            error_type = fault.error_type or error_type_for(fault.status)
            headers = _fault_headers(fault) | reply.headers
            return self._error(rec, fault.status, error_type, fault.message, headers, fault.error_code)
        message, blocks = build_message(reply, body, self.sim._ids, self.sim._cache)
        if body.get("stream"):
            return self._stream(rec, message, blocks, reply)
        if fault is not None and fault.kind == "sse_error":
            # Without a stream there is no event to carry the error: send the status it implies.
            error_type = fault.error_type or "overloaded_error"
            status = STATUS_OF_TYPE.get(error_type, 500)
            return self._error(rec, status, error_type, fault.message, reply.headers)
        if fault is not None and fault.kind == "cut":
            return self._cut_json(rec, message, reply.headers)
        return self._send_json(rec, 200, message, reply.headers)

    def _stream(
        self, rec: RecordedRequest, message: dict[str, Any], blocks: list[dict[str, Any]], reply: Reply
    ) -> None:
        fault = reply.fault
        stop_after = fault.after_blocks if fault is not None and fault.kind in ("sse_error", "cut") else None
        error = None
        if fault is not None and fault.kind == "sse_error":
            error_type = fault.error_type or "overloaded_error"
            error = error_body(error_type, fault.message, rec.request_id)["error"]
        headers = {"content-type": "text/event-stream", "cache-control": "no-cache", "transfer-encoding": "chunked"}
        # A cut stream ends its body cleanly (the SDK then sees stop_reason None, as observed)
        # but the connection is not reused, as after a proxy drops the tail of a response.
        cut = fault is not None and fault.kind == "cut"
        self._begin(rec, 200, headers | reply.headers, close=cut)
        for name, data in stream_events(message, blocks, stop_after=stop_after, error=error):
            self._chunk(frame(name, data))
        self._chunk(b"")

    # --- OpenAI Chat Completions ----------------------------------------------------------

    async def _chat(self, rec: RecordedRequest) -> None:
        """POST /v1/chat/completions: the same script and faults, OpenAI's wire format."""
        if not _bearer(rec.headers):
            return self._chat_error(rec, 401, chat_error(401, NO_KEY_MESSAGE))
        body = rec.body
        if not isinstance(body, dict):
            return self._chat_error(rec, 400, chat_error(400, "We could not parse the JSON body of your request."))
        problem = check_chat(body) if self.sim.validate else None
        if problem is not None:
            return self._chat_error(rec, 400, problem)
        view = anthropic_view(body)
        taken = self.sim._take(view, rec)
        if taken is None:
            return self._chat_error(rec, 400, chat_error(400, _unmatched_message(view)))
        reply = honour_tool_choice(taken, view)
        if isinstance(reply, str):
            return self._chat_error(rec, 400, chat_error(400, reply))
        await self._delay(reply)
        return self._chat_answer(rec, body, view, reply)

    def _chat_answer(self, rec: RecordedRequest, body: dict[str, Any], view: dict[str, Any], reply: Reply) -> None:
        fault, model = reply.fault, view.get("model")
        if fault is not None and fault.kind == "reset":
            return self._reset(rec)
        if fault is not None and fault.kind == "status":
            assert fault.status is not None
            headers = _fault_headers(fault) | reply.headers
            return self._chat_error(rec, fault.status, fault_error(fault, fault.status, model), headers)
        message, blocks = build_message(reply, view, self.sim._ids)
        message["id"] = reply.id or chat_id(self.sim._ids)
        if body.get("stream"):
            return self._chat_stream(rec, body, message, blocks, reply)
        if fault is not None and fault.kind == "sse_error":
            status = _implied_status(fault)  # no stream to carry the error: its status instead
            return self._chat_error(rec, status, fault_error(fault, status, model), reply.headers)
        headers = {"x-request-id": rec.request_id} | reply.headers
        answer = completion(message, blocks, message["model"])
        if fault is not None and fault.kind == "cut":
            return self._cut_json(rec, answer, headers)
        return self._send_json(rec, 200, answer, headers)

    def _chat_stream(
        self, rec: RecordedRequest, body: dict[str, Any], message: dict[str, Any],
        blocks: list[dict[str, Any]], reply: Reply,
    ) -> None:
        fault = reply.fault
        kind = fault.kind if fault is not None else None
        stop_after = fault.after_blocks if fault is not None and kind in ("sse_error", "cut") else None
        error = None
        if fault is not None and kind == "sse_error":
            error = fault_error(fault, _implied_status(fault), message["model"])
        options = body.get("stream_options")
        include_usage = isinstance(options, dict) and bool(options.get("include_usage"))
        # Like a cut Messages stream: the body ends cleanly (no finish chunk, no [DONE]) and
        # the connection is not reused.
        headers = _SSE_HEADERS | {"x-request-id": rec.request_id} | reply.headers
        self._begin(rec, 200, headers, close=kind == "cut")
        chunks = completion_chunks(
            message, blocks, message["model"], include_usage=include_usage, stop_after=stop_after, error=error
        )
        for chunk in chunks:
            self._chunk(data_frame(chunk))
        if stop_after is None:
            self._chunk(DONE_FRAME)
        self._chunk(b"")

    def _chat_error(
        self, rec: RecordedRequest, status: int, body: dict[str, Any], headers: dict[str, str] | None = None
    ) -> None:
        self._send_json(rec, status, body, {"x-request-id": rec.request_id} | (headers or {}))

    def _chunk(self, data: bytes) -> None:
        # The transport sends at once while its buffer is empty: each frame goes out on its own.
        self.writer.write(http11.chunk(data))

    def _begin(self, rec: RecordedRequest, status: int, headers: dict[str, str], *, close: bool = False) -> None:
        self._started = True
        rec.response_status = status
        headers = {"request-id": rec.request_id} | headers
        if close or self.close_connection:
            headers["connection"] = "close"
            self.close_connection = True
        self.writer.write(http11.head(status, headers))

    def _send_json(self, rec: RecordedRequest, status: int, obj: Any, headers: dict[str, str] | None = None) -> None:
        data = json.dumps(obj, separators=(",", ":")).encode()
        base = {"content-type": "application/json", "content-length": str(len(data))}
        self._begin(rec, status, base | (headers or {}))
        self.writer.write(data)

    def _error(
        self,
        rec: RecordedRequest,
        status: int,
        error_type: str,
        message: str | None,
        headers: dict[str, str] | None = None,
        error_code: str | None = None,
    ) -> None:
        self._send_json(rec, status, error_body(error_type, message, rec.request_id, error_code), headers)

    def _cut_json(self, rec: RecordedRequest, message: dict[str, Any], headers: dict[str, str]) -> None:
        data = json.dumps(message).encode()
        base = {"content-type": "application/json", "content-length": str(len(data))}
        self._begin(rec, 200, base | headers, close=True)
        self.writer.write(data[: len(data) // 2])  # the client sees a body shorter than promised

    def _reset(self, rec: RecordedRequest) -> None:
        self._started = True
        rec.response_status = None
        sock = self.writer.get_extra_info("socket")
        # Linger 0 makes close() send RST instead of FIN: the client sees ECONNRESET.
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        self.writer.transport.abort()
        self._aborted = self.close_connection = True


def _authenticated(headers: dict[str, str]) -> bool:
    return bool(headers.get("x-api-key")) or _bearer(headers)


def _bearer(headers: dict[str, str]) -> bool:
    """OpenAI's auth: `Authorization: Bearer <key>` with a non-empty key."""
    bearer = headers.get("authorization", "")
    return bearer.lower().startswith("bearer ") and bool(bearer[7:].strip())


def _implied_status(fault: Fault) -> int:
    """The HTTP status a stream error type stands for when there is no stream to carry it."""
    return STATUS_OF_TYPE.get(fault.error_type or "overloaded_error", 500)


def _number(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else str(float(value))


def _fault_headers(fault: Fault) -> dict[str, str]:
    headers = {}
    if fault.retry_after is not None:
        headers["retry-after"] = _number(fault.retry_after)
    if fault.retry_after_ms is not None:
        headers["retry-after-ms"] = _number(fault.retry_after_ms)
    if fault.should_retry is not None:
        headers["x-should-retry"] = "true" if fault.should_retry else "false"
    return headers


def _unmatched_message(body: dict[str, Any]) -> str:
    tools = [t.get("name") for t in body.get("tools") or [] if isinstance(t, dict)]
    last_user = last_user_text(body)[:80]
    return (
        f"simulator: no rule matched this request (model={body.get('model')!r}, "
        f"stream={bool(body.get('stream'))}, tools={tools}, last user text={last_user!r})"
    )
