"""What the loop lets into the conversation is bounded: a tool result keeps its start and end
with a note past 200,000 characters; hook `additionalContext` is cut at 10,000 characters a text
and 50,000 a message, with a note. Through the loopback simulator: what the model is sent."""

from __future__ import annotations

import pytest

from loopwright import Agent
from loopwright.tools.base import tool
from loopwright.core.ports import HookResult, NO_HOOK_RESULT
from loopwright.engine.dispatch import MAX_CONTEXT_CHARS, MAX_CONTEXT_TOTAL, MAX_RESULT_CHARS
from loopwright.providers.anthropic import AnthropicModel
from loopwright.testing import Simulator

pytestmark = pytest.mark.anyio


class Flooding:
    """A hook runner whose hooks answer every event with huge `additionalContext`."""

    def __init__(self, sizes: tuple[int, ...]) -> None:
        self.sizes = sizes

    async def run(self, event, payload, *, match=None):
        if event in ("SessionStart", "UserPromptSubmit", "PostToolUse", "PostToolBatch"):
            return HookResult(additional_context=tuple(chr(ord("a") + i) * n for i, n in enumerate(self.sizes)))
        return NO_HOOK_RESULT


@tool(read_only=True)
def flood(chars: int) -> str:
    """Return `chars` characters."""
    return "<" + "x" * (chars - 2) + ">"


async def sent_after(script, **agent_kw):
    with Simulator(script) as sim:
        agent = Agent(model_client=AnthropicModel(base_url=sim.base_url, api_key="sk-test"), **agent_kw)
        result = await agent.run("go")
        return result, [r.body for r in sim.message_requests]


def texts(message):
    content = message["content"]
    return [content] if isinstance(content, str) else [b.get("text") or b.get("content") for b in content]


@pytest.mark.parametrize("chars", [MAX_RESULT_CHARS + 1, 5_000_000])
async def test_a_huge_tool_result_keeps_its_start_and_end(tmp_path, chars):
    script = [{"tool_use": {"name": "flood", "input": {"chars": chars}}}, {"text": "ok"}]
    result, bodies = await sent_after(script, cwd=tmp_path, tools=[flood])
    sent = bodies[1]["messages"][-1]["content"][0]["content"]
    assert result.subtype == "success" and len(sent) < MAX_RESULT_CHARS + 400
    assert sent.startswith("<xxx") and sent.endswith("xxx>")
    assert f"characters omitted: this result was {chars:,} characters, over the 200,000" in sent


async def test_a_result_under_the_cap_is_untouched(tmp_path):
    script = [{"tool_use": {"name": "flood", "input": {"chars": MAX_RESULT_CHARS}}}, {"text": "ok"}]
    _, bodies = await sent_after(script, cwd=tmp_path, tools=[flood])
    assert len(bodies[1]["messages"][-1]["content"][0]["content"]) == MAX_RESULT_CHARS


@pytest.mark.parametrize("sizes", [(1_000_000,), (9_000, 9_000, 9_000, 9_000, 9_000, 9_000, 9_000), (20_000_000, 5)])
async def test_hook_context_is_capped_as_it_enters_each_message(tmp_path, sizes):
    script = [{"tool_use": {"name": "flood", "input": {"chars": 10}}}, {"text": "ok"}]
    result, bodies = await sent_after(script, cwd=tmp_path, tools=[flood], hooks=Flooding(sizes))
    assert result.subtype == "success"
    for message in bodies[1]["messages"]:  # session start, prompt, tool result with PostToolUse, PostToolBatch
        if message["role"] != "user":
            continue
        hook_text = "".join(t for t in texts(message) if t and t[:1] in "abcdefg" and t != "go")
        assert len(hook_text) <= MAX_CONTEXT_TOTAL + 200 * len(sizes)
        results = [b["content"] for b in message["content"] if isinstance(b, dict) and b["type"] == "tool_result"]
        assert all(len(r) <= 10 + MAX_CONTEXT_TOTAL + 200 * len(sizes) for r in results)  # PostToolUse context
    everything = str(bodies[1])
    if max(sizes) > MAX_CONTEXT_CHARS:
        assert f"over the {MAX_CONTEXT_CHARS:,}-character cap on one hook's context" in everything
    if sum(min(s, MAX_CONTEXT_CHARS) for s in sizes) > MAX_CONTEXT_TOTAL:
        assert f"over the {MAX_CONTEXT_TOTAL:,}-character cap on hook context in one message" in everything
