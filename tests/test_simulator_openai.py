"""The simulator's Chat Completions endpoint: the official `openai` SDK, strict or not, accepts what
it sends, from the same script rules, replies and faults as the Messages endpoint."""

from __future__ import annotations

import atexit
import json

import openai
import pytest

from loopwright.testing import Simulator
from sdkclients import HTTP

MODEL = "gpt-sim"
ASK = {"model": MODEL, "messages": [{"role": "user", "content": "hi"}]}
HELLO = "Hello there, this is a simulated chat answer."
READ = {"name": "Read", "input": {"file_path": "a.txt", "limit": 10}}
TOOLS = [{"type": "function", "function": {"name": "Read", "parameters": {"type": "object"}}}]

SDK_HTTP = openai.DefaultHttpxClient()
atexit.register(SDK_HTTP.close)


def client(sim: Simulator, *, strict: bool = True, **kw: object) -> openai.OpenAI:
    kw.setdefault("max_retries", 0)
    return openai.OpenAI(
        base_url=f"{sim.base_url}/v1", api_key="sk-test", http_client=SDK_HTTP,
        _strict_response_validation=strict, **kw,
    )


def create(sim: Simulator, **ask: object) -> openai.types.chat.ChatCompletion:
    return client(sim).chat.completions.create(**(ASK | ask))


def chunks(sim: Simulator, **ask: object) -> list[openai.types.chat.ChatCompletionChunk]:
    return list(client(sim).chat.completions.create(**(ASK | {"stream": True} | ask)))


def content_of(stream: list[openai.types.chat.ChatCompletionChunk]) -> list[str]:
    return [c.choices[0].delta.content for c in stream if c.choices and c.choices[0].delta.content]


def calls_of(stream: list[openai.types.chat.ChatCompletionChunk]) -> dict[int, dict[str, str]]:
    """Tool calls reassembled from their deltas, by index."""
    calls: dict[int, dict[str, str]] = {}
    for chunk in stream:
        for delta in (chunk.choices[0].delta.tool_calls or []) if chunk.choices else []:
            call = calls.setdefault(delta.index, {"id": "", "name": "", "arguments": ""})
            call["id"] += delta.id or ""
            call["name"] += (delta.function and delta.function.name) or ""
            call["arguments"] += (delta.function and delta.function.arguments) or ""
    return calls


def raw_frames(sim: Simulator, **ask: object) -> list[str]:
    """The `data:` payloads of a stream as sent, parsed by hand."""
    response = HTTP.post(f"{sim.base_url}/v1/chat/completions", json=ASK | {"stream": True} | ask,
                         headers={"authorization": "Bearer k"})
    assert response.headers["content-type"] == "text/event-stream"
    frames = [f for f in response.text.split("\n\n") if f]
    assert all(f.startswith("data: ") and "\n" not in f for f in frames)  # no `event:` lines
    return [f.removeprefix("data: ") for f in frames]


# --- replies ----------------------------------------------------------------------------------


@pytest.mark.parametrize("strict", [True, False], ids=["strict", "lenient"])
def test_non_streaming_text(strict: bool) -> None:
    with Simulator([{"text": HELLO}]) as sim:
        answer = client(sim, strict=strict).chat.completions.create(**ASK)
        (rec,) = sim.chat_requests
    assert answer.object == "chat.completion" and answer.id == "chatcmpl-sim-0001" and answer.model == MODEL
    choice = answer.choices[0]
    assert (choice.message.role, choice.message.content, choice.finish_reason) == ("assistant", HELLO, "stop")
    assert choice.message.tool_calls is None and isinstance(answer.created, int)
    assert rec.response_status == 200 and rec.body == ASK


def test_streaming_text_arrives_in_several_deltas() -> None:
    with Simulator([{"text": HELLO}, {"text": HELLO}]) as sim:
        stream = chunks(sim)
        frames = raw_frames(sim)
    pieces = content_of(stream)
    assert len(pieces) > 1 and "".join(pieces) == HELLO
    assert stream[0].choices[0].delta.role == "assistant"
    assert {c.object for c in stream} == {"chat.completion.chunk"} and len({c.id for c in stream}) == 1
    assert stream[-1].choices[0].finish_reason == "stop"
    assert all(c.choices[0].finish_reason is None for c in stream[:-1])
    assert frames[-1] == "[DONE]" and "usage" not in json.loads(frames[0])


def test_a_tool_call_streams_its_arguments_in_fragments() -> None:
    with Simulator([{"tool_use": READ}]) as sim:
        stream = chunks(sim, tools=TOOLS)
    (call,) = calls_of(stream).values()
    assert call["name"] == "Read" and call["id"] and json.loads(call["arguments"]) == READ["input"]
    heads = [c.choices[0].delta.tool_calls[0] for c in stream if c.choices and c.choices[0].delta.tool_calls]
    assert heads[0].type == "function" and heads[0].function.arguments == "" and len(heads) > 2
    assert all(h.id is None and h.function.name is None for h in heads[1:])
    assert stream[-1].choices[0].finish_reason == "tool_calls"


def test_a_tool_call_in_a_non_streaming_answer() -> None:
    with Simulator([{"tool_use": dict(READ, id="call_7")}]) as sim:
        answer = create(sim, tools=TOOLS)
    message = answer.choices[0].message
    (call,) = message.tool_calls
    assert (call.id, call.type, call.function.name) == ("call_7", "function", "Read")
    assert json.loads(call.function.arguments) == READ["input"] and message.content is None
    assert answer.choices[0].finish_reason == "tool_calls"


@pytest.mark.parametrize("stream", [True, False], ids=["stream", "json"])
def test_two_tool_calls_in_one_reply(stream: bool) -> None:
    reply = {"text": "Reading both.", "tool_use": [READ, {"name": "Bash", "input": {"command": "ls"}}]}
    with Simulator([reply]) as sim:
        if stream:
            got = chunks(sim, tools=TOOLS)
            text, calls = "".join(content_of(got)), list(calls_of(got).values())
        else:
            message = create(sim, tools=TOOLS).choices[0].message
            text = message.content
            calls = [{"id": c.id, "name": c.function.name, "arguments": c.function.arguments}
                     for c in message.tool_calls]
    assert text == "Reading both." and [c["name"] for c in calls] == ["Read", "Bash"]
    assert json.loads(calls[1]["arguments"]) == {"command": "ls"} and calls[0]["id"] != calls[1]["id"]


def test_a_truncated_tool_input_stays_truncated() -> None:
    cut = {"content": [{"type": "tool_use", "name": "Read", "partial_json": '{"file_pa'}], "stop_reason": "max_tokens"}
    with Simulator([cut, cut]) as sim:
        streamed = calls_of(chunks(sim, tools=TOOLS))[0]["arguments"]
        answer = create(sim, tools=TOOLS)
    assert streamed == answer.choices[0].message.tool_calls[0].function.arguments == '{"file_pa'
    assert answer.choices[0].finish_reason == "length"


@pytest.mark.parametrize(
    ("stop_reason", "finish"),
    [("end_turn", "stop"), ("stop_sequence", "stop"), ("pause_turn", "stop"), ("max_tokens", "length"),
     ("model_context_window_exceeded", "length"), ("tool_use", "tool_calls"), ("refusal", "content_filter")],
)
@pytest.mark.parametrize("stream", [True, False], ids=["stream", "json"])
def test_every_stop_reason_maps_to_a_finish_reason(stop_reason: str, finish: str, stream: bool) -> None:
    reply = {"text": "some words", "stop_reason": stop_reason}
    with Simulator([reply]) as sim:
        got = chunks(sim)[-1].choices[0].finish_reason if stream else create(sim).choices[0].finish_reason
    assert got == finish


def test_a_refusal_is_sent_as_refusal_text() -> None:
    reply = {"text": "I can't help with that.", "stop_reason": "refusal"}
    with Simulator([reply, reply]) as sim:
        message = create(sim).choices[0].message
        stream = chunks(sim)
    assert message.refusal == "I can't help with that." and message.content is None
    refused = "".join(c.choices[0].delta.refusal or "" for c in stream)
    assert refused == "I can't help with that." and content_of(stream) == []


def test_usage_arrives_in_a_final_chunk_without_choices() -> None:
    usage = {"input_tokens": 100, "output_tokens": 7, "cache_read_input_tokens": 30, "cache_creation_input_tokens": 5}
    with Simulator([{"text": HELLO, "usage": usage}, {"text": HELLO, "usage": usage}]) as sim:
        stream = chunks(sim, stream_options={"include_usage": True})
        answer = create(sim)
    last = stream[-1]
    assert last.choices == [] and all(c.usage is None for c in stream[:-1])
    assert stream[-2].choices[0].finish_reason == "stop"
    for got in (last.usage, answer.usage):
        assert (got.prompt_tokens, got.completion_tokens, got.total_tokens) == (135, 7, 142)
        assert got.prompt_tokens_details.cached_tokens == 30


def test_default_usage_is_estimated_from_the_request() -> None:
    with Simulator([{"text": HELLO}]) as sim:
        usage = create(sim).usage
    assert usage.prompt_tokens >= 1 and usage.completion_tokens == len(HELLO) // 4 + 1


# --- rule matching and recording --------------------------------------------------------------


def test_rules_match_on_the_chat_body() -> None:
    script = {"rules": [
        {"match": {"tools_present": "Read"}, "responses": [{"text": "tools"}]},
        {"match": {"system_contains": "be brief"}, "responses": [{"text": "system"}]},
        {"match": {"last_user_contains": "file body"}, "responses": [{"text": "tool result"}]},
        {"match": {"has_tools": False, "model": MODEL, "stream": False}, "responses": [{"text": "plain"}]},
    ]}
    call = {"id": "c1", "type": "function", "function": {"name": "Read", "arguments": '{"file_path": "a"}'}}
    answered = [{"role": "user", "content": "read"}, {"role": "assistant", "content": None, "tool_calls": [call]},
                {"role": "tool", "tool_call_id": "c1", "content": "file body"}]
    with Simulator(script) as sim:
        texts = [
            create(sim, tools=TOOLS).choices[0].message.content,
            create(sim, messages=[{"role": "developer", "content": "be brief"}, *ASK["messages"]])
            .choices[0].message.content,
            create(sim, messages=answered).choices[0].message.content,
            create(sim).choices[0].message.content,
        ]
        assert not sim.unmatched
    assert texts == ["tools", "system", "tool result", "plain"]


def test_an_unmatched_request_is_a_400_and_recorded() -> None:
    script = {"rules": [{"match": {"system_contains": "never"}, "responses": [{"text": "x"}]}]}
    with Simulator(script) as sim:
        with pytest.raises(openai.BadRequestError) as caught:
            create(sim)
        assert sim.unmatched == sim.chat_requests
    assert caught.value.body["message"].startswith("simulator: no rule matched")
    assert caught.value.type == "invalid_request_error"


def test_chat_requests_record_the_bodies_and_stay_apart_from_messages() -> None:
    with Simulator([{"text": "a"}, {"text": "b"}]) as sim:
        create(sim)
        chunks(sim, stream_options={"include_usage": True})
        bodies = [r.body for r in sim.chat_requests]
        assert sim.message_requests == []
    assert bodies[0] == ASK and bodies[1]["stream"] is True and bodies[1]["stream_options"] == {"include_usage": True}


# --- validation -------------------------------------------------------------------------------


def test_an_unanswered_tool_call_is_rejected() -> None:
    call = {"id": "c1", "type": "function", "function": {"name": "Read", "arguments": "{}"}}
    messages = [{"role": "user", "content": "read"}, {"role": "assistant", "tool_calls": [call]},
                {"role": "user", "content": "well?"}]
    with Simulator([{"text": "never sent"}]) as sim:
        with pytest.raises(openai.BadRequestError) as caught:
            create(sim, messages=messages)
        assert sim.remaining() == [{"text": "never sent"}]
    assert "must be followed by tool messages" in caught.value.body["message"]
    assert "c1" in caught.value.body["message"]


def test_a_tool_message_without_a_call_is_rejected() -> None:
    messages = [{"role": "user", "content": "hi"}, {"role": "tool", "tool_call_id": "nope", "content": "x"}]
    with Simulator([{"text": "never sent"}]) as sim:
        with pytest.raises(openai.BadRequestError) as caught:
            create(sim, messages=messages)
    assert "role 'tool' must be a response" in caught.value.body["message"]


@pytest.mark.parametrize(
    ("body", "words"),
    [({"messages": ASK["messages"]}, "model"), ({"model": MODEL, "messages": []}, "empty array"),
     ({"model": MODEL}, "'messages'"), ("[1]", "parse")],
)
def test_malformed_bodies_are_400(body: object, words: str) -> None:
    with Simulator([{"text": "never sent"}]) as sim:
        kw = {"content": body} if isinstance(body, str) else {"json": body}
        response = HTTP.post(f"{sim.base_url}/v1/chat/completions", headers={"authorization": "Bearer k"}, **kw)
    error = response.json()["error"]
    assert response.status_code == 400 and words in error["message"] and error["type"] == "invalid_request_error"
    assert set(error) == {"message", "type", "param", "code"}


# --- faults -----------------------------------------------------------------------------------


def test_a_missing_key_is_a_401() -> None:
    with Simulator([{"text": "never sent"}]) as sim:
        response = HTTP.post(f"{sim.base_url}/v1/chat/completions", json=ASK)
        bare = HTTP.post(f"{sim.base_url}/v1/chat/completions", json=ASK, headers={"authorization": "Bearer"})
    assert response.status_code == bare.status_code == 401
    error = response.json()["error"]
    assert error["type"] == "invalid_request_error" and "API key" in error["message"]


@pytest.mark.parametrize(
    ("status", "exc_class", "error_type", "code"),
    [
        (400, openai.BadRequestError, "invalid_request_error", None),
        (401, openai.AuthenticationError, "invalid_request_error", "invalid_api_key"),
        (403, openai.PermissionDeniedError, "invalid_request_error", None),
        (404, openai.NotFoundError, "invalid_request_error", "model_not_found"),
        (429, openai.RateLimitError, "requests", "rate_limit_exceeded"),
        (500, openai.InternalServerError, "server_error", None),
        (503, openai.InternalServerError, "server_error", "service_unavailable"),
    ],
)
@pytest.mark.parametrize("stream", [True, False], ids=["stream", "json"])
def test_status_faults_raise_the_sdk_class(status: int, exc_class: type, error_type: str, code: str | None,
                                           stream: bool) -> None:
    with Simulator([{"fault": {"status": status}}]) as sim:
        with pytest.raises(exc_class) as caught:
            chunks(sim) if stream else create(sim)
        (rec,) = sim.chat_requests
    err = caught.value
    assert (err.status_code, err.type, err.code, err.request_id) == (status, error_type, code, rec.request_id)
    assert err.body["param"] is None and err.body["message"]


def test_a_rate_limit_carries_retry_after() -> None:
    fault = {"fault": {"status": 429, "retry_after": 7, "retry_after_ms": 7000, "should_retry": True}}
    with Simulator([fault]) as sim:
        with pytest.raises(openai.RateLimitError) as caught:
            create(sim)
    headers = caught.value.response.headers
    assert (headers["retry-after"], headers["retry-after-ms"], headers["x-should-retry"]) == ("7", "7000", "true")


def test_an_exhausted_quota_has_its_own_code() -> None:
    with Simulator([{"fault": {"status": 429, "error_code": "insufficient_quota"}}]) as sim:
        with pytest.raises(openai.RateLimitError) as caught:
            create(sim)
    assert caught.value.code == caught.value.type == "insufficient_quota"


def test_a_context_overflow_is_a_400_with_its_code() -> None:
    overflow = {"status": 400, "error_code": "context_length_exceeded", "message": "maximum context length is 8192"}
    fault = {"fault": overflow}
    with Simulator([fault]) as sim:
        with pytest.raises(openai.BadRequestError) as caught:
            create(sim)
    assert caught.value.code == caught.value.body["code"] == "context_length_exceeded"
    assert caught.value.body["message"] == "maximum context length is 8192"


def test_the_sdk_retries_after_retry_after_ms() -> None:
    with Simulator([{"fault": {"status": 503, "retry_after_ms": 1}}, {"text": "second try"}]) as sim:
        answer = client(sim, max_retries=1).chat.completions.create(**ASK)
        assert [r.retry_count for r in sim.chat_requests] == [0, 1]
    assert answer.choices[0].message.content == "second try"


def test_an_sse_error_mid_stream_raises_in_the_sdk() -> None:
    fault = {"fault": {"sse_error": {"type": "overloaded_error", "message": "Overloaded"}, "after_blocks": 1}}
    seen: list[str] = []
    with Simulator([fault]) as sim:
        with pytest.raises(openai.APIError) as caught:
            for chunk in client(sim).chat.completions.create(**ASK, stream=True):
                seen += content_of([chunk])
    assert "".join(seen) == "partial 1 " and caught.value.message == "Overloaded"
    assert caught.value.body["type"] == "server_error"


def test_an_sse_error_on_a_non_streaming_request_is_its_status() -> None:
    fault = {"fault": {"sse_error": {"type": "rate_limit_error", "message": "slow down"}}}
    with Simulator([fault]) as sim:
        with pytest.raises(openai.RateLimitError) as caught:
            create(sim)
    assert caught.value.body["message"] == "slow down" and caught.value.code == "rate_limit_exceeded"


def test_a_cut_stream_ends_without_finish_or_done() -> None:
    cut = {"fault": {"cut": True, "after_blocks": 1}}
    with Simulator([cut, cut]) as sim:
        frames = raw_frames(sim)
        stream = chunks(sim)
    assert "[DONE]" not in frames and all(json.loads(f)["choices"][0]["finish_reason"] is None for f in frames)
    assert "".join(content_of(stream)) == "partial 1 "
    assert all(c.choices[0].finish_reason is None for c in stream)


def test_a_cut_json_body_is_a_connection_error() -> None:
    with Simulator([{"text": HELLO, "fault": {"cut": True}}]) as sim:
        with pytest.raises(openai.APIConnectionError):
            create(sim)


def test_a_reset_is_a_connection_error() -> None:
    with Simulator([{"fault": {"reset": True}}]) as sim:
        with pytest.raises(openai.APIConnectionError):
            create(sim)
        (rec,) = sim.chat_requests
    assert rec.response_status is None


@pytest.mark.parametrize("raw", ['{"command": "ec', "ls -la", '"ls"', "[1, 2]"])
@pytest.mark.parametrize("stream", [True, False], ids=["stream", "json"])
def test_broken_arguments_are_sent_exactly(raw: str, stream: bool) -> None:
    spec = {"content": [{"type": "tool_use", "name": "Bash", "partial_json": raw}]}
    with Simulator([spec]) as sim:
        if stream:
            got = chunks(sim, tools=TOOLS)
            arguments, finish = calls_of(got)[0]["arguments"], got[-1].choices[0].finish_reason
        else:
            choice = create(sim, tools=TOOLS).choices[0]
            arguments, finish = choice.message.tool_calls[0].function.arguments, choice.finish_reason
    assert arguments == raw and finish == "tool_calls"


def test_tool_choice_none_on_the_chat_wire_leaves_the_calls_out() -> None:
    tools = [{"type": "function", "function": {"name": "Bash", "parameters": {"type": "object"}}}]
    with Simulator([{"text": "looking", "tool_use": {"name": "Bash", "input": {}}}]) as sim:
        done = create(sim, tools=tools, tool_choice="none")
    assert done.choices[0].message.tool_calls is None and done.choices[0].message.content == "looking"
    assert done.choices[0].finish_reason == "stop"
