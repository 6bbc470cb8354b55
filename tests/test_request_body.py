"""The request body put together from fragments encoded once (issue 32 item 4b) is byte for byte
the body encoded whole, as it was built before: for conversations with every kind of block, with
and without prompt-cache breakpoints, and as the simulator receives it from a real loop."""

import json

import anyio
import pytest

from loopwright.agent import Agent, Session
from loopwright.core.types import (
    Message, ModelRequest, OpaqueBlock, TextBlock, ThinkingBlock, ToolResultBlock, ToolUseBlock, compact_json,
)
from loopwright.permissions.decide import PermissionRules
from loopwright.providers.anthropic import AnthropicModel, Fragments, request_body, with_cache_breakpoints
from loopwright.testing import Simulator

TOOLS = ({"name": "Read", "description": "Read a file.", "input_schema": {"type": "object", "properties": {
    "file_path": {"type": "string"}}}}, {"name": "Bash", "description": "Run ✓ a command", "input_schema": {}})


def whole(request: ModelRequest, caching: bool) -> bytes:
    """The body as it was built before: the whole request as one dict, encoded at once."""
    body = request.to_api(stream=True)
    return compact_json(with_cache_breakpoints(body) if caching else body)


def conversation(last: Message) -> tuple[Message, ...]:
    use = ToolUseBlock("toolu_1", "Read", {"file_path": "/tmp/ü.txt"})
    return (Message.user("read it"), Message("assistant", (ThinkingBlock("hmm", "sig"), TextBlock("ok"), use)),
            Message("user", (ToolResultBlock("toolu_1", "line \ud800 one\n", is_error=False),)),
            Message("assistant", (OpaqueBlock({"type": "server_tool_use", "id": "s1", "name": "web_search",
                                               "input": {"q": "x"}}),)),
            Message("user", (ToolResultBlock("toolu_2", ({"type": "text", "text": "a"},), is_error=True),)),
            last)


LASTS = {
    "text": Message.user("go on"),
    "tool result": Message("user", (ToolResultBlock("toolu_3", "done"),)),
    "empty text": Message("user", (TextBlock(""),)),  # refused a breakpoint: left without
    "thinking": Message("assistant", (ThinkingBlock("deep", "s"),)),  # refused a breakpoint
    "redacted": Message("assistant", (OpaqueBlock({"type": "redacted_thinking", "data": "zz"}),)),
    "already marked": Message("user", (OpaqueBlock({"type": "text", "text": "x", "cache_control": {"type": "ephemeral"}}),)),
}


@pytest.mark.parametrize("caching", [True, False])
@pytest.mark.parametrize("last", list(LASTS))
@pytest.mark.parametrize("system", ["You are terse. 日本", "", ({"type": "text", "text": "blocks"},)])
def test_the_body_from_fragments_is_the_body_encoded_whole(caching: bool, last: str, system) -> None:
    fragments = Fragments()
    messages = conversation(LASTS[last])
    for extra in ({}, {"temperature": 0.5, "metadata": {"user_id": "u"}}, {"system": "overridden"}):
        for n in range(1, len(messages) + 1):  # the conversation growing turn by turn, one client
            request = ModelRequest("claude-sonnet-4-5", messages[:n], 1024, system=system, tools=TOOLS, extra=extra)
            assert request_body(request, caching=caching, fragments=fragments) == whole(request, caching)


def test_earlier_messages_are_joined_once_and_a_rewritten_history_afresh() -> None:
    """The joined text of a conversation's earlier messages is kept per client and extended by
    the new ones; a history that is not the one sent before (rewound, compacted, edited in the
    middle, another conversation with the same first message) is joined afresh."""
    fragments = Fragments()
    a, b = conversation(LASTS["text"]), conversation(LASTS["tool result"])
    first = a[0]
    rewritten = (first, Message("assistant", (TextBlock("summary"),)), *a[4:])
    other = (first, *b[1:])
    sequences = [a[:2], a[:4], a, a[:3], rewritten, a, other, b, a[:1], a]  # interleaved on one client
    for messages in sequences:
        for caching in (True, False):
            request = ModelRequest("m", messages, 10, tools=TOOLS)
            assert request_body(request, caching=caching, fragments=fragments) == whole(request, caching)
    held = fragments.messages_json(a)
    assert fragments.messages_json(a) is held  # the same conversation again: nothing joined anew
    assert held == b",".join(m.api_json() for m in a)


def test_an_empty_conversation_and_no_tools_are_encoded_as_before() -> None:
    request = ModelRequest("m", (), 10)
    assert request_body(request, caching=True) == whole(request, True)


def test_the_simulator_receives_the_same_bytes_as_a_body_built_whole(tmp_path) -> None:
    (tmp_path / "f.txt").write_text("hello\n")
    script = [{"tool_use": {"name": "Read", "input": {"file_path": str(tmp_path / "f.txt")}}, "repeat": 4},
              {"text": "done"}]
    with Simulator(script) as sim:
        agent = Agent(model_client=AnthropicModel(base_url=sim.base_url, api_key="sk-test"), cwd=tmp_path,
                      permissions=PermissionRules(), system_prompt="You read.")
        session = Session()
        result = agent.run_sync("read it over and over", session=session)
        sent = [r.raw for r in sim.message_requests]
    assert result.result == "done" and len(sent) == 5
    history = session.history
    for i, raw in enumerate(sent):
        # turn i's request held the prompt and i answers with their results; the rest of the
        # request (system prompt, tools, options) is taken from what was sent
        sent_body = json.loads(raw)
        extra = {k: v for k, v in sent_body.items() if k not in ("model", "max_tokens", "messages", "system", "tools",
                                                                   "stream")}
        request = ModelRequest(sent_body["model"], tuple(history[:2 * i + 1]), sent_body["max_tokens"],
                               system=sent_body["system"][0]["text"], tools=tuple(sent_body["tools"]), extra=extra)
        assert raw == whole(request, caching=True)
