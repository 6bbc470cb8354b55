"""The loop in-process, with the scripted model and small tools of the test's own: ordering,
error results, parallel scheduling, interrupt, retries on a fake clock, compaction."""

import time
from pathlib import Path

import anyio
import pytest

from loopwright.core.errors import ModelError
from loopwright.core.events import CompactBoundary, ToolStarted
from loopwright.engine.loop import AgentLoop
from loopwright.engine.loopconfig import LoopConfig
from loopwright.permissions.decide import PermissionRules
from loopwright.testing.clock import FakeClock
from loopwright.testing.scripted import ScriptedModel, Step, text
from loopwright.tools import tool
from loopwright.core.types import Message, Response, TextBlock, ToolResultBlock, ToolUseBlock, Usage

pytestmark = pytest.mark.anyio


def calls(*blocks, stop="tool_use", usage=Usage(10, 10)):
    return Response(Message("assistant", tuple(blocks)), stop, "", usage)


def use(name, id, **input):
    return ToolUseBlock(id, name, input)


@tool(read_only=True)
async def slow_read(ms: int) -> str:
    """Sleep, then answer (read-only, so calls may run together)."""
    await anyio.sleep(ms / 1000)
    return f"slept {ms}"


@tool()
async def boom() -> str:
    """Always fails."""
    raise RuntimeError("kaput")


@tool()
async def hang() -> str:
    """Never finishes on its own."""
    await anyio.sleep(3600)
    return "unreachable"


def make(model, tools=(), clock=None, events=None, **cfg):
    config = LoopConfig(model="claude-sonnet-5", cwd=Path("."), session_id="s1", tools=tools,
                        permissions=cfg.pop("permissions", PermissionRules(mode="bypassPermissions")), **cfg)
    sink = events if events is not None else []
    return AgentLoop(model, config, emit=sink.append, clock=clock or FakeClock())


async def test_results_in_tool_use_order_with_is_error_for_each_failure():
    model = ScriptedModel([
        calls(use("boom", "a"), use("nope", "b"), use("slow_read", "c", ms="not a number"),
              use("slow_read", "d", ms=1)),
        "done",
    ])
    result = await make(model, tools=[boom, slow_read]).run([Message.user("go")])
    model.assert_done()
    results = model.requests[1].messages[-1].content
    assert [r.tool_use_id for r in results] == ["a", "b", "c", "d"]
    assert [r.is_error for r in results] == [True, True, True, False]
    assert "kaput" in results[0].text and "No such tool: nope" in results[1].text
    assert "ms" in results[2].text
    assert result.subtype == "success" and result.result == "done" and result.num_turns == 2


async def test_read_only_calls_run_in_parallel_results_in_order():
    n, ms = 5, 200
    parallel = ScriptedModel([calls(*[use("slow_read", f"t{i}", ms=ms - 30 * i) for i in range(n)]), "ok"])
    started = time.monotonic()
    await make(parallel, tools=[slow_read]).run([Message.user("go")])
    together = time.monotonic() - started
    serial = sum(ms - 30 * i for i in range(n)) / 1000
    assert together < serial * 0.6, (together, serial)  # a ratio to the serial time, not a deadline
    order = [r.tool_use_id for r in parallel.requests[1].messages[-1].content]
    assert order == [f"t{i}" for i in range(n)]


async def test_denied_tool_is_an_error_result_and_a_denial():
    model = ScriptedModel([calls(use("boom", "a")), "ok"])
    loop = make(model, tools=[boom], permissions=PermissionRules(mode="default"))
    result = await loop.run([Message.user("go")])
    denied = model.requests[1].messages[-1].content[0]
    assert denied.is_error and "denied" in denied.text
    assert [(d.tool_name, d.tool_use_id) for d in result.permission_denials] == [("boom", "a")]


async def test_interrupt_cancels_tools_and_keeps_the_transcript_valid():
    model = ScriptedModel([calls(TextBlock("working"), use("hang", "h1"))])
    events = []
    loop = make(model, tools=[hang], events=events)
    result = None

    async def run():
        nonlocal result
        result = await loop.run([Message.user("go")])

    async with anyio.create_task_group() as tg:
        tg.start_soon(run)
        while not any(isinstance(e, ToolStarted) for e in events):
            await anyio.sleep(0.01)
        loop.interrupt()
    assert result.terminal_reason == "aborted" and result.exit_code == 130 and result.is_error
    last = result.messages[-1]
    assert isinstance(last.content[0], ToolResultBlock) and last.content[0].is_error
    assert "Interrupted" in last.content[0].text and result.result == "working"


async def test_retries_wait_on_the_injected_clock():
    clock = FakeClock()
    model = ScriptedModel([ModelError("server", "500"), ModelError("rate_limit", "429", retry_after=7.0), "ok"])
    result = await make(model, clock=clock).run([Message.user("go")])
    assert len(clock.sleeps) == 2 and 0.5 <= clock.sleeps[0] <= 0.625 and clock.sleeps[1] == 7.0
    assert result.retries["server"] == 1 and result.retries["rate_limit"] == 1 and result.num_turns == 1


async def test_reactive_compaction_keeps_recent_exchanges_and_drops_tools_from_summary_call():
    def summary_check(req):
        assert not req.tools and "summary" in req.messages[-1].content[-1].text

    model = ScriptedModel([
        calls(use("slow_read", "a", ms=1)), calls(use("slow_read", "b", ms=1)), calls(use("slow_read", "c", ms=1)),
        ModelError("prompt_too_long", "prompt is too long: 1000 tokens > 900 maximum", status=400),
        Step(response=text("<summary>did a, b</summary>"), check=summary_check),
        "finished",
    ])
    events = []
    result = await make(model, tools=[slow_read], events=events).run([Message.user("go")])
    model.assert_done()
    after = model.requests[-1].messages
    assert "did a, b" in after[0].text
    assert [m.role for m in after] == ["user", "assistant", "user", "assistant", "user"]
    assert {b.tool_use_id for m in after for b in m.content if isinstance(b, ToolResultBlock)} == {"b", "c"}
    assert any(isinstance(e, CompactBoundary) and e.trigger == "reactive" for e in events)
    assert result.subtype == "success" and "compaction" in result.role_usage


async def test_prompt_too_long_with_nothing_to_compact_fails_with_a_result():
    model = ScriptedModel([ModelError("prompt_too_long", "prompt is too long", status=400)])
    result = await make(model).run([Message.user("huge")])
    assert result.terminal_reason == "prompt_too_long" and result.is_error


async def test_proactive_compaction_when_context_passes_threshold():
    big = Usage(input_tokens=170_000, output_tokens=10)  # claude-sonnet-5: 1M window → use a smaller model
    model = ScriptedModel([
        calls(use("slow_read", "a", ms=1), usage=big), calls(use("slow_read", "b", ms=1), usage=big),
        calls(use("slow_read", "c", ms=1), usage=big),
        text("<summary>s</summary>"), "done",
    ])
    loop = make(model, tools=[slow_read], compact_threshold=0.8)
    loop.model = "claude-haiku-4-5"  # 200k window: 170k is past 80 %
    events = []
    loop.emit = events.append
    await loop.run([Message.user("go")])
    model.assert_done()
    assert any(isinstance(e, CompactBoundary) and e.trigger == "auto" for e in events)


async def test_compaction_thrashing_stops_the_run():
    big = Usage(input_tokens=190_000, output_tokens=10)
    step = lambda i: calls(use("slow_read", f"x{i}", ms=1), usage=big)  # noqa: E731
    summary = text("<summary>s</summary>")
    # the first compaction needs 3 exchanges (2 are kept); each later response refills the window
    model = ScriptedModel([step(1), step(2), step(3), summary, step(4), summary, step(5), summary, step(6)])
    loop = make(model, tools=[slow_read])
    loop.model = "claude-haiku-4-5"  # 200k window; every response refills it past 80 %
    result = await loop.run([Message.user("go")])
    model.assert_done()
    assert result.terminal_reason == "compaction_thrashing" and result.is_error
    assert result.role_usage["compaction"].calls == 3


async def test_manual_compaction_from_python():
    from loopwright.agent import Agent

    model = ScriptedModel([calls(use("slow_read", "a", ms=1)), calls(use("slow_read", "b", ms=1)),
                           calls(use("slow_read", "c", ms=1)), "done", text("<summary>a b c</summary>")])
    agent = Agent(model_client=model, tools=[slow_read], clock=FakeClock(),
                  permissions=PermissionRules(allow=("slow_read",)))
    async with agent.open() as run:
        await run.prompt("go")
        before = len(run.session.history)
        assert await run.compact()
    history = run.session.history
    assert "a b c" in history[0].text and len(history) < before
    assert history[-1].text == "done"
    model.assert_done()
