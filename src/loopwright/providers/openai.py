"""OpenAI-compatible Chat Completions as a `Model` (OpenAI, vLLM, llama.cpp server, Ollama, …):
our requests become chat requests, the streamed chunks become the same stream events the
Messages API adapter yields, so the loop, its policy and its fold stay one. A lean httpx client,
like the Anthropic one: the `openai` SDK costs ~0.5 s to import (measured).

Model names: `openai:MODEL` (api.openai.com, or `OPENAI_BASE_URL`; key `OPENAI_API_KEY`) and
`openai-compatible:BASE_URL#MODEL` (any server; the key is optional)."""

from __future__ import annotations

import json
import os
from collections.abc import AsyncIterator, Mapping
from typing import Any

import httpx

from .. import __version__
from ..core import jsonsafe
from ..core.errors import ErrorKind, ModelError, UsageError
from ..core.types import (
    BlockDelta, BlockStart, BlockStop, Message, ModelRequest, OpaqueBlock, StreamDelta, StreamEvent, StreamStart,
    StreamStop, TextBlock, ThinkingBlock, ToolResultBlock, ToolUseBlock, Usage,
)
from .anthropic_errors import fallback_message, json_object, map_errors, parse_retry_after, status_kind
from .http import (
    LOOPBACK_KEY, Endpoint, checked_base_url, encode_json, endpoint_for, is_loopback,
)
from .http_library import http_client
from .registry import Provider
from .sse import SSEDecoder

DEFAULT_BASE_URL = "https://api.openai.com/v1"

# finish_reason -> our stop_reason (anthropic-api.md §8.2); the raw value is kept beside it.
FINISH_REASON = {"stop": "end_turn", "length": "max_tokens", "tool_calls": "tool_use",
                 "function_call": "tool_use", "content_filter": "refusal"}
# error.code values that say more than the HTTP status.
ERROR_CODE_KIND: dict[str, ErrorKind] = {"context_length_exceeded": "prompt_too_long", "insufficient_quota": "spend_limit",
                   "rate_limit_exceeded": "rate_limit", "invalid_api_key": "authentication",
                   "model_not_found": "not_found"}


def split_model(name: str, env: Mapping[str, str] = os.environ) -> tuple[str, str, str | None] | None:
    """(base URL, model id, API key) for an `openai:` / `openai-compatible:` name, else None."""
    if name.startswith("openai:"):
        key = env.get("OPENAI_API_KEY") or None
        if not key:
            raise UsageError(f"--model {name}: no OpenAI API key: set OPENAI_API_KEY")
        base = checked_base_url(env.get("OPENAI_BASE_URL") or DEFAULT_BASE_URL, "OPENAI_BASE_URL",
                                appends="/chat/completions")
        return base, name[len("openai:"):], key
    if name.startswith("openai-compatible:"):
        base, _, model = name[len("openai-compatible:"):].rpartition("#")
        if not base.startswith(("http://", "https://")) or not model:
            raise UsageError(f"--model {name!r}: expected openai-compatible:BASE_URL#MODEL, such as "
                             "openai-compatible:http://127.0.0.1:8080/v1#llama3")
        base = checked_base_url(base, f"the base URL of --model {name}", appends="/chat/completions")
        return base, model, env.get("OPENAI_API_KEY") or (LOOPBACK_KEY if is_loopback(base) else None)
    return None


class OpenAIChatModel:
    """One keep-alive client for one chat API. A request's model may be given by its loopwright
    name (`openai:gpt-…`, `openai-compatible:…#name`) or by the server's own id."""

    def __init__(self, *, base_url: str, api_key: str | None = None, timeout: float = 600.0,
                 connect_timeout: float = 10.0, official: bool = False, endpoint: Endpoint | None = None,
                 http: str | None = None) -> None:
        self.base_url = base_url.rstrip("/")
        self._endpoint = endpoint or endpoint_for(self.base_url, "OPENAI_BASE_URL", DEFAULT_BASE_URL, {}, {})
        self._url = f"{self.base_url}/chat/completions"
        self._official = official  # api.openai.com wants max_completion_tokens; others know max_tokens
        self._timeout = httpx.Timeout(timeout, connect=connect_timeout)
        self._headers = {"content-type": "application/json", "accept": "text/event-stream",
                         "user-agent": f"loopwright/{__version__}"}
        if api_key:
            self._headers["authorization"] = f"Bearer {api_key}"
        self._pool = http_client(self.base_url, self._timeout, http)

    @classmethod
    def for_name(cls, name: str, env: Mapping[str, str] = os.environ,
                 origins: Mapping[str, str] | None = None) -> "OpenAIChatModel":
        found = split_model(name, env)
        if found is None:
            raise UsageError(f"--model {name!r}: not an openai: or openai-compatible: model name")
        base, _, key = found
        official = name.startswith("openai:")
        if official:
            endpoint = endpoint_for(base.rstrip("/"), "OPENAI_BASE_URL", DEFAULT_BASE_URL, env, origins or {})
        else:
            endpoint = Endpoint(base.rstrip("/"), f"the model name {name}",
                                "check that the server is running (e.g. `ollama serve`, `llama-server`, vLLM) "
                                "and that the URL in the model name is right")
        return cls(base_url=base, api_key=key, official=official, endpoint=endpoint)

    def __repr__(self) -> str:  # never show credentials
        return f"OpenAIChatModel(base_url={self.base_url!r})"

    async def aclose(self) -> None:
        await self._pool.aclose()

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent]:
        body = encode_json(chat_body(request, model_id(request.model), official=self._official))
        with map_errors(self._endpoint):
            reply = await self._pool.post(self._url, body, self._headers)
        self._endpoint.answered()
        try:
            if not 200 <= reply.status < 300:
                with map_errors():
                    content = await reply.read()
                raise error_for(reply.status, reply.headers, content)
            fold = ChunkFold(reply.headers.get("x-request-id"))
            decoder = SSEDecoder()
            with map_errors():
                async for chunk in reply.chunks():
                    for _, data in decoder.feed(chunk):
                        for event in fold.feed(data):
                            yield event
            for event in fold.finish():
                yield event
        finally:
            await reply.close()


def model_id(name: str) -> str:
    """The server's id for a model name: without our `openai:` / `openai-compatible:…#` prefix."""
    if name.startswith("openai-compatible:"):
        return name.rpartition("#")[2]
    return name.removeprefix("openai:")


def error_for(status: int | None, headers: Mapping[str, str], body: Any) -> ModelError:
    """The `ModelError` for an HTTP error (or, status None, an error chunk in a stream)."""
    error = json_object(body).get("error")
    error = error if isinstance(error, dict) else {}
    code = error.get("code") if isinstance(error.get("code"), str) else None
    message = error.get("message") if isinstance(error.get("message"), str) else None
    kind = ERROR_CODE_KIND.get(code or "") or (status_kind(status) if status is not None else "server")
    return ModelError(kind, message or fallback_message(status, body), status=status,
                      retry_after=parse_retry_after(headers), request_id=headers.get("x-request-id"),
                      error_type=error.get("type") if isinstance(error.get("type"), str) else None)


# ---------------------------------------------------------------- requests


def chat_body(request: ModelRequest, model: str, *, official: bool) -> dict[str, Any]:
    messages: list[dict[str, Any]] = [{"role": "system", "content": request.system}] if request.system else []
    for message in request.messages:
        messages += _chat_messages(message)
    body: dict[str, Any] = {"model": model, "messages": messages, "stream": True,
                            "stream_options": {"include_usage": True},
                            ("max_completion_tokens" if official else "max_tokens"): request.max_tokens}
    wanted = (request.extra.get("output_config") or {}).get("format")
    if official and isinstance(wanted, dict) and wanted.get("type") == "json_schema":  # e.g. the goal's verdict
        body["response_format"] = {"type": "json_schema", "json_schema": {"name": "answer", "schema": wanted["schema"]}}
    if request.tools:
        body["tools"] = [{"type": "function", "function": {"name": t["name"], "description": t.get("description", ""),
                                                           "parameters": t.get("input_schema", {"type": "object"})}}
                         for t in request.tools]
    return body


def _chat_messages(message: Message) -> list[dict[str, Any]]:
    """One of our messages as chat messages: tool results become `tool` messages (they must
    directly follow the call), thinking is not sent, other text stays in order."""
    if message.role == "assistant":
        text = "".join(b.text for b in message.content if isinstance(b, TextBlock))
        calls = [{"id": b.id, "type": "function", "function": {"name": b.name, "arguments": json.dumps(b.input)}}
                 for b in message.content if isinstance(b, ToolUseBlock)]
        out: dict[str, Any] = {"role": "assistant", "content": text or None}
        return [out | {"tool_calls": calls}] if calls else [out]
    results = [{"role": "tool", "tool_call_id": b.tool_use_id, "content": _result_text(b)}
               for b in message.content if isinstance(b, ToolResultBlock)]
    texts = [b.text for b in message.content if isinstance(b, TextBlock)]
    others = [b for b in message.content if isinstance(b, (ThinkingBlock, OpaqueBlock))]
    if others and not texts and not results:
        return []
    return results + ([{"role": "user", "content": "\n\n".join(texts)}] if texts else [])


def _result_text(block: ToolResultBlock) -> str:
    text = block.text
    return f"Error: {text}" if block.is_error else text


# ---------------------------------------------------------------- streamed chunks


class ChunkFold:
    """Chat chunks in, our stream events out. Text streams as it comes; each tool call is sent
    whole at the end (chunks of parallel calls may interleave), the last one left open when the
    output was cut by the token limit, so the loop never runs it."""

    def __init__(self, request_id: str | None) -> None:
        self.request_id = request_id
        self.started = False
        self.text_index: int | None = None
        self.next_index = 0
        self.calls: dict[int, dict[str, Any]] = {}
        self.finish_reason: str | None = None
        self.usage: dict[str, Any] = {}
        self.refusal = ""
        self.done = False

    def feed(self, data: str) -> list[StreamEvent]:
        if data.strip() == "[DONE]":
            self.done = True
            return []
        try:
            chunk = jsonsafe.loads(data)
        except ValueError:
            raise ModelError("server", f"malformed chat chunk: {data[:200]!r}", request_id=self.request_id) from None
        if isinstance(chunk, dict) and "error" in chunk:
            raise error_for(None, {}, chunk)
        events: list[StreamEvent] = []
        if not self.started:
            self.started = True
            events.append(StreamStart(str(chunk.get("id", "")), str(chunk.get("model", "")), Usage(), self.request_id))
        if isinstance(chunk.get("usage"), dict):
            self.usage = chunk["usage"]
        for choice in chunk.get("choices") or []:
            events += self._choice(choice)
        return events

    def _choice(self, choice: dict[str, Any]) -> list[StreamEvent]:
        delta = choice.get("delta") or {}
        events: list[StreamEvent] = []
        text = (delta.get("content") or "") + (delta.get("refusal") or "")
        self.refusal += delta.get("refusal") or ""
        if text:
            if self.text_index is None:
                self.text_index, self.next_index = self.next_index, self.next_index + 1
                events.append(BlockStart(self.text_index, {"type": "text", "text": ""}))
            events.append(BlockDelta(self.text_index, {"type": "text_delta", "text": text}))
        for call in delta.get("tool_calls") or []:
            held = self.calls.setdefault(int(call.get("index", len(self.calls))), {"id": "", "name": "", "args": ""})
            function = call.get("function") or {}
            held["id"] = call.get("id") or held["id"]
            held["name"] = function.get("name") or held["name"]
            held["args"] += _arguments(function.get("arguments"))
        if choice.get("finish_reason"):
            self.finish_reason = choice["finish_reason"]
        return events

    def finish(self) -> list[StreamEvent]:
        if not self.started or self.finish_reason is None:
            raise ModelError("stream_incomplete", "the response stream ended before its finish_reason",
                             request_id=self.request_id)
        events: list[StreamEvent] = [BlockStop(self.text_index)] if self.text_index is not None else []
        cut = self.finish_reason == "length"
        for n, key in enumerate(sorted(self.calls)):
            held, index = self.calls[key], self.next_index + n
            events += [BlockStart(index, {"type": "tool_use", "id": held["id"] or f"call_{index}", "name": held["name"],
                                          "input": {}}),
                       BlockDelta(index, {"type": "input_json_delta", "partial_json": held["args"]})]
            if not (cut and n == len(self.calls) - 1):
                events.append(BlockStop(index))
        # A refusal message refuses whatever the finish reason says (anthropic-api.md §8.2).
        stop = "refusal" if self.refusal else FINISH_REASON.get(self.finish_reason, self.finish_reason)
        details = {"type": "refusal", "category": None, "explanation": self.refusal or None} if stop == "refusal" else None
        events += [StreamDelta(stop, _usage(self.usage), None, details), StreamStop()]
        return events


def _arguments(value: Any) -> str:
    """A tool call's arguments as text. The API sends a string; some servers send the object
    itself, which is written back as JSON (any other type too, so the loop can say what it was)."""
    if value is None:
        return ""
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def _usage(usage: Mapping[str, Any]) -> dict[str, Any]:
    prompt = int(usage.get("prompt_tokens") or 0)
    details = usage.get("prompt_tokens_details") or {}
    cached = int(details.get("cached_tokens") or 0) if isinstance(details, dict) else 0
    return {"input_tokens": prompt - cached, "output_tokens": int(usage.get("completion_tokens") or 0),
            "cache_read_input_tokens": cached, "cache_creation_input_tokens": 0}


def _base_url(name: str, env: Mapping[str, str]) -> str:
    """Names served by one base URL share one client (its connection pool)."""
    found = split_model(name, env)
    if found is None:
        raise UsageError(f"model {name!r}: not an openai: or openai-compatible: model name")
    return found[0]


# The providers (registry) of `openai:MODEL` and `openai-compatible:BASE_URL#MODEL`.
OPENAI = Provider(factory=OpenAIChatModel.for_name, system="openai", client_key=_base_url, model_id=model_id)
OPENAI_COMPATIBLE = OPENAI
