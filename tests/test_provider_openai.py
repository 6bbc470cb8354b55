"""The OpenAI-compatible adapter: our requests as chat requests, chat chunks as our stream events
(folded by the same Accumulator as the Messages API), errors through the table; then the whole
loop against the simulator's chat endpoint."""

from __future__ import annotations

import json

import pytest

from loopwright.engine.accumulate import Accumulator
from loopwright.core.errors import ModelError, UsageError
from loopwright.providers.openai import ChunkFold, chat_body, error_for, model_id, split_model
from loopwright.core.types import Message, ModelRequest, TextBlock, ToolResultBlock, ToolUseBlock

# ---------------------------------------------------------------- requests


def test_messages_become_chat_messages_with_tool_results_right_after_the_call():
    call = ToolUseBlock("call_1", "Read", {"file_path": "a.txt"})
    request = ModelRequest("openai:gpt-x", (
        Message.user("read it"),
        Message("assistant", (TextBlock("Reading."), call)),
        Message("user", (ToolResultBlock("call_1", "hello"), ToolResultBlock("call_2", "boom", True),
                         TextBlock("keep it short"))),
    ), 1000, system="be brief", tools=({"name": "Read", "description": "read a file",
                                         "input_schema": {"type": "object"}},))
    body = chat_body(request, "gpt-x", official=True)
    assert body["model"] == "gpt-x" and body["max_completion_tokens"] == 1000 and body["stream"] is True
    assert body["stream_options"] == {"include_usage": True}
    assert body["messages"] == [
        {"role": "system", "content": "be brief"},
        {"role": "user", "content": "read it"},
        {"role": "assistant", "content": "Reading.", "tool_calls": [
            {"id": "call_1", "type": "function", "function": {"name": "Read", "arguments": '{"file_path": "a.txt"}'}}]},
        {"role": "tool", "tool_call_id": "call_1", "content": "hello"},
        {"role": "tool", "tool_call_id": "call_2", "content": "Error: boom"},
        {"role": "user", "content": "keep it short"},
    ]
    assert body["tools"] == [{"type": "function", "function": {"name": "Read", "description": "read a file",
                                                               "parameters": {"type": "object"}}}]
    assert "max_tokens" in chat_body(request, "x", official=False)  # servers other than OpenAI's


def test_model_names(monkeypatch):
    env = {"OPENAI_API_KEY": "sk-o"}
    assert split_model("openai:gpt-5", env) == ("https://api.openai.com/v1", "gpt-5", "sk-o")
    assert split_model("openai:gpt-5", env | {"OPENAI_BASE_URL": "http://gw/v1"})[0] == "http://gw/v1"
    assert split_model("openai-compatible:http://127.0.0.1:8080/v1#llama3", {}) == (
        "http://127.0.0.1:8080/v1", "llama3", "loopback-no-key")  # a server on this machine: no secret needed
    assert split_model("openai-compatible:http://gw.example/v1#llama3", {})[2] is None
    assert split_model("sonnet", env) is None
    assert model_id("openai-compatible:http://h/v1#m") == "m" and model_id("openai:gpt-5") == "gpt-5"
    with pytest.raises(UsageError, match="OPENAI_API_KEY"):
        split_model("openai:gpt-5", {})
    with pytest.raises(UsageError, match="expected openai-compatible:BASE_URL#MODEL"):
        split_model("openai-compatible:localhost#", {})


# ---------------------------------------------------------------- chunks


def chunk(delta=None, finish=None, usage=None, choices=True):
    return json.dumps({"id": "chatcmpl-1", "object": "chat.completion.chunk", "model": "gpt-x",
                       "choices": [{"index": 0, "delta": delta or {}, "finish_reason": finish}] if choices else [],
                       "usage": usage})


def fold(*datas):
    f, acc = ChunkFold("req-1"), Accumulator()
    for data in datas:
        for event in f.feed(data):
            acc.add(event)
    for event in f.finish():
        acc.add(event)
    return acc.response()


def test_text_and_two_tool_calls_fold_into_one_response():
    r = fold(chunk({"role": "assistant", "content": "Let me "}), chunk({"content": "look."}),
             chunk({"tool_calls": [{"index": 0, "id": "call_a", "type": "function",
                                    "function": {"name": "Read", "arguments": ""}}]}),
             chunk({"tool_calls": [{"index": 1, "id": "call_b", "type": "function",
                                    "function": {"name": "Glob", "arguments": '{"pattern"'}}]}),
             chunk({"tool_calls": [{"index": 0, "function": {"arguments": '{"file_path": "a"}'}}]}),
             chunk({"tool_calls": [{"index": 1, "function": {"arguments": ': "*.py"}'}}]}),
             chunk(finish="tool_calls"),
             chunk(usage={"prompt_tokens": 120, "completion_tokens": 30,
                          "prompt_tokens_details": {"cached_tokens": 100}}, choices=False), "[DONE]")
    assert r.stop_reason == "tool_use" and r.raw_stop_reason == "tool_use" and r.id == "chatcmpl-1"
    assert r.message.text == "Let me look."
    assert [(c.id, c.name, c.input, c.complete) for c in r.message.tool_uses] == [
        ("call_a", "Read", {"file_path": "a"}, True), ("call_b", "Glob", {"pattern": "*.py"}, True)]
    assert (r.usage.input_tokens, r.usage.cache_read_input_tokens, r.usage.output_tokens) == (20, 100, 30)


@pytest.mark.parametrize(("finish", "stop"), [("stop", "end_turn"), ("length", "max_tokens"),
                                              ("content_filter", "refusal"), ("tool_calls", "tool_use")])
def test_finish_reasons_map_to_stop_reasons(finish, stop):
    assert fold(chunk({"content": "x"}), chunk(finish=finish)).stop_reason == stop


def test_a_call_cut_by_the_token_limit_is_never_complete():
    r = fold(chunk({"tool_calls": [{"index": 0, "id": "c", "function": {"name": "Write",
                                                                      "arguments": '{"file_path": "a", "cont'}}]}),
             chunk(finish="length"))
    (call,) = r.message.tool_uses
    assert r.stop_reason == "max_tokens" and not call.complete


def test_a_refusal_keeps_its_text_and_details():
    r = fold(chunk({"refusal": "I can't help with that."}), chunk(finish="stop"))
    assert r.message.text == "I can't help with that." and r.stop_reason == "refusal"
    r = fold(chunk({"refusal": "No."}), chunk(finish="content_filter"))
    assert r.stop_details == {"type": "refusal", "category": None, "explanation": "No."}


def test_a_stream_without_its_finish_is_incomplete_and_an_error_chunk_raises():
    f = ChunkFold(None)
    f.feed(chunk({"content": "half"}))
    with pytest.raises(ModelError) as info:
        f.finish()
    assert info.value.kind == "stream_incomplete"
    with pytest.raises(ModelError) as info:
        ChunkFold(None).feed(json.dumps({"error": {"message": "overloaded", "type": "server_error"}}))
    assert info.value.kind == "server" and info.value.message == "overloaded"


@pytest.mark.parametrize(("status", "code", "kind"), [
    (400, "context_length_exceeded", "prompt_too_long"), (429, "insufficient_quota", "spend_limit"),
    (429, "rate_limit_exceeded", "rate_limit"), (401, "invalid_api_key", "authentication"),
    (500, None, "server"), (503, None, "server"), (400, None, "invalid_request"),
])
def test_errors_through_the_table(status, code, kind):
    body = json.dumps({"error": {"message": "m", "type": "t", "param": None, "code": code}})
    err = error_for(status, {"retry-after": "3", "x-request-id": "req-9"}, body)
    assert (err.kind, err.status, err.retry_after, err.request_id, err.message) == (kind, status, 3.0, "req-9", "m")
