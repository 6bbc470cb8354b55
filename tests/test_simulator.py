"""The simulator speaks the Messages API wire format: the official SDK, in strict mode, accepts it."""

from __future__ import annotations

import asyncio
import json

import anthropic
import httpx
import pytest

from loopwright.testing import Script, Simulator
from loopwright.testing.simulator.wire import estimate_input_tokens
from sdkclients import HTTP, sdk

MODEL = "claude-sonnet-5"
ASK = {"model": MODEL, "max_tokens": 256, "messages": [{"role": "user", "content": "hi"}]}




def stream_final(sim: Simulator, **ask: object) -> anthropic.types.Message:
    with sdk(sim).messages.stream(**(ASK | ask)) as stream:
        return stream.get_final_message()


def raw_events(sim: Simulator, **ask: object) -> list[tuple[str, dict]]:
    """The SSE frames as sent, parsed by hand (not by the SDK)."""
    body = ASK | {"stream": True} | ask
    response = HTTP.post(f"{sim.base_url}/v1/messages", json=body, headers={"x-api-key": "k"})
    assert response.headers["content-type"] == "text/event-stream"
    events = []
    for frame in response.text.split("\n\n"):
        if not frame:
            continue
        event_line, data_line = frame.split("\n")
        name = event_line.removeprefix("event: ")
        data = json.loads(data_line.removeprefix("data: "))
        assert data["type"] == name
        events.append((name, data))
    return events


def test_streaming_text_arrives_in_several_deltas_and_assembles() -> None:
    text = "Hello there, this is a streamed answer."
    with Simulator([{"text": text}, {"text": text}]) as sim:
        message = stream_final(sim)
        events = raw_events(sim)
    assert message.content[0].type == "text" and message.content[0].text == text
    assert message.stop_reason == "end_turn" and message.model == MODEL
    names = [name for name, _ in events]
    assert names[:3] == ["message_start", "ping", "content_block_start"]
    assert names[-3:] == ["content_block_stop", "message_delta", "message_stop"]
    deltas = [d["delta"]["text"] for n, d in events if n == "content_block_delta"]
    assert len(deltas) > 1 and "".join(deltas) == text
    start = events[0][1]["message"]
    assert start["stop_reason"] is None and start["content"] == [] and "input_tokens" in start["usage"]
    assert "output_tokens" in events[-2][1]["usage"]


def test_tool_use_input_is_assembled_from_json_deltas_with_generated_ids() -> None:
    tool_input = {"command": "echo hi", "args": [1, 2, {"deep": True}]}
    script = [{"tool_use": [{"name": "Bash", "input": tool_input}, {"name": "Read", "input": {"file_path": "x"}}]}]
    with Simulator(script * 2) as sim:
        message = stream_final(sim)
        events = raw_events(sim)
    assert message.stop_reason == "tool_use"
    assert [(b.type, b.name, b.id) for b in message.content] == [
        ("tool_use", "Bash", "toolu_sim_0001"),
        ("tool_use", "Read", "toolu_sim_0002"),
    ]
    assert message.content[0].input == tool_input
    starts = [d["content_block"] for n, d in events if n == "content_block_start"]
    assert starts[0]["input"] == {}
    pieces = [d["delta"]["partial_json"] for n, d in events if n == "content_block_delta" and d["index"] == 0]
    assert pieces[0] == "" and len(pieces) > 2 and json.loads("".join(pieces)) == tool_input


def test_thinking_streams_thinking_then_signature_before_stop() -> None:
    content = [{"type": "thinking", "thinking": "let me think about it", "signature": "sig-123"}, {"type": "text", "text": "ok"}]
    with Simulator([{"content": content}] * 2) as sim:
        message = stream_final(sim)
        events = raw_events(sim)
    assert message.content[0].type == "thinking"
    assert message.content[0].thinking == "let me think about it" and message.content[0].signature == "sig-123"
    block0 = [(n, d.get("delta", {}).get("type")) for n, d in events if d.get("index") == 0]
    assert block0[-2:] == [("content_block_delta", "signature_delta"), ("content_block_stop", None)]
    assert ("content_block_delta", "thinking_delta") in block0


STOP_REASONS = [
    "end_turn", "max_tokens", "stop_sequence", "tool_use", "pause_turn", "refusal", "model_context_window_exceeded",
]


@pytest.mark.parametrize("stream", [True, False], ids=["stream", "json"])
@pytest.mark.parametrize("stop_reason", STOP_REASONS)
def test_every_stop_reason_reaches_the_sdk(stop_reason: str, stream: bool) -> None:
    spec: dict = {"text": "partial", "stop_reason": stop_reason}
    if stop_reason == "tool_use":
        spec = {"tool_use": {"name": "Bash", "input": {"command": "ls"}}}
    if stop_reason == "refusal":
        spec["stop_details"] = {"type": "refusal", "category": "cyber", "explanation": "x"}
    if stop_reason == "pause_turn":
        spec = {"content": [{"type": "server_tool_use", "name": "web_search", "input": {"query": "q"}}], "stop_reason": "pause_turn"}
    ask = {"stop_sequences": ["###"]}
    with Simulator([spec]) as sim:
        message = stream_final(sim, **ask) if stream else sdk(sim).messages.create(**(ASK | ask))
    assert message.stop_reason == stop_reason
    if stop_reason == "stop_sequence":
        assert message.stop_sequence == "###"
    else:
        assert message.stop_sequence is None
    if stop_reason == "refusal":
        assert message.stop_details is not None
        assert (message.stop_details.type, message.stop_details.category, message.stop_details.explanation) == ("refusal", "cyber", "x")
    else:
        assert message.stop_details is None
    if stop_reason == "pause_turn":
        block = message.content[0]
        assert block.type == "server_tool_use" and block.input == {"query": "q"} and block.id.startswith("srvtoolu_")


def test_refusal_without_details_gets_null_category() -> None:
    with Simulator([{"content": [], "stop_reason": "refusal", "usage": {"output_tokens": 0}}]) as sim:
        message = stream_final(sim)
    assert message.content == [] and message.usage.output_tokens == 0
    assert message.stop_details is not None and message.stop_details.category is None


def test_empty_end_turn_has_no_blocks_and_two_output_tokens() -> None:
    spec = {"content": [], "stop_reason": "end_turn", "usage": {"output_tokens": 2}}
    with Simulator([spec, spec]) as sim:
        message = stream_final(sim)
        events = raw_events(sim)
    assert message.content == [] and message.stop_reason == "end_turn" and message.usage.output_tokens == 2
    assert [n for n, _ in events] == ["message_start", "ping", "message_delta", "message_stop"]


def test_truncated_tool_input_streams_raw_and_is_empty_in_json() -> None:
    spec = {"content": [{"type": "tool_use", "name": "Write", "partial_json": '{"file_path": "a'}], "stop_reason": "max_tokens"}
    with Simulator([spec, spec]) as sim:
        events = raw_events(sim)
        message = sdk(sim).messages.create(**ASK)
    pieces = [d["delta"]["partial_json"] for n, d in events if n == "content_block_delta"]
    assert "".join(pieces) == '{"file_path": "a'
    assert message.stop_reason == "max_tokens" and message.content[0].input == {}
    assert message.content[0].name == "Write"


def test_non_streaming_create_returns_a_full_message() -> None:
    with Simulator([{"text": "plain answer", "id": "msg_fixed"}]) as sim:
        message = sdk(sim).messages.create(**ASK)
        (rec,) = sim.message_requests
    assert (message.id, message.type, message.role, message.model) == ("msg_fixed", "message", "assistant", MODEL)
    assert message.content[0].text == "plain answer" and message.stop_reason == "end_turn"
    assert message.usage.input_tokens == estimate_input_tokens(rec.body)
    assert message.usage.output_tokens == len("plain answer") // 4 + 1
    assert message._request_id == rec.request_id and rec.response_status == 200


def test_model_and_usage_in_the_spec_override_defaults() -> None:
    spec = {"text": "x", "model": "claude-other", "usage": {"input_tokens": 10, "output_tokens": 5, "cache_read_input_tokens": 7}}
    with Simulator([spec, spec]) as sim:
        streamed = stream_final(sim)
        plain = sdk(sim).messages.create(**ASK)
    for message in (streamed, plain):
        assert message.model == "claude-other"
        assert (message.usage.input_tokens, message.usage.output_tokens, message.usage.cache_read_input_tokens) == (10, 5, 7)


def test_count_tokens_uses_the_estimate_and_consumes_no_response() -> None:
    tools = [{"name": "Bash", "description": "run", "input_schema": {"type": "object"}}]
    with Simulator([{"text": "unused"}]) as sim:
        count = sdk(sim).messages.count_tokens(model=MODEL, messages=ASK["messages"], system="be brief", tools=tools)
        (rec,) = sim.requests
        assert sim.remaining() == [{"text": "unused"}]
    assert rec.path == "/v1/messages/count_tokens"
    assert count.input_tokens == estimate_input_tokens(rec.body) > estimate_input_tokens({"messages": ASK["messages"]})


def test_beta_headers_and_query_strings_are_accepted_and_recorded() -> None:
    with Simulator([{"text": "beta ok"}, {"text": "query ok"}]) as sim:
        message = sdk(sim).beta.messages.create(**ASK, betas=["context-management-2025-06-27"])
        response = HTTP.post(f"{sim.base_url}/v1/messages?beta=true", json=ASK, headers={"x-api-key": "k"})
        first, second = sim.requests
    assert message.content[0].text == "beta ok"
    assert (first.method, first.path, first.query) == ("POST", "/v1/messages", "")
    assert first.headers["anthropic-beta"] == "context-management-2025-06-27"
    assert "anthropic-version" in first.headers and first.retry_count == 0
    assert first.body["messages"] == ASK["messages"] and json.loads(first.raw) == first.body
    assert response.json()["content"][0]["text"] == "query ok"
    assert (second.path, second.query, second.response_status) == ("/v1/messages", "beta=true", 200)
    assert first.time <= second.time


def test_many_streaming_requests_reuse_one_connection() -> None:
    body = ASK | {"stream": True}
    with Simulator([{"text": "keep me alive", "repeat": -1}]) as sim:
        with httpx.Client(base_url=sim.base_url, headers={"x-api-key": "k"}, verify=False) as client:
            for _ in range(10):
                with client.stream("POST", "/v1/messages", json=body) as response:
                    assert b"event: message_stop" in response.read()
        client_sdk = sdk(sim)
        for _ in range(3):
            with client_sdk.messages.stream(**ASK) as stream:
                assert stream.get_final_text() == "keep me alive"
        assert len(sim.message_requests) == 13
        assert sim.connections == 2  # one per client


def test_async_context_manager_serves_the_async_sdk() -> None:
    async def main() -> tuple[str, int]:
        async with Simulator([{"text": "async hello"}]) as sim:
            client = anthropic.AsyncAnthropic(base_url=sim.base_url, api_key="sk-test", max_retries=0, _strict_response_validation=True)
            async with client.messages.stream(**ASK) as stream:
                message = await stream.get_final_message()
            await client.close()
            return message.content[0].text, len(sim.requests)

    assert asyncio.run(main()) == ("async hello", 1)


def test_script_object_and_dict_forms_are_accepted() -> None:
    rules = {"rules": [{"responses": [{"text": "from dict"}]}]}
    for script in (rules, Script(rules["rules"])):
        with Simulator(script) as sim:
            assert sdk(sim).messages.create(**ASK).content[0].text == "from dict"


def test_chunked_request_bodies_are_read() -> None:
    body = json.dumps(ASK).encode()
    with Simulator([{"text": "chunked ok"}]) as sim:
        response = HTTP.post(
            f"{sim.base_url}/v1/messages", content=iter([body[:7], body[7:]]), headers={"x-api-key": "k"}
        )
        (rec,) = sim.requests
    assert rec.headers["transfer-encoding"] == "chunked" and rec.body == ASK
    assert response.json()["content"] == [{"type": "text", "text": "chunked ok"}]


def test_broken_tool_input_streams_exactly_and_closes_its_block() -> None:
    # a gateway's broken input: the block is finished as usual, the stop reason is tool_use
    spec = {"content": [{"type": "tool_use", "name": "Bash", "partial_json": '{"command": "ls",}'}]}
    with Simulator([spec]) as sim:
        events = raw_events(sim)
    pieces = [d["delta"]["partial_json"] for n, d in events if n == "content_block_delta"]
    assert "".join(pieces) == '{"command": "ls",}'
    assert [n for n, _ in events].count("content_block_stop") == 1
    assert [d for n, d in events if n == "message_delta"][0]["delta"]["stop_reason"] == "tool_use"


@pytest.mark.parametrize("value", [[1, 2], "ls", None, 0, False, {}])
def test_a_tool_input_of_any_json_type_is_sent_as_given(value: object) -> None:
    spec = {"content": [{"type": "tool_use", "name": "Bash", "input": value}]}
    with Simulator([spec, spec]) as sim:
        events = raw_events(sim)
        sent = HTTP.post(f"{sim.base_url}/v1/messages", json=ASK, headers={"x-api-key": "k"}).json()
    streamed = "".join(d["delta"]["partial_json"] for n, d in events if n == "content_block_delta")
    assert json.loads(streamed) == value and sent["content"][0]["input"] == value


def test_a_history_whose_tool_input_is_not_an_object_is_refused_as_the_api_does() -> None:
    use = {"type": "tool_use", "id": "toolu_1", "name": "Bash", "input": "ls"}
    result = {"type": "tool_result", "tool_use_id": "toolu_1", "content": "x"}
    body = ASK | {"messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": [use]},
                               {"role": "user", "content": [result]}]}
    with Simulator([{"text": "ok"}]) as sim:
        response = HTTP.post(f"{sim.base_url}/v1/messages", json=body, headers={"x-api-key": "k"})
    assert response.status_code == 400 and "tool_use.input" in response.json()["error"]["message"]


TOOLS = [{"name": "Bash", "description": "run", "input_schema": {"type": "object"}}]
CALL = {"text": "let me look", "tool_use": {"name": "Bash", "input": {"command": "ls"}}}


def test_tool_choice_none_leaves_the_scripted_calls_out() -> None:
    with Simulator([CALL, {"tool_use": {"name": "Bash", "input": {}}}]) as sim:
        client = sdk(sim)
        ask = {"model": "claude-sonnet-5", "max_tokens": 100, "tools": TOOLS, "tool_choice": {"type": "none"},
               "messages": [{"role": "user", "content": "hi"}]}
        with client.messages.stream(**ask) as stream:
            kept = stream.get_final_message()
        alone = client.messages.create(**ask)
    assert [b.type for b in kept.content] == ["text"] and kept.stop_reason == "end_turn"
    assert [b.text for b in alone.content] == ["(tool_choice was none: the scripted tool call was left out)"]


@pytest.mark.parametrize("choice", [{"type": "any"}, {"type": "tool", "name": "Read"}])
def test_a_forced_tool_the_script_does_not_call_is_a_400(choice) -> None:
    with Simulator([{"text": "no tools here"}, CALL]) as sim:
        client = sdk(sim)
        with pytest.raises(anthropic.BadRequestError) as info:
            client.messages.create(model="claude-sonnet-5", max_tokens=100, tools=TOOLS, tool_choice=choice,
                                   messages=[{"role": "user", "content": "hi"}])
        assert "tool_choice" in str(info.value)
        ok = client.messages.create(model="claude-sonnet-5", max_tokens=100, tools=TOOLS, tool_choice={"type": "any"},
                                    messages=[{"role": "user", "content": "hi"}])
    assert [b.type for b in ok.content] == ["text", "tool_use"]
