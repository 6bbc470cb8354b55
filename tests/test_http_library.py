"""Which HTTP library carries the model calls: httpx by default, aiohttp when asked
(`LOOPWRIGHT_HTTP=aiohttp` or `http="aiohttp"`). The adapters' behaviour on every status and
failure runs on both (the `http_library` fixture in conftest.py); these tests are about the choice
itself and what only a shared aiohttp client does."""

from __future__ import annotations

import gc
import json
import logging
import subprocess
import sys
import warnings

import anyio
import pytest

from loopwright.core.errors import UsageError
from loopwright.core.types import BlockDelta, Message, ModelRequest
from loopwright.providers.anthropic import AnthropicModel
from loopwright.providers.openai import OpenAIChatModel
from loopwright.testing import Simulator

REQUEST = ModelRequest(model="claude-sonnet-5", messages=(Message.user("hi"),), max_tokens=1000)


async def text_of(model: AnthropicModel) -> str:
    return "".join([e.delta["text"] async for e in model.stream(REQUEST) if isinstance(e, BlockDelta)])


def test_an_unknown_library_is_a_usage_error_naming_the_setting_and_the_choices(monkeypatch) -> None:
    monkeypatch.setenv("LOOPWRIGHT_HTTP", "curl")
    with pytest.raises(UsageError, match=r"LOOPWRIGHT_HTTP='curl': expected one of httpx, aiohttp"):
        AnthropicModel(api_key="k", base_url="http://127.0.0.1:9")
    monkeypatch.delenv("LOOPWRIGHT_HTTP")
    with pytest.raises(UsageError, match=r"http='requests': expected one of httpx, aiohttp"):
        OpenAIChatModel(base_url="http://127.0.0.1:9/v1", http="requests")


CALL_AND_SAY_WHAT_WAS_IMPORTED = """
import json, sys, anyio
from loopwright.core.types import BlockDelta, Message, ModelRequest
from loopwright.providers.anthropic import AnthropicModel

async def main():
    model = AnthropicModel(api_key="k", base_url=sys.argv[1])
    request = ModelRequest(model="m", messages=(Message.user("hi"),), max_tokens=100)
    text = "".join([e.delta["text"] async for e in model.stream(request) if isinstance(e, BlockDelta)])
    await model.aclose()
    return text

text = anyio.run(main)
print(json.dumps({"text": text, "aiohttp": "aiohttp.client" in sys.modules}))
"""


@pytest.mark.parametrize("library", ["", "httpx", "aiohttp"])
def test_the_chosen_library_carries_the_call_and_the_default_never_imports_aiohttp(library) -> None:
    with Simulator([{"text": "carried"}]) as sim:
        env = {k: v for k, v in __import__("os").environ.items() if k != "LOOPWRIGHT_HTTP"}
        if library:
            env["LOOPWRIGHT_HTTP"] = library
        out = subprocess.run([sys.executable, "-c", CALL_AND_SAY_WHAT_WAS_IMPORTED, sim.base_url], env=env,
                             capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    said = json.loads(out.stdout)
    assert said == {"text": "carried", "aiohttp": library == "aiohttp"}


def test_under_trio_an_aiohttp_model_calls_through_httpx() -> None:
    pytest.importorskip("trio")
    with Simulator([{"text": "on trio"}]) as sim:
        model = AnthropicModel(api_key="k", base_url=sim.base_url, http="aiohttp")

        async def once() -> str:
            try:
                return await text_of(model)
            finally:
                await model.aclose()

        assert anyio.run(once, backend="trio") == "on trio"


def test_successive_event_loops_reuse_nothing_and_nothing_is_reported_unclosed(caplog) -> None:
    """A sync wrapper runs a loop per call: the session of an ended loop is dropped without
    aiohttp's "Unclosed client session" / "Unclosed connector" reports, and so is that of a
    client its owner never closed."""
    with Simulator([{"text": "one"}, {"text": "two"}, {"text": "three"}, {"text": "four"}]) as sim:
        model = AnthropicModel(api_key="k", base_url=sim.base_url, http="aiohttp")
        with caplog.at_level(logging.DEBUG), warnings.catch_warnings(record=True) as seen:
            warnings.simplefilter("always")
            assert anyio.run(text_of, model) == "one"
            assert anyio.run(text_of, model) == "two"

            async def last() -> str:
                try:
                    return await text_of(model)
                finally:
                    await model.aclose()

            assert anyio.run(last) == "three"
            # and a client never closed, dropped after its loop ended
            dropped = AnthropicModel(api_key="k", base_url=sim.base_url, http="aiohttp")
            assert anyio.run(text_of, dropped) == "four"
            del dropped
            gc.collect()
    unclosed = [str(w.message) for w in seen if "Unclosed" in str(w.message)]
    unclosed += [r.getMessage() for r in caplog.records if "Unclosed" in r.getMessage()]
    assert unclosed == []


@pytest.mark.anyio
async def test_one_aiohttp_client_serves_many_loops_at_once() -> None:
    with Simulator([{"text": "together", "repeat": -1}], delay=0.2) as sim:
        model = AnthropicModel(api_key="k", base_url=sim.base_url, http="aiohttp")
        texts: list[str] = []

        async def one() -> None:
            texts.append(await text_of(model))

        try:
            async with anyio.create_task_group() as group:
                for _ in range(300):
                    group.start_soon(one)
        finally:
            await model.aclose()
    assert texts == ["together"] * 300
    assert len(sim.message_requests) == 300


def test_an_abandoned_stream_gives_its_connection_back(monkeypatch) -> None:
    """With room for two connections, three streams abandoned after their first event and two
    calls after them all finish, and asyncio's debug mode reports nothing left unclosed."""
    from loopwright.providers import aiohttp_transport

    monkeypatch.setattr(aiohttp_transport, "MAX_CONNECTIONS", 2)
    with Simulator([{"text": "after", "repeat": -1}]) as sim:
        model = AnthropicModel(api_key="k", base_url=sim.base_url, http="aiohttp")

        async def main() -> list[str]:
            try:
                with anyio.fail_after(20):
                    for _ in range(3):
                        stream = model.stream(REQUEST)
                        await stream.__anext__()
                        await stream.aclose()
                    return [await text_of(model), await text_of(model)]
            finally:
                await model.aclose()

        with warnings.catch_warnings(record=True) as seen:
            warnings.simplefilter("always")
            assert anyio.run(main, backend_options={"debug": True}) == ["after", "after"]
            gc.collect()
    assert [str(w.message) for w in seen if "Unclosed" in str(w.message)] == []
