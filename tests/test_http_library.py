"""Which HTTP library carries the model calls: httpx by default, aiohttp when asked
(`LOOPWRIGHT_HTTP=aiohttp` or `http="aiohttp"`). The adapters' behaviour on every status and
failure runs on both (the `http_library` fixture in conftest.py); these tests are about the choice
itself, what a shared client does on each, and the proxy path."""

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


async def texts_at_once(model: AnthropicModel, loops: int) -> list[str]:
    """`loops` calls started together on one client, their texts; then the client closed."""
    texts: list[str] = []

    async def one() -> None:
        texts.append(await text_of(model))

    try:
        async with anyio.create_task_group() as group:
            for _ in range(loops):
                group.start_soon(one)
    finally:
        await model.aclose()
    return texts


async def last_text_of(model: AnthropicModel) -> str:
    """`text_of`, then the client closed."""
    try:
        return await text_of(model)
    finally:
        await model.aclose()


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
            assert anyio.run(last_text_of, model) == "three"
            # and a client never closed, dropped after its loop ended
            dropped = AnthropicModel(api_key="k", base_url=sim.base_url, http="aiohttp")
            assert anyio.run(text_of, dropped) == "four"
            del dropped
            gc.collect()
    unclosed = [str(w.message) for w in seen if "Unclosed" in str(w.message)]
    unclosed += [r.getMessage() for r in caplog.records if "Unclosed" in r.getMessage()]
    assert unclosed == []


@pytest.mark.anyio
@pytest.mark.parametrize("library", ["httpx", "aiohttp"])
async def test_one_client_serves_many_loops_at_once(library) -> None:
    with Simulator([{"text": "together", "repeat": -1}], delay=0.2) as sim:
        texts = await texts_at_once(AnthropicModel(api_key="k", base_url=sim.base_url, http=library), 300)
    assert texts == ["together"] * 300
    assert len(sim.message_requests) == 300


@pytest.mark.anyio
async def test_past_the_connection_limit_calls_wait_for_a_freed_connection(monkeypatch) -> None:
    """httpx's path, with room for two connections: six loops at once all finish, over two
    connections (each reused once freed), never more than two calls in flight."""
    from loopwright.providers import http

    monkeypatch.setattr(http, "MAX_CONNECTIONS", 2)
    with Simulator([{"text": "in turn", "repeat": -1}], delay=0.1) as sim:
        with anyio.fail_after(20):
            texts = await texts_at_once(AnthropicModel(api_key="k", base_url=sim.base_url), 6)
        assert texts == ["in turn"] * 6
        assert sim.connections == 2
        assert sim.peak_in_flight == 2


@pytest.mark.anyio
async def test_a_call_that_finds_no_free_connection_in_the_pool_timeout_fails_as_such() -> None:
    import httpx

    from loopwright.providers.http import Connections

    with Simulator([{"text": "held", "repeat": -1}]) as sim:
        import httpcore

        origin = httpcore.URL(sim.base_url).origin
        pool = Connections(verify=False, most=1)
        held = await pool.take(origin, b"origin", None)
        try:
            with pytest.raises(httpx.PoolTimeout):
                await pool.take(origin, b"origin", 0.2)
        finally:
            await pool.give_back(held, b"origin")
            await pool.aclose()


@pytest.mark.parametrize("library", ["httpx", "aiohttp"])
def test_an_abandoned_stream_gives_its_connection_back(monkeypatch, library) -> None:
    """With room for two connections, three streams abandoned after their first event and two
    calls after them all finish, and asyncio's debug mode reports nothing left unclosed."""
    from loopwright.providers import aiohttp_transport, http

    monkeypatch.setattr(aiohttp_transport, "MAX_CONNECTIONS", 2)
    monkeypatch.setattr(http, "MAX_CONNECTIONS", 2)
    with Simulator([{"text": "after", "repeat": -1}]) as sim:
        model = AnthropicModel(api_key="k", base_url=sim.base_url, http=library)

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


class ForwardProxy:
    """An HTTP forward proxy on 127.0.0.1 that serves one request per connection: it records the
    request line (absolute form), passes the request on to its origin and the answer back."""

    def __init__(self) -> None:
        import socket
        import threading

        self.lines: list[str] = []
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self.listener.getsockname()[1]}"
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        import threading

        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            threading.Thread(target=self._one, args=(client,), daemon=True).start()

    def _one(self, client) -> None:
        import socket
        from urllib.parse import urlsplit

        with client:
            data = b""
            while b"\r\n\r\n" not in data:
                data += client.recv(65536)
            head, body = data.split(b"\r\n\r\n", 1)
            line, *fields = head.decode("latin-1").split("\r\n")
            length = next((int(f.split(":", 1)[1]) for f in fields if f.lower().startswith("content-length:")), 0)
            while len(body) < length:
                body += client.recv(65536)
            self.lines.append(line)
            method, target, version = line.split(" ")
            url = urlsplit(target)
            kept = [f for f in fields if f.split(":", 1)[0].lower() not in ("connection", "proxy-connection")]
            with socket.create_connection((url.hostname, url.port)) as upstream:
                upstream.sendall("\r\n".join([f"{method} {url.path} {version}", *kept, "Connection: close", "", ""])
                                 .encode("latin-1") + body)
                while chunk := upstream.recv(65536):
                    client.sendall(chunk)

    def close(self) -> None:
        self.listener.close()


@pytest.mark.parametrize("library", ["httpx", "aiohttp"])
def test_with_a_proxy_set_the_call_goes_through_it(monkeypatch, library) -> None:
    """httpx's client carries the call then (it applies the proxy variables), whichever library
    was chosen."""
    for name in ("NO_PROXY", "no_proxy", "ALL_PROXY", "all_proxy", "HTTPS_PROXY", "https_proxy"):
        monkeypatch.delenv(name, raising=False)
    proxy = ForwardProxy()
    try:
        monkeypatch.setenv("HTTP_PROXY", proxy.url)
        with Simulator([{"text": "proxied", "repeat": -1}]) as sim:
            model = AnthropicModel(api_key="k", base_url=sim.base_url, http=library)
            assert anyio.run(last_text_of, model) == "proxied"
            assert proxy.lines == [f"POST {sim.base_url}/v1/messages HTTP/1.1"]
            assert len(sim.message_requests) == 1
    finally:
        proxy.close()
