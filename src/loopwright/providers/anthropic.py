"""The default model adapter: a lean Anthropic Messages API client on httpx or aiohttp (never the SDK).
Wire events, HTTP statuses, error types and transport failures are normalised here, by tables.

Retries are not done here (the transport has `retries=0`): `policy.retry` decides on the
`ModelError` this module raises, using its `kind`, `retry_after` and `should_retry`.
"""

from __future__ import annotations

import json
import operator
import os
from collections.abc import AsyncIterator, Callable, Mapping
from typing import Any

import httpx

from .. import __version__
from ..core import jsonsafe
from ..core.errors import ModelError, UsageError
from ..core.types import (
    BlockDelta, BlockStart, BlockStop, Message, ModelRequest, StreamDelta, StreamEvent, StreamStart, StreamStop, Usage,
)  # fmt: skip

# The error tables are re-exported: they are part of this adapter's public face.
from .anthropic_errors import ERROR_CODE_KIND, STATUS_KIND, map_errors, map_status_error, parse_retry_after
from .http import (
    LOOPBACK_KEY, Endpoint, checked_base_url, encode_json, endpoint_for, is_loopback,
)
from .http_library import http_client
from ..core.types import compact_json
from .registry import Provider
from .sse import SSEDecoder

__all__ = ["ERROR_CODE_KIND", "STATUS_KIND", "AnthropicModel", "map_errors", "map_status_error", "parse_retry_after"]

DEFAULT_BASE_URL = "https://api.anthropic.com"
API_VERSION = "2023-06-01"

# ---------------------------------------------------------------- stream events

def _message_start(p: dict[str, Any], request_id: str | None) -> StreamEvent:
    message = p["message"]
    return StreamStart(
        id=str(message.get("id") or ""),
        model=str(message.get("model") or ""),
        usage=Usage.from_api(message.get("usage")),
        request_id=request_id,
    )


def _block_start(p: dict[str, Any], request_id: str | None) -> StreamEvent:
    return BlockStart(int(p["index"]), p["content_block"])


def _block_delta(p: dict[str, Any], request_id: str | None) -> StreamEvent:
    return BlockDelta(int(p["index"]), p["delta"])


def _block_stop(p: dict[str, Any], request_id: str | None) -> StreamEvent:
    return BlockStop(int(p["index"]))


def _message_delta(p: dict[str, Any], request_id: str | None) -> StreamEvent:
    delta = p.get("delta") or {}
    return StreamDelta(
        stop_reason=delta.get("stop_reason"),
        usage=p.get("usage") or {},
        stop_sequence=delta.get("stop_sequence"),
        stop_details=delta.get("stop_details"),
    )


def _message_stop(p: dict[str, Any], request_id: str | None) -> StreamEvent:
    return StreamStop()


def _error_event(p: dict[str, Any], request_id: str | None) -> StreamEvent:
    headers = {"request-id": request_id} if request_id else {}
    raise map_status_error(None, headers, p)


# SSE event name -> builder. `ping` and names not listed (future events) are skipped unparsed.
SSE_EVENTS: dict[str, Callable[[dict[str, Any], str | None], StreamEvent]] = {
    "message_start": _message_start,
    "content_block_start": _block_start,
    "content_block_delta": _block_delta,
    "content_block_stop": _block_stop,
    "message_delta": _message_delta,
    "message_stop": _message_stop,
    "error": _error_event,
}


# ---------------------------------------------------------------- the client

# Fields of a Messages request that count_tokens rejects (it counts input only).
_NOT_COUNTED = frozenset(
    {"max_tokens", "stream", "temperature", "top_p", "top_k", "stop_sequences", "metadata", "service_tier"}
)


class AnthropicModel:
    """The Anthropic Messages API as a `Model`. One keep-alive HTTP client, created on first use;
    close it with `aclose()`. `http="aiohttp"` carries the calls on aiohttp (else
    `LOOPWRIGHT_HTTP`, else httpx): less client CPU a call, for many loops in one process.
    Without key or token no auth header is sent (useful against a local fake); `from_env`
    insists on one."""

    def __init__(
        self,
        *,
        api_key: str | None = None,
        auth_token: str | None = None,
        base_url: str | None = None,
        timeout: float = 600.0,
        connect_timeout: float = 10.0,
        default_headers: Mapping[str, str] | None = None,
        endpoint: Endpoint | None = None,
        prompt_caching: bool = True,
        http: str | None = None,
    ) -> None:
        self.base_url = (base_url or DEFAULT_BASE_URL).rstrip("/")
        # where the URL came from, named when nothing answers there
        self._endpoint = endpoint or endpoint_for(self.base_url, "ANTHROPIC_BASE_URL", DEFAULT_BASE_URL, {}, {})
        self._messages_url = f"{self.base_url}/v1/messages"
        self._count_url = f"{self.base_url}/v1/messages/count_tokens"
        self._timeout = httpx.Timeout(timeout, connect=connect_timeout)
        headers = {
            "anthropic-version": API_VERSION,
            "content-type": "application/json",
            "user-agent": f"loopwright/{__version__}",
        }
        if api_key:
            headers["x-api-key"] = api_key
        if auth_token:
            headers["authorization"] = f"Bearer {auth_token}"
        if default_headers:
            headers.update({k.lower(): v for k, v in default_headers.items()})
        self._headers = headers
        self._stream_headers = {**headers, "accept": "text/event-stream"}
        self._json_headers = {**headers, "accept": "application/json"}
        self._pool = http_client(self.base_url, self._timeout, http)
        self.prompt_caching = prompt_caching
        self._fragments = Fragments()

    @classmethod
    def from_env(cls, env: Mapping[str, str] = os.environ, origins: Mapping[str, str] | None = None,
                 **kwargs: Any) -> "AnthropicModel":
        """Configured from `env`; `origins` names the settings file that set a variable, if one did."""
        api_key = env.get("ANTHROPIC_API_KEY") or None
        auth_token = env.get("ANTHROPIC_AUTH_TOKEN") or None
        base_url = checked_base_url(env.get("ANTHROPIC_BASE_URL") or DEFAULT_BASE_URL, "ANTHROPIC_BASE_URL",
                                    appends="/v1")
        if not api_key and not auth_token:
            if not is_loopback(base_url):
                raise UsageError(
                    "No Anthropic API key: set ANTHROPIC_API_KEY (export ANTHROPIC_API_KEY=sk-ant-...) "
                    "or ANTHROPIC_AUTH_TOKEN; `loopwright demo` runs offline without a key."
                )
            api_key = LOOPBACK_KEY  # an API on this machine (the simulator): no secret to send
        endpoint = endpoint_for(base_url, "ANTHROPIC_BASE_URL", DEFAULT_BASE_URL, env, origins or {})
        kwargs.setdefault("prompt_caching", env.get("DISABLE_PROMPT_CACHING", "").strip().lower() in ("", "0", "false"))
        return cls(api_key=api_key, auth_token=auth_token, base_url=base_url, endpoint=endpoint, **kwargs)

    def __repr__(self) -> str:  # never show credentials
        return f"AnthropicModel(base_url={self.base_url!r})"

    async def aclose(self) -> None:
        await self._pool.aclose()

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent]:
        """POST a streaming request and yield our events. Raises `ModelError` on every failure;
        closes the response however the iteration ends (finished, abandoned, cancelled)."""
        body = self._body(request)
        with map_errors(self._endpoint):
            reply = await self._pool.post(self._messages_url, body, self._stream_headers)
        self._endpoint.answered()
        try:
            if not 200 <= reply.status < 300:  # 4xx/5xx, and a redirect we do not follow
                with map_errors():
                    content = await reply.read()
                raise map_status_error(reply.status, reply.headers, content)
            request_id = reply.headers.get("request-id")
            decoder = SSEDecoder()
            stopped = False
            with map_errors():
                async for chunk in reply.chunks():
                    for name, data in decoder.feed(chunk):
                        build = SSE_EVENTS.get(name)
                        if build is None or stopped:
                            continue  # ping, future event types, anything after message_stop
                        event = _build(build, name, data, request_id)
                        stopped = type(event) is StreamStop
                        yield event
            if not stopped:
                raise ModelError(
                    "stream_incomplete",
                    "the response stream ended before message_stop",
                    request_id=request_id,
                )
        finally:
            await reply.close()

    def _body(self, request: ModelRequest) -> bytes:
        return request_body(request, caching=self.prompt_caching, fragments=self._fragments)

    async def count_tokens(self, request: ModelRequest) -> int:
        """Input tokens the request would use (POST /v1/messages/count_tokens; an estimate)."""
        body = {k: v for k, v in request.to_api(stream=False).items() if k not in _NOT_COUNTED}
        with map_errors(self._endpoint):
            reply = await self._pool.post(self._count_url, encode_json(body), self._json_headers)
        self._endpoint.answered()
        try:
            with map_errors():
                content = await reply.read()
        finally:
            await reply.close()
        if not 200 <= reply.status < 300:
            raise map_status_error(reply.status, reply.headers, content)
        try:
            return int(json.loads(content)["input_tokens"])
        except (ValueError, KeyError, TypeError) as exc:
            raise ModelError(
                "server", "malformed count_tokens response", status=reply.status,
                request_id=reply.headers.get("request-id"),
            ) from exc


# ---------------------------------------------------------------- the request body
# Keys of the body this module writes itself; an `extra` naming one of them overrides it, and
# such a body is then encoded whole.
_OWN_KEYS = frozenset({"model", "max_tokens", "messages", "system", "tools", "stream"})
_MEMO_MOST = 256  # fragments kept per client before they are dropped and encoded afresh
_HISTORIES_MOST = 64  # conversations whose sent messages are kept joined, per client


class Fragments:
    """Encoded parts a client sends again every turn: the system prompt (with its breakpoint) and
    each tool's definition, by value (a tool's schema by identity, kept alive here)."""

    def __init__(self) -> None:
        self.system: dict[str, bytes] = {}
        self.tools: dict[tuple[Any, ...], tuple[Any, bytes]] = {}
        self.histories: dict[int, tuple[tuple[Message, ...], bytes]] = {}

    def messages_json(self, messages: tuple[Message, ...]) -> bytes:
        """The messages' JSON joined by commas. A conversation sends its earlier messages again
        every turn: what was joined for its last request is kept (by its first message, held
        here), so a turn joins only the messages added since, instead of one call per message."""
        if not messages:
            return b""
        first = messages[0]
        held = self.histories.get(id(first))
        if held is not None and held[0][0] is first:
            sent, joined = held
            n = len(sent)
            # the same message objects (values), compared by identity at C speed
            if n <= len(messages) and all(map(operator.is_, messages, sent)):
                if n == len(messages):
                    return joined
                joined = b",".join([joined, *(m.api_json() for m in messages[n:])])
                self.histories[id(first)] = (messages, joined)
                return joined
        if len(self.histories) >= _HISTORIES_MOST:
            self.histories.clear()
        joined = b",".join([m.api_json() for m in messages])
        self.histories[id(first)] = (messages, joined)
        return joined

    def system_json(self, system: str) -> bytes:
        encoded = self.system.get(system)
        if encoded is None:
            if len(self.system) >= _MEMO_MOST:
                self.system.clear()
            encoded = self.system[system] = compact_json(_marked_system(system))
        return encoded

    def tool_json(self, spec: dict[str, Any]) -> bytes:
        name, description, schema = spec.get("name"), spec.get("description"), spec.get("input_schema")
        if len(spec) != 3 or not isinstance(name, str) or not isinstance(description, str) or schema is None:
            return compact_json(spec)  # not a plain tool_spec: encoded every time
        key = (name, description, id(schema), tuple(spec))
        held = self.tools.get(key)
        if held is None or held[0] is not schema:
            if len(self.tools) >= _MEMO_MOST:
                self.tools.clear()
            held = self.tools[key] = (schema, compact_json(spec))
        return held[1]


def request_body(request: ModelRequest, *, caching: bool, fragments: Fragments | None = None,
                 stream: bool = True) -> bytes:
    """The Messages request as sent: byte for byte `compact_json(with_cache_breakpoints(
    request.to_api()))` (without the breakpoints when not `caching`), put together from each
    message's JSON, encoded once (`Message.api_json`), and the system prompt's and tools' kept in
    `fragments` with the earlier messages' joined text, so a turn's cost does not grow with the
    conversation. Only the last message, which carries a breakpoint, is encoded afresh."""
    if not _OWN_KEYS.isdisjoint(request.extra):
        body = request.to_api(stream=stream)
        return compact_json(with_cache_breakpoints(body) if caching else body)
    fragments = fragments or Fragments()
    messages = request.messages
    if messages:
        last = messages[-1]
        tail = compact_json(_marked_last(last.to_api())) if caching else last.api_json()
        before = fragments.messages_json(tuple(messages[:-1]))
        listed = b"[" + before + b"," + tail + b"]" if before else b"[" + tail + b"]"
    else:
        listed = b"[]"
    parts = [b'"model":' + compact_json(request.model), b'"max_tokens":' + compact_json(request.max_tokens),
             b'"messages":' + listed]
    if request.system:
        system = request.system
        parts.append(b'"system":' + (fragments.system_json(system) if caching and isinstance(system, str)
                                     else compact_json(system)))
    if request.tools:
        parts.append(b'"tools":[' + b",".join(fragments.tool_json(t) for t in request.tools) + b"]")
    for key, value in request.extra.items():
        parts.append(compact_json(key) + b":" + compact_json(value))
    if stream:
        parts.append(b'"stream":true')
    return b"{" + b",".join(parts) + b"}"


# ---------------------------------------------------------------- prompt caching
EPHEMERAL = {"type": "ephemeral"}
# Blocks the API refuses a cache_control on (an empty text block is refused too).
_UNCACHEABLE = frozenset({"thinking", "redacted_thinking"})


def with_cache_breakpoints(body: dict[str, Any]) -> dict[str, Any]:
    """The body with two prompt-cache breakpoints, as Claude Code sends them: the end of the
    system prompt (which caches the tools before it too) and the last block of the last message,
    so each turn reads the prefix the turn before wrote. Nothing in `body` is changed in place; a
    breakpoint that would land on a block the API refuses to cache is left out."""
    out = dict(body)
    system = out.get("system")
    if isinstance(system, str) and system:
        out["system"] = _marked_system(system)
    messages = out.get("messages") or []
    if messages:
        out["messages"] = [*messages[:-1], _marked_last(messages[-1])]
    return out


def _marked_system(system: str) -> Any:
    return [{"type": "text", "text": system, "cache_control": EPHEMERAL}] if system else system


def _marked_last(message: dict[str, Any]) -> dict[str, Any]:
    """The last message of a request with its breakpoint (a copy; unchanged where none fits)."""
    last = dict(message)
    content = last.get("content")
    if isinstance(content, str) and content:
        last["content"] = [{"type": "text", "text": content, "cache_control": EPHEMERAL}]
    elif isinstance(content, list) and content and _cacheable(content[-1]):
        last["content"] = [*content[:-1], {**content[-1], "cache_control": EPHEMERAL}]
    return last


def _cacheable(block: Any) -> bool:
    if not isinstance(block, dict) or block.get("type") in _UNCACHEABLE or "cache_control" in block:
        return False
    return block.get("type") != "text" or bool(block.get("text"))


def _build(
    build: Callable[[dict[str, Any], str | None], StreamEvent], name: str, data: str, request_id: str | None
) -> StreamEvent:
    try:
        return build(jsonsafe.loads(data), request_id)
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise ModelError("server", f"malformed {name} event: {data[:200]!r}", request_id=request_id) from exc


def _for_name(name: str, env: Mapping[str, str], origins: Mapping[str, str]) -> AnthropicModel:
    return AnthropicModel.from_env(env, origins)  # one API for every name: the name goes in each request


# The default provider (registry): every model name without a prefix.
PROVIDER = Provider(factory=_for_name, system="anthropic")
